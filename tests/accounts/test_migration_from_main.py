"""A database made before API tokens and namespace grants moved to ``accounts`` keeps working.

The database is built as the last release before the move built it: every app migrated to its
migrations of that time (``analyses`` up to 0007, no ``accounts``), then Django's post-migrate
signal with that state's models, which is what made the content types and permissions (under
the app label ``analyses``). Rows are written through that state's models: a user with an API
token and a model permission on tokens, a group with a namespace grant, an analysis with one
evaluation. Then the database is migrated to today's migrations and read back through today's
models: the token still authenticates, the grant still allows, the permission is still held,
the history is all there, and no table was created or dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.management.sql import emit_post_migrate_signal
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.migrations.executor import MigrationExecutor

from accounts import access, tokens
from accounts.models import ApiToken, NamespaceGrant
from analyses.models import Analysis, Evaluation, MetricResult

pytestmark = pytest.mark.django_db(transaction=True)

# The analyses app's last migration before the move; accounts did not exist.
BEFORE_THE_MOVE = ("analyses", "0007_history_values_as_text")
# The move itself; later migrations (new tables of their own) are not part of it.
THE_MOVE = ("analyses", "0008_tokens_and_grants_to_accounts")
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
PLAINTEXT = "rs_" + "ab" * 32


def _migrate(targets: list[tuple[str, str | None]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    applied = [target for target in targets if target[1] is not None]
    return executor.loader.project_state(applied).apps


def _leaves() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _before_the_move() -> list[tuple[str, str | None]]:
    others = [node for node in _leaves() if node[0] not in ("analyses", "accounts")]
    return [*others, BEFORE_THE_MOVE, ("accounts", None)]


def _after_the_move() -> list[tuple[str, str | None]]:
    others = [node for node in _leaves() if node[0] not in ("analyses", "accounts")]
    accounts = [node for node in _leaves() if node[0] == "accounts"]
    return [*others, THE_MOVE, *accounts]


@pytest.fixture
def old_state() -> Iterator[Any]:
    """Migrate the test database back to before the move, as that release left it."""
    today = _leaves()
    try:
        state = _migrate(_before_the_move())
        # The content types today's post-migrate made are not the old release's: start over.
        ContentType.objects.filter(app_label__in=("accounts", "analyses")).delete()
        ContentType.objects.clear_cache()
        emit_post_migrate_signal(0, False, DEFAULT_DB_ALIAS, apps=state, plan=[])
        yield state
    finally:
        _migrate(today)
        ContentType.objects.clear_cache()


def test_tokens_grants_permissions_and_history_survive_the_move(old_state: Any) -> None:
    old_user = old_state.get_model("auth", "User")
    old_group = old_state.get_model("auth", "Group")
    old_permission = old_state.get_model("auth", "Permission")
    old_token = old_state.get_model("analyses", "ApiToken")
    old_grant = old_state.get_model("analyses", "NamespaceGrant")
    old_analysis = old_state.get_model("analyses", "Analysis")
    old_evaluation = old_state.get_model("analyses", "Evaluation")
    old_result = old_state.get_model("analyses", "MetricResult")

    user = old_user.objects.create(username="ci", is_staff=True, is_active=True)
    team = old_group.objects.create(name="payments")
    user.groups.add(team)
    view_tokens = old_permission.objects.get(
        codename="view_apitoken", content_type__app_label="analyses"
    )
    user.user_permissions.add(view_tokens)
    token = old_token.objects.create(
        user=user,
        name="pipeline",
        prefix=PLAINTEXT[:11],
        digest=tokens.digest(PLAINTEXT),
        created_at=NOW - timedelta(days=1),
        expires_at=NOW + timedelta(days=30),
    )
    grant = old_grant.objects.create(group=team, namespace="shop", can_edit=True)
    analysis = old_analysis.objects.create(
        uid="uid-checkout",
        namespace="shop",
        name="checkout",
        resource_version="7",
        generation=2,
        target_name="checkout",
        created_at=NOW - timedelta(hours=2),
    )
    evaluation = old_evaluation.objects.create(
        analysis=analysis,
        started_at=NOW - timedelta(minutes=1),
        finished_at=NOW - timedelta(minutes=1) + timedelta(seconds=1),
        duration_seconds=1.0,
        generation=2,
        outcome="Fail",
        failures_after=1,
    )
    old_result.objects.create(
        evaluation=evaluation,
        name="p99-latency",
        value=0.41,
        value_text="0.41",
        max_value=0.25,
        verdict="Fail",
        message="p99-latency 0.41 is above maxValue 0.25",
    )
    token_type = ContentType.objects.get(app_label="analyses", model="apitoken").pk
    tables_before = set(connection.introspection.table_names())

    _migrate(_after_the_move())
    ContentType.objects.clear_cache()

    # The rows are read through today's models, in today's app.
    migrated = ApiToken.objects.get()
    assert (migrated.pk, migrated.name, migrated.user_id) == (token.pk, "pipeline", user.pk)
    authenticated = tokens.check(PLAINTEXT, now=NOW)
    assert authenticated is not None and authenticated.user.username == "ci"
    assert NamespaceGrant.objects.get().pk == grant.pk
    person = User.objects.get(username="ci")
    assert access.allows(person, access.Verb.UPDATE, "shop")
    assert not access.allows(person, access.Verb.UPDATE, "billing")
    # The permission row kept its content type, which now names the accounts app.
    assert ContentType.objects.get(app_label="accounts", model="apitoken").pk == token_type
    assert not ContentType.objects.filter(app_label="analyses", model="apitoken").exists()
    assert person.has_perm("accounts.view_apitoken")
    assert not person.has_perm("accounts.change_apitoken")
    # The analysis and its history, untouched.
    row = Analysis.objects.get()
    assert (row.namespace, row.name, row.generation) == ("shop", "checkout", 2)
    # Only the columns of the move's time: later migrations add columns of their own.
    history, outcome = Evaluation.objects.filter(analysis=row).values_list("pk", "outcome").get()
    assert outcome == "Fail"
    kept = MetricResult.objects.filter(evaluation=history).values_list("value_text", flat=True)
    assert kept.get() == "0.41"
    # Nothing was created, renamed or dropped.
    assert set(connection.introspection.table_names()) == tables_before

    # Then today's migrations (the ratio's bounds of a sequential metric's history rows, 0010;
    # each attempt's due time, 0011): the old rows read through today's models whole, with no
    # bounds and no due time.
    _migrate(_leaves())
    old = MetricResult.objects.get(evaluation=history)
    assert (old.value_text, old.ratio_lower, old.ratio_upper) == ("0.41", None, None)
    assert Evaluation.objects.get(pk=history).due_at is None
