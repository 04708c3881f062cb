"""The history on PostgreSQL, which, unlike SQLite, enforces column sizes.

Prometheus prints a sample without an exponent (``sentinel_core.values.format_value``), so a
value of 1e-300 or 1e300 is a 300-character text. The history keeps that text for display; on a
sized column PostgreSQL refused it and the attempt's whole bookkeeping failed (seen as
``tests/operator/test_runtime_reconcile.py::test_every_status_shape_is_accepted_by_the_cluster[…-tiny]``
on a PostgreSQL database). A real server (``testkit.databases.PostgresServer``), migrated with
``manage.py migrate``, then ``history.record_attempt`` run in a ``manage.py shell`` on it.
"""

from __future__ import annotations

import textwrap

import pytest

from testkit.databases import PostgresServer

SCRIPT = textwrap.dedent(
    """
    import json
    from datetime import UTC, datetime
    from analyses import mirror
    from analyses.models import MetricResult
    from sentinel_core.conditions import Outcome
    from sentinel_core.decision import HistoryEntry
    from sentinel_core.measurement import Measurement
    from sentinel_core.spec import parse_spec
    from sentinel_core.values import format_value
    from sentinel_operator import history
    from tests.analyses.resources import resource

    obj = resource("tiny", uid="uid-tiny")
    row, _ = mirror.upsert_from_resource(obj)
    spec = parse_spec(obj["spec"])
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    attempt = history.Attempt(now, now, 0.1, 1, 0)
    measured = [
        Measurement(metric=spec.metrics[0].name, value=1e-300, text=format_value(1e-300)),
        Measurement(metric=spec.metrics[1].name, value=1e300, text=format_value(1e300)),
    ]
    entry = HistoryEntry(outcome=Outcome.ERROR)
    evaluation = history.record_attempt(row.pk, attempt, entry, spec=spec, measurements=measured)
    kept = MetricResult.objects.filter(evaluation_id=evaluation).order_by("id")
    print(json.dumps([[m.value, m.value_text] for m in kept]))
    """
)


@pytest.mark.server
def test_a_value_printed_in_300_digits_is_kept_whole_on_postgres() -> None:
    with PostgresServer() as postgres:
        kept = postgres.printed_by(SCRIPT)
    tiny, huge = "0." + "0" * 299 + "1", "1" + "0" * 300
    assert kept == [[1e-300, tiny], [1e300, huge]]
