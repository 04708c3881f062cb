"""The backtest pump on the database: one job at a time, a silent worker's job failed, old ones
pruned (docs/backtest.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analyses.models import BacktestJob, BacktestState
from sentinel_operator.backtest_jobs import BacktestPump, run_job

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _job(**fields: object) -> BacktestJob:
    return BacktestJob.objects.create(
        namespace="shop", name="web", rollouts=10, max_duration_seconds=3600, **fields
    )


def test_one_job_at_a_time_and_a_silent_worker() -> None:
    queued: list[tuple[int, datetime]] = []
    pump = BacktestPump(
        now=lambda: NOW, is_leader=lambda: True, enqueue=lambda *a: queued.append(a)
    )
    first, second = _job(next_attempt_at=NOW), _job(next_attempt_at=NOW)
    assert pump.pump_due() == 1
    assert queued == [(first.pk, NOW + timedelta(seconds=30))]
    # Queued again only once its claim ran out; the second waits for it either way.
    assert pump.pump_due() == 0
    BacktestJob.objects.filter(pk=first.pk).update(state=BacktestState.RUNNING, heartbeat_at=NOW)
    assert pump.pump_due() == 0
    # Its worker died: two minutes without a heartbeat fail it, and the next one goes.
    BacktestJob.objects.filter(pk=first.pk).update(heartbeat_at=NOW - timedelta(minutes=3))
    assert pump.pump_due() == 1
    assert queued[-1][0] == second.pk
    failed = BacktestJob.objects.get(pk=first.pk)
    assert failed.state == BacktestState.FAILED and "ask again" in failed.error
    # A second copy of a task, or one with a stale claim, takes nothing.
    assert run_job(second.pk, (NOW - timedelta(seconds=1)).isoformat()) == "not taken"


def test_finished_jobs_are_pruned_after_a_week() -> None:
    old = _job(state=BacktestState.SUCCEEDED, finished_at=NOW - timedelta(days=8))
    recent = _job(state=BacktestState.SUCCEEDED, finished_at=NOW - timedelta(days=6))
    BacktestPump(now=lambda: NOW, is_leader=lambda: True, enqueue=lambda *a: None).pump_due()
    assert list(BacktestJob.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not BacktestJob.objects.filter(pk=old.pk).exists()


def test_a_job_the_queue_refuses_is_due_again_at_once() -> None:
    # The claim-and-queue step the notification pump shares (sentinel_db.claims.queue_claimed).
    def refuse(pk: int, claim: datetime) -> None:
        raise ConnectionError("broker down")

    job = _job(next_attempt_at=NOW)
    assert BacktestPump(now=lambda: NOW, is_leader=lambda: True, enqueue=refuse).pump_due() == 0
    assert BacktestJob.objects.get(pk=job.pk).next_attempt_at == NOW
    queued: list[tuple[int, datetime]] = []
    pump = BacktestPump(
        now=lambda: NOW, is_leader=lambda: True, enqueue=lambda *a: queued.append(a)
    )
    assert pump.pump_due() == 1
    assert queued == [(job.pk, NOW + timedelta(seconds=30))]
