"""Run the backtest jobs the REST API stores: the leader queues them and runs one at a time.

The web app may not queue django-q2 tasks (their signing key is the operator's alone,
docs/security.md), so a job is a ``BacktestJob`` row, ``queued`` with ``next_attempt_at`` set.
``sentinel_operator.runtime`` runs ``BacktestPump.run`` on the leader: each pass claims the next
due queued job with a compare-and-set on ``next_attempt_at`` (``sentinel_db.claims``, as the
notification pump does) and runs ``run_job`` on a thread of its own in the leader's process,
never on a django-q2 worker: a backtest is long and mostly waits on its per-provider rate
limit, and holding a worker for that left live evaluations one worker of two (measured,
docs/backtest.md). One job runs at a time. ``run_job`` takes the row with a compare-and-set on
its claim (a second copy finds nothing to do), replays through ``sentinel_operator.backtest``
with this process's reconciler's client and providers, stores its progress and a heartbeat
about once a second, stops between two evaluations when a cancel was asked, and stores the
result or the one-line error. An operator stopping puts its running job back in the queue (the
next leader runs it again from the start); the pump fails a running job whose heartbeat stopped
(its process died) and prunes finished jobs after ``BACKTEST_KEEP``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django import db

from analyses.models import BACKTEST_KEEP, BacktestJob, BacktestState
from sentinel_db import claims
from sentinel_operator import tasks
from sentinel_operator.backtest import Backtest, BacktestError, Cancelled, Replayer

log = logging.getLogger(__name__)

# How long a claimed job may wait for its thread to take it before the pump claims it again.
CLAIM = timedelta(seconds=30)
POLL_INTERVAL = 1.0
# A running job silent this long has lost its process.
STALE = timedelta(seconds=120)
# How long a stopping pump waits for its running job to put itself back in the queue.
_STOP_SECONDS = 5.0
# Progress, heartbeat and the cancel flag are written and read at most this often.
_REPORT_SECONDS = 1.0

Enqueue = Callable[[int, datetime], None]


def _now() -> datetime:
    return datetime.now(UTC)


class _Runner:
    """Run claimed jobs with ``run_job`` on threads of this process, told to stop with ``stop``."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.threads: list[threading.Thread] = []

    def __call__(self, pk: int, claim: datetime) -> None:
        def body() -> None:
            try:
                run_job(pk, claim.isoformat(), stopping=self.stop.is_set)
            finally:
                db.connections.close_all()

        self.threads = [t for t in self.threads if t.is_alive()]
        thread = threading.Thread(target=body, name=f"backtest-{pk}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def wait(self, timeout: float) -> None:
        """Give running jobs ``timeout`` seconds to reach their next evaluation and requeue."""
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


class BacktestPump:
    """Poll for queued backtest jobs, claim one at a time and run it.

    ``enqueue`` starts a claimed job (default: ``run_job`` on a thread of this process, told to
    stop when ``run``'s ``stop`` is set).
    """

    def __init__(
        self,
        *,
        now: Callable[[], datetime] = _now,
        is_leader: Callable[[], bool],
        enqueue: Enqueue | None = None,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._now = now
        self._is_leader = is_leader
        self._runner: _Runner | None = None
        self._enqueue: Enqueue = enqueue or self._start
        self.poll_interval = poll_interval
        self._pruned: datetime | None = None

    def _start(self, pk: int, claim: datetime) -> None:
        if self._runner is None:
            self._runner = _Runner(threading.Event())
        self._runner(pk, claim)

    def pump_due(self) -> int:
        """Fail stale jobs, prune old ones, queue the next due one; return how many queued."""
        now = self._now()
        BacktestJob.objects.filter(
            state=BacktestState.RUNNING, heartbeat_at__lt=now - STALE
        ).update(
            state=BacktestState.FAILED,
            error="the operator running it stopped; ask again",
            finished_at=now,
        )
        if self._pruned is None or now - self._pruned > timedelta(hours=1):
            BacktestJob.objects.filter(finished_at__lt=now - BACKTEST_KEEP).delete()
            self._pruned = now
        queued = BacktestJob.objects.filter(state=BacktestState.QUEUED)
        # One at a time: none running, none claimed and waiting for its thread.
        if (
            BacktestJob.objects.filter(state=BacktestState.RUNNING).exists()
            or queued.filter(next_attempt_at__gt=now).exists()
        ):
            return 0
        due = list(
            queued.filter(next_attempt_at__lte=now)
            .order_by("next_attempt_at", "pk")
            .values_list("pk", "next_attempt_at")[:1]
        )
        return claims.queue_claimed(
            queued,
            "next_attempt_at",
            due,
            now + CLAIM,
            self._enqueue,
            log=log,
            refused="backtest: cannot queue job %s",
        )

    def _one_pass(self) -> bool:
        self.pump_due()
        # One job at a time: never a backlog worth hurrying for.
        return False

    def run(self, stop: threading.Event) -> None:
        """Pump until ``stop`` is set, while this replica leads."""
        self._runner = _Runner(stop)
        claims.poll(
            stop,
            is_leader=self._is_leader,
            one_pass=self._one_pass,
            interval=self.poll_interval,
            log=log,
            failed="backtest: pump pass failed",
        )
        self._runner.wait(_STOP_SECONDS)


class _Report:
    """Store a job's progress and heartbeat, and read its cancel flag, about once a second."""

    def __init__(
        self,
        pk: int,
        stopping: Callable[[], bool],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pk = pk
        self._stopping = stopping
        self._monotonic = monotonic
        self._last = -_REPORT_SECONDS
        self._cancel = False

    def progress(self, done: int, total: int) -> None:
        if self._monotonic() - self._last < _REPORT_SECONDS and done < total:
            return
        self._last = self._monotonic()
        BacktestJob.objects.filter(pk=self.pk).update(done=done, total=total, heartbeat_at=_now())
        self._cancel = BacktestJob.objects.filter(pk=self.pk, cancel_requested=True).exists()

    def cancelled(self) -> bool:
        return self._cancel or self._stopping()

    def asked_to_cancel(self) -> bool:
        """Return whether someone asked to cancel the job (read now, not from the last report)."""
        return BacktestJob.objects.filter(pk=self.pk, cancel_requested=True).exists()


def run_job(
    pk: int,
    claim: str,
    *,
    backtest: Backtest | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> str:
    """Run backtest job ``pk`` if it still holds ``claim``; return what became of it.

    ``backtest`` replays it (default: with this process's reconciler's client and providers).
    When ``stopping()`` turns true (the operator is shutting down) the job stops between two
    evaluations and goes back to the queue, due at once, to be run again from the start.
    """
    now = _now()
    taken = BacktestJob.objects.filter(
        pk=pk, state=BacktestState.QUEUED, next_attempt_at=datetime.fromisoformat(claim)
    ).update(state=BacktestState.RUNNING, started_at=now, heartbeat_at=now, next_attempt_at=None)
    if not taken:
        return "not taken"
    job = BacktestJob.objects.get(pk=pk)
    report = _Report(pk, stopping)
    if backtest is None:
        reconciler = tasks.reconciler()
        backtest = Backtest(reconciler.client, Replayer(reconciler.providers))
    finished = BacktestJob.objects.filter(pk=pk)
    try:
        result = backtest.run(
            job.namespace,
            job.name,
            spec=job.draft,
            rollouts=job.rollouts,
            max_duration=job.max_duration_seconds,
            progress=report.progress,
            cancelled=report.cancelled,
        )
    except Cancelled:
        if stopping() and not report.asked_to_cancel():
            finished.update(
                state=BacktestState.QUEUED,
                next_attempt_at=_now(),
                started_at=None,
                heartbeat_at=None,
                done=0,
            )
            return BacktestState.QUEUED
        finished.update(state=BacktestState.CANCELLED, finished_at=_now())
        return BacktestState.CANCELLED
    except BacktestError as exc:
        finished.update(state=BacktestState.FAILED, error=str(exc), finished_at=_now())
        return BacktestState.FAILED
    except Exception:
        log.exception("backtest job %s failed unexpectedly", pk)
        finished.update(
            state=BacktestState.FAILED,
            error="the backtest failed unexpectedly (the operator's log says why)",
            finished_at=_now(),
        )
        return BacktestState.FAILED
    finished.update(state=BacktestState.SUCCEEDED, result=result.to_dict(), finished_at=_now())
    return BacktestState.SUCCEEDED
