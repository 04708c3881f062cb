"""The mirror adapter: idempotent upserts, metric rows, deletion, recreation, resync, pruning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analyses import mirror
from analyses.models import Analysis, AnalysisMetric, Evaluation, MetricResult
from sentinel_core.resource import MalformedResource
from tests.analyses.history import record_evaluation
from tests.analyses.resources import DEFAULT_METRICS, paused_status, resource

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)


def _metrics(analysis: Analysis) -> list[tuple[int, str, str, float]]:
    return list(analysis.metrics.values_list("position", "name", "query", "max_value"))


def test_new_resource_is_mirrored_with_denormalised_columns_and_due_now() -> None:
    obj = resource(interval="1m30s", failure_limit=5, dry_run=True, status=paused_status(4))
    row, written = mirror.upsert_from_resource(obj, now=NOW)

    assert written
    row.refresh_from_db()
    assert (row.namespace, row.name, row.uid) == ("shop", "checkout", "uid-1")
    assert (row.target_name, row.interval_seconds, row.failure_limit, row.dry_run) == (
        "checkout",
        90.0,
        5,
        True,
    )
    assert (row.last_verdict, row.failures, row.paused, row.ready, row.ready_reason) == (
        "Fail",
        4,
        True,
        True,
        "Evaluating",
    )
    assert row.last_evaluation_at == datetime(2026, 11, 29, 10, 5, tzinfo=UTC)
    assert row.created_at == datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    assert (row.resource_version, row.generation, row.observed_generation) == ("100", 1, 1)
    assert row.spec == obj["spec"] and row.status == obj["status"]
    assert row.next_due_at == NOW and row.deleted_at is None
    assert _metrics(row) == [
        (0, "p99-latency", "histogram_quantile(0.99, x)", 0.25),
        (1, "error-rate", "sum(rate(errors[1m]))", 0.01),
    ]


def test_same_resource_version_writes_nothing() -> None:
    row, _ = mirror.upsert_from_resource(resource(), now=NOW)
    # A change made meanwhile (by the dispatcher) must survive a repeated event.
    Analysis.objects.filter(pk=row.pk).update(next_due_at=LATER, backoff_attempt=2)

    again, written = mirror.upsert_from_resource(resource(), now=LATER + timedelta(hours=1))

    assert not written
    assert again.pk == row.pk
    again.refresh_from_db()
    assert (again.next_due_at, again.backoff_attempt, again.mirrored_at) == (LATER, 2, NOW)
    assert Analysis.objects.count() == 1 and AnalysisMetric.objects.count() == 2


def test_status_only_change_updates_columns_but_not_the_schedule() -> None:
    row, _ = mirror.upsert_from_resource(resource(), now=NOW)
    Analysis.objects.filter(pk=row.pk).update(next_due_at=LATER)

    updated, written = mirror.upsert_from_resource(
        resource(resource_version="101", status=paused_status(3)), now=NOW + timedelta(seconds=1)
    )

    assert written
    updated.refresh_from_db()
    assert (updated.resource_version, updated.paused, updated.failures) == ("101", True, 3)
    assert updated.next_due_at == LATER


def test_metric_rows_follow_spec_edits_and_the_edit_is_due_at_once() -> None:
    row, _ = mirror.upsert_from_resource(resource(), now=NOW)
    Analysis.objects.filter(pk=row.pk).update(next_due_at=LATER)
    kept_pk = row.metrics.get(name="error-rate").pk
    edited = resource(
        resource_version="105",
        generation=2,
        metrics=[
            {"name": "error-rate", "query": "sum(rate(errors[5m]))", "maxValue": 0.02},
            {"name": "saturation", "query": "max(cpu)", "maxValue": 0.9},
        ],
    )

    mirror.upsert_from_resource(edited, now=NOW + timedelta(seconds=10))

    row.refresh_from_db()
    assert _metrics(row) == [
        (0, "error-rate", "sum(rate(errors[5m]))", 0.02),
        (1, "saturation", "max(cpu)", 0.9),
    ]
    assert row.metrics.get(name="error-rate").pk == kept_pk
    assert row.generation == 2
    assert row.next_due_at == NOW + timedelta(seconds=10)


def test_deletion_marks_the_row_drops_it_from_dispatch_and_keeps_history() -> None:
    row, _ = mirror.upsert_from_resource(resource(), now=NOW)
    record_evaluation(row, NOW)

    mirror.mark_deleted("shop", "checkout", "uid-1", now=LATER)

    row.refresh_from_db()
    assert row.deleted_at == LATER and row.next_due_at is None
    assert row.evaluations.count() == 1
    assert MetricResult.objects.filter(evaluation__analysis=row).count() == 2
    assert str(row) == "shop/checkout (deleted)"


def test_deletion_of_another_uid_leaves_the_live_row_alone() -> None:
    mirror.upsert_from_resource(resource(), now=NOW)
    mirror.mark_deleted("shop", "checkout", "uid-of-an-older-incarnation", now=LATER)
    assert Analysis.objects.get(uid="uid-1").deleted_at is None


def test_recreated_resource_gets_a_new_row_and_the_old_keeps_its_history() -> None:
    old, _ = mirror.upsert_from_resource(resource(), now=NOW)
    record_evaluation(old, NOW)
    mirror.mark_deleted("shop", "checkout", "uid-1", now=LATER)

    new, written = mirror.upsert_from_resource(
        resource(uid="uid-2", resource_version="300"), now=LATER + timedelta(seconds=1)
    )

    assert written and new.pk != old.pk
    old.refresh_from_db()
    assert old.deleted_at == LATER and old.evaluations.count() == 1
    assert new.deleted_at is None and new.evaluations.count() == 0
    assert new.next_due_at == LATER + timedelta(seconds=1)
    assert _metrics(new) == _metrics(old)


def test_recreation_seen_without_the_delete_event_marks_the_old_row_deleted() -> None:
    old, _ = mirror.upsert_from_resource(resource(), now=NOW)

    new, _ = mirror.upsert_from_resource(resource(uid="uid-2", resource_version="300"), now=LATER)

    old.refresh_from_db()
    assert old.deleted_at == LATER and old.next_due_at is None
    assert Analysis.objects.filter(deleted_at__isnull=True).get().pk == new.pk


def test_resync_upserts_and_marks_the_missing_ones_deleted() -> None:
    mirror.upsert_from_resource(resource("a", uid="a", resource_version="1"), now=NOW)
    mirror.upsert_from_resource(resource("b", uid="b", resource_version="2"), now=NOW)
    mirror.upsert_from_resource(resource("c", uid="c", resource_version="3"), now=NOW)
    listing = [
        resource("a", uid="a", resource_version="1"),
        resource("b", uid="b", resource_version="7", status=paused_status()),
        resource("d", uid="d", resource_version="8"),
    ]

    result = mirror.sync_all(listing, listed_at=LATER, now=LATER)

    assert result == mirror.SyncResult(created=1, updated=1, unchanged=1, deleted=1)
    live = Analysis.objects.filter(deleted_at__isnull=True)
    assert sorted(live.values_list("name", flat=True)) == ["a", "b", "d"]
    gone = Analysis.objects.get(uid="c")
    assert gone.deleted_at == LATER and gone.next_due_at is None
    assert Analysis.objects.get(uid="b").paused


def test_a_resync_of_what_the_mirror_holds_costs_two_reads_whatever_the_count() -> None:
    listing = [resource(f"a{i}", uid=f"u{i}", resource_version=str(i)) for i in range(30)]
    for obj in listing:
        mirror.upsert_from_resource(obj, now=NOW)

    with CaptureQueriesContext(connection) as queries:
        result = mirror.sync_all(listing, listed_at=LATER, now=LATER)

    assert result == mirror.SyncResult(created=0, updated=0, unchanged=30, deleted=0)
    # The live rows' versions, then the live rows the list did not hold: no read per object.
    assert len(queries) == 2, [q["sql"] for q in queries]


def test_resync_only_deletes_in_the_namespaces_it_listed() -> None:
    mirror.upsert_from_resource(resource("a", namespace="team-a", uid="a"), now=NOW)
    mirror.upsert_from_resource(resource("b", namespace="team-b", uid="b"), now=NOW)

    result = mirror.sync_all([], listed_at=LATER, namespaces=["team-a"], now=LATER)

    assert result.deleted == 1
    assert Analysis.objects.get(uid="a").deleted_at == LATER
    assert Analysis.objects.get(uid="b").deleted_at is None


def test_resync_with_a_list_older_than_the_watch_undoes_nothing() -> None:
    listed_at = NOW
    # After the list was taken, the watch saw "fresh" created and "gone" deleted.
    mirror.upsert_from_resource(resource("gone", uid="gone"), now=NOW - timedelta(minutes=1))
    mirror.upsert_from_resource(resource("fresh", uid="fresh"), now=NOW + timedelta(seconds=1))
    mirror.mark_deleted("shop", "gone", "gone", now=NOW + timedelta(seconds=2))

    result = mirror.sync_all(
        [resource("gone", uid="gone")], listed_at=listed_at, now=NOW + timedelta(seconds=3)
    )

    assert result.deleted == 0 and result.created == 0
    assert Analysis.objects.get(uid="fresh").deleted_at is None
    assert Analysis.objects.get(uid="gone").deleted_at == NOW + timedelta(seconds=2)


def test_prune_deletes_only_history_and_deleted_analyses_older_than_the_cutoff() -> None:
    cutoff = NOW - timedelta(days=30)
    live, _ = mirror.upsert_from_resource(resource("live", uid="live"), now=NOW)
    old_evaluation = record_evaluation(live, cutoff - timedelta(seconds=1))
    recent_evaluation = record_evaluation(live, cutoff + timedelta(seconds=1))
    long_gone, _ = mirror.upsert_from_resource(resource("long-gone", uid="lg"), now=NOW)
    record_evaluation(long_gone, cutoff - timedelta(days=2))
    mirror.mark_deleted("shop", "long-gone", "lg", now=cutoff - timedelta(days=1))
    recently_gone, _ = mirror.upsert_from_resource(resource("recent", uid="rg"), now=NOW)
    mirror.mark_deleted("shop", "recent", "rg", now=cutoff + timedelta(days=1))

    removed = mirror.prune_history(cutoff)

    # Two old evaluations and one long-deleted analysis.
    assert removed == 3
    assert set(Evaluation.objects.values_list("pk", flat=True)) == {recent_evaluation.pk}
    assert not MetricResult.objects.filter(evaluation_id=old_evaluation.pk).exists()
    assert MetricResult.objects.filter(evaluation=recent_evaluation).count() == 2
    assert set(Analysis.objects.values_list("uid", flat=True)) == {"live", "rg"}
    assert not AnalysisMetric.objects.filter(analysis_id=long_gone.pk).exists()
    assert recently_gone.pk in Analysis.objects.values_list("pk", flat=True)
    assert mirror.prune_history(cutoff) == 0


def test_prune_works_through_more_rows_than_one_batch() -> None:
    row, _ = mirror.upsert_from_resource(resource(), now=NOW)
    start = NOW - timedelta(days=60)
    Evaluation.objects.bulk_create(
        Evaluation(
            analysis=row,
            started_at=start + timedelta(seconds=i),
            finished_at=start + timedelta(seconds=i),
            outcome="Pass",
        )
        for i in range(1_234)
    )
    assert mirror.prune_history(NOW - timedelta(days=30)) == 1_234
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize(
    ("interval", "seconds"),
    [("5s", 5.0), ("1m30s", 90.0), ("1h2m3.5s", 3723.5), ("1500ms", 1.5), ("bogus", 30.0)],
)
def test_interval_is_stored_in_seconds(interval: str, seconds: float) -> None:
    row, _ = mirror.upsert_from_resource(resource(interval=interval), now=NOW)
    assert Analysis.objects.get(pk=row.pk).interval_seconds == seconds


def test_object_without_uid_is_refused() -> None:
    obj = resource()
    del obj["metadata"]["uid"]
    with pytest.raises(MalformedResource, match="uid"):
        mirror.upsert_from_resource(obj, now=NOW)
    assert not Analysis.objects.exists()


def test_relative_thresholds_fill_the_metric_columns_and_follow_edits() -> None:
    relative = {
        "name": "p99-vs-before",
        "query": "histogram_quantile(0.99, x)",
        "maxIncrease": {"percent": 20},
        "baseline": {"beforeRollout": True},
        "minSamples": {"query": "sum(increase(requests[5m]))", "min": 200},
    }
    obj = resource(metrics=[DEFAULT_METRICS[0], relative])
    obj["spec"]["failureWindow"] = 5
    row, _ = mirror.upsert_from_resource(obj, now=NOW)

    row.refresh_from_db()
    assert row.failure_window == 5
    fixed, judged = row.metrics.all()
    assert (fixed.max_value, fixed.max_increase_percent, fixed.baseline_offset) == (0.25, None, "")
    assert (judged.max_value, judged.max_increase_percent, judged.max_increase_absolute) == (
        None,
        20.0,
        None,
    )
    assert (judged.baseline_before_rollout, judged.baseline_offset) == (True, "")
    assert (judged.min_samples_query, judged.min_samples_min) == (
        "sum(increase(requests[5m]))",
        200,
    )
    assert [m.as_spec() for m in row.metrics.all()] == obj["spec"]["metrics"]

    # Edited: an absolute increase over the value an hour ago, no guard, consecutive counting.
    edited = {**relative, "maxIncrease": {"absolute": 0.05}, "baseline": {"offset": "1h"}}
    del edited["minSamples"]
    kept_pk = judged.pk
    mirror.upsert_from_resource(
        resource(resource_version="101", generation=2, metrics=[edited]), now=LATER
    )

    row.refresh_from_db()
    assert row.failure_window is None
    (judged,) = row.metrics.all()
    assert judged.pk == kept_pk
    assert (judged.max_increase_percent, judged.max_increase_absolute) == (None, 0.05)
    assert (judged.baseline_before_rollout, judged.baseline_offset) == (False, "1h")
    assert (judged.min_samples_query, judged.min_samples_min) == ("", None)
    assert judged.as_spec() == edited


def test_the_watch_tells_its_own_status_write_from_its_last_copy() -> None:
    def evaluated_at(
        when: str | None, *, version: str = "101", generation: int = 1, uid: str = "uid-1"
    ) -> dict[str, Any]:
        obj = resource(resource_version=version, generation=generation, uid=uid)
        if when is not None:
            obj["status"] = {**paused_status(), "lastEvaluationTime": when}
        return obj

    copy = evaluated_at("2026-11-29T10:05:00Z", version="100")
    later = "2026-11-29T10:05:30Z"
    labelled = evaluated_at(later)
    labelled["metadata"]["labels"] = {"team": "payments"}
    answers = {
        "newer_evaluation": mirror.adds_an_evaluation(copy, evaluated_at(later)),
        "first_evaluation": mirror.adds_an_evaluation(evaluated_at(None), evaluated_at(later)),
        "no_copy": mirror.adds_an_evaluation(None, evaluated_at(later)),
        "same_evaluation": mirror.adds_an_evaluation(copy, evaluated_at("2026-11-29T10:05:00Z")),
        "older_evaluation": mirror.adds_an_evaluation(copy, evaluated_at("2026-11-29T10:04:00Z")),
        "never_evaluated": mirror.adds_an_evaluation(copy, evaluated_at(None)),
        "other_generation": mirror.adds_an_evaluation(copy, evaluated_at(later, generation=2)),
        "other_uid": mirror.adds_an_evaluation(copy, evaluated_at(later, uid="uid-2")),
        "labels_changed": mirror.adds_an_evaluation(copy, labelled),
    }
    assert answers == {
        "newer_evaluation": True,
        "first_evaluation": True,
        "no_copy": False,
        "same_evaluation": False,
        "older_evaluation": False,
        "never_evaluated": False,
        "other_generation": False,
        "other_uid": False,
        "labels_changed": False,
    }
