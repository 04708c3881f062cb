"""The history models: the live-name constraint and the indexes the UI and API rely on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from analyses.models import Analysis, Evaluation
from tests.analyses.history import record_evaluation

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _analysis(uid: str, *, deleted_at: datetime | None = None) -> Analysis:
    return Analysis.objects.create(
        namespace="shop", name="checkout", uid=uid, created_at=NOW, deleted_at=deleted_at
    )


def _plan(queryset: QuerySet[Any]) -> list[str]:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return [row[3] for row in cursor.fetchall()]


@pytest.fixture
def history() -> Analysis:
    """Two analyses with interleaved history, so a plan cannot get away with a full scan."""
    analysis = _analysis("uid-1")
    other = Analysis.objects.create(namespace="shop", name="cart", uid="uid-2", created_at=NOW)
    for minute in range(40):
        record_evaluation(analysis, NOW - timedelta(minutes=minute))
        record_evaluation(other, NOW - timedelta(minutes=minute))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return analysis


def test_only_one_live_row_per_namespace_and_name() -> None:
    _analysis("uid-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        _analysis("uid-2")


def test_deleted_rows_do_not_block_a_recreated_resource() -> None:
    _analysis("uid-1", deleted_at=NOW)
    _analysis("uid-2", deleted_at=NOW + timedelta(hours=1))
    _analysis("uid-3")
    assert Analysis.objects.filter(namespace="shop", name="checkout").count() == 3


def test_uid_is_unique_even_among_deleted_rows() -> None:
    _analysis("uid-1", deleted_at=NOW)
    with pytest.raises(IntegrityError), transaction.atomic():
        Analysis.objects.create(namespace="other", name="x", uid="uid-1", created_at=NOW)


def test_newest_50_evaluations_of_one_analysis_walk_the_index_without_sorting(
    history: Analysis,
) -> None:
    page = Evaluation.objects.filter(analysis=history).order_by("-started_at", "-id")[:50]
    plan = _plan(page)
    assert any("USING INDEX evaluation_newest (analysis_id=?)" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
    assert len(list(page)) == 40


def test_next_cursor_page_uses_the_same_index(history: Analysis) -> None:
    cursor_at = NOW - timedelta(minutes=10)
    page = Evaluation.objects.filter(analysis=history, started_at__lt=cursor_at).order_by(
        "-started_at", "-id"
    )[:51]
    plan = _plan(page)
    assert any(
        "USING INDEX evaluation_newest (analysis_id=? AND started_at<?)" in step for step in plan
    ), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
    assert page[0].started_at == NOW - timedelta(minutes=11)


def test_evaluations_since_t_use_the_started_at_index(history: Analysis) -> None:
    since = NOW - timedelta(minutes=5)
    recent = Evaluation.objects.filter(started_at__gte=since).order_by()
    plan = _plan(recent)
    assert any("USING INDEX evaluation_started_at (started_at>?)" in step for step in plan), plan
    assert recent.count() == 12


def test_pruning_finds_old_evaluations_by_index(history: Analysis) -> None:
    old = Evaluation.objects.filter(started_at__lt=NOW - timedelta(minutes=30)).values("pk")
    plan = _plan(old)
    assert any("evaluation_started_at (started_at<?)" in step for step in plan), plan


def test_dispatcher_finds_due_live_analyses_by_index() -> None:
    soon = Analysis.objects.create(
        namespace="a", name="soon", uid="1", created_at=NOW, next_due_at=NOW
    )
    late = Analysis.objects.create(
        namespace="a", name="late", uid="2", created_at=NOW, next_due_at=NOW - timedelta(seconds=3)
    )
    Analysis.objects.create(
        namespace="a", name="later", uid="3", created_at=NOW, next_due_at=NOW + timedelta(seconds=1)
    )
    Analysis.objects.create(
        namespace="a", name="gone", uid="4", created_at=NOW, next_due_at=NOW, deleted_at=NOW
    )

    due = Analysis.objects.due(NOW)

    assert list(due) == [late, soon]
    plan = _plan(due)
    assert any("analyses_analysis_next_due_at" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


def test_pruning_finds_long_deleted_analyses_by_index() -> None:
    _analysis("uid-1", deleted_at=NOW - timedelta(days=40))
    _analysis("uid-2")
    old = Analysis.objects.filter(deleted_at__lt=NOW - timedelta(days=30)).order_by().values("pk")
    assert any("analysis_deleted_at (deleted_at<?)" in step for step in _plan(old))
    assert old.count() == 1


def test_a_page_of_live_analyses_in_default_order_needs_no_sort() -> None:
    page = Analysis.objects.live()[:50]
    plan = _plan(page)
    assert any("USING INDEX" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
