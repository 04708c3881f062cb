"""Run the backtest jobs the REST API stores: the leader queues them, a worker runs one.

The web app may not queue django-q2 tasks (their signing key is the operator's alone,
docs/security.md), so a job is a ``BacktestJob`` row, ``queued`` with ``next_attempt_at`` set.
``sentinel_operator.runtime`` runs ``BacktestPump.run`` on the leader: each pass claims due
queued jobs with a compare-and-set on ``next_attempt_at`` (``sentinel_db.claims``, as the
notification pump does) and queues ``run_job`` — one job running at a time, so a backtest holds at
most one worker and live evaluations keep the others (docs/backtest.md). The task takes the row
with a compare-and-set on its claim (a second copy of the task finds nothing to do), replays
through ``sentinel_operator.backtest`` with this worker's reconciler's client and providers,
stores its progress and a heartbeat about once a second, stops between two evaluations when a
cancel was asked, and stores the result or the one-line error. The pump also fails a running
job whose heartbeat stopped (its worker died) and prunes finished jobs after ``BACKTEST_KEEP``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from analyses.models import BACKTEST_KEEP, BacktestJob, BacktestState
from sentinel_db import claims
from sentinel_operator import tasks
from sentinel_operator.backtest import Backtest, BacktestError, Cancelled, Replayer

log = logging.getLogger(__name__)

RUN_TASK = "sentinel_operator.backtest_jobs.run_job"
# How long a queued job waits for a worker before the pump queues it again.
CLAIM = timedelta(seconds=30)
POLL_INTERVAL = 1.0
# A running job silent this long has lost its worker.
STALE = timedelta(seconds=120)
# django-q2's time limit for one job: the query bound at the backtest's rate, and then some.
TASK_TIMEOUT = 1800
# Progress, heartbeat and the cancel flag are written and read at most this often.
_REPORT_SECONDS = 1.0

Enqueue = Callable[[int, datetime], None]


def _now() -> datetime:
    return datetime.now(UTC)


def enqueue_job(pk: int, claim: datetime) -> None:
    """Queue ``run_job`` on django-q2 with its own time limit (the default ``Enqueue``)."""
    from django_q.tasks import async_task

    async_task(
        RUN_TASK,
        pk,
        claim.isoformat(),
        task_name=f"backtest {pk}",
        group="backtest",
        save=False,
        timeout=TASK_TIMEOUT,
    )


class BacktestPump:
    """Poll for queued backtest jobs, claim one at a time and queue its task."""

    def __init__(
        self,
        *,
        now: Callable[[], datetime] = _now,
        is_leader: Callable[[], bool],
        enqueue: Enqueue = enqueue_job,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._now = now
        self._is_leader = is_leader
        self._enqueue = enqueue
        self.poll_interval = poll_interval
        self._pruned: datetime | None = None

    def pump_due(self) -> int:
        """Fail stale jobs, prune old ones, queue the next due one; return how many queued."""
        now = self._now()
        BacktestJob.objects.filter(
            state=BacktestState.RUNNING, heartbeat_at__lt=now - STALE
        ).update(
            state=BacktestState.FAILED,
            error="the operator worker running it stopped; ask again",
            finished_at=now,
        )
        if self._pruned is None or now - self._pruned > timedelta(hours=1):
            BacktestJob.objects.filter(finished_at__lt=now - BACKTEST_KEEP).delete()
            self._pruned = now
        queued = BacktestJob.objects.filter(state=BacktestState.QUEUED)
        # One at a time: none running, none claimed and waiting for a worker.
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
        claims.poll(
            stop,
            is_leader=self._is_leader,
            one_pass=self._one_pass,
            interval=self.poll_interval,
            log=log,
            failed="backtest: pump pass failed",
        )


class _Report:
    """Store a job's progress and heartbeat, and read its cancel flag, about once a second."""

    def __init__(self, pk: int, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.pk = pk
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
        return self._cancel


def run_job(pk: int, claim: str, *, backtest: Backtest | None = None) -> str:
    """Run backtest job ``pk`` if it still holds ``claim``; return what became of it.

    ``backtest`` replays it (default: with this worker's reconciler's client and providers).
    """
    now = _now()
    taken = BacktestJob.objects.filter(
        pk=pk, state=BacktestState.QUEUED, next_attempt_at=datetime.fromisoformat(claim)
    ).update(state=BacktestState.RUNNING, started_at=now, heartbeat_at=now, next_attempt_at=None)
    if not taken:
        return "not taken"
    job = BacktestJob.objects.get(pk=pk)
    report = _Report(pk)
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
