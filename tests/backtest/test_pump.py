"""The backtest pump on the database: one job at a time, a silent worker's job failed, old ones
pruned (docs/backtest.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from analyses.models import BacktestJob, BacktestState
from sentinel_operator.backtest import Backtest, Cancelled, Result
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


class _Evaluations(Backtest):
    """Six stand-in evaluations: tells progress and asks ``cancelled`` as ``run`` does."""

    def __init__(self) -> None:
        self.asked = 0

    def run(self, *args: object, **kwargs: Any) -> Result:
        for done in range(6):
            self.asked += 1
            if kwargs["cancelled"]():
                raise Cancelled("the backtest was cancelled")
            kwargs["progress"](done, 6)
        return Result("shop", "web", (), {}, 0)


def test_a_stopping_operator_puts_its_running_job_back_in_the_queue() -> None:
    # The leader runs a job on a thread of its own; shutting down must not lose the job, nor
    # leave it "running" until the stale-heartbeat sweep fails it.
    job = _job(next_attempt_at=NOW)
    stopping = [False]
    replay = _Evaluations()

    def stop_after_two() -> bool:
        stopping[0] = stopping[0] or replay.asked > 2
        return stopping[0]

    claim = NOW.isoformat()
    assert run_job(job.pk, claim, backtest=replay, stopping=stop_after_two) == "queued"
    again = BacktestJob.objects.get(pk=job.pk)
    assert again.state == BacktestState.QUEUED and again.done == 0
    assert again.next_attempt_at is not None and again.started_at is None
    # The next leader takes it again and runs it to the end.
    assert run_job(job.pk, again.next_attempt_at.isoformat(), backtest=_Evaluations()) == (
        "succeeded"
    )
    assert BacktestJob.objects.get(pk=job.pk).state == BacktestState.SUCCEEDED


def test_a_cancel_asked_while_stopping_still_cancels() -> None:
    job = _job(next_attempt_at=NOW, cancel_requested=True)
    outcome = run_job(job.pk, NOW.isoformat(), backtest=_Evaluations(), stopping=lambda: True)
    assert outcome == "cancelled"
    assert BacktestJob.objects.get(pk=job.pk).state == BacktestState.CANCELLED
