"""The coarse periodic jobs (full resync, history pruning), queued by the leader itself.

django-q2's own scheduler runs whatever its ``Schedule`` rows name: a function by dotted path,
with arguments from the row. The rows live in the database the web app writes too, so one row
would let code in the web Pod run any function in the operator (docs/security.md). The
scheduler is off (``Q_CLUSTER["scheduler"]``); ``Periodic`` queues the two jobs of this fixed
list instead, signed with the operator's task key like every other task. Only the leader
queues, each job at once when it takes over and then every period.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sentinel_operator import tasks

log = logging.getLogger(__name__)

# (task, period in seconds): the whole list of what runs periodically.
JOBS: tuple[tuple[str, float], ...] = (
    (tasks.RESYNC_TASK, tasks.RESYNC_MINUTES * 60.0),
    (tasks.PRUNE_TASK, tasks.PRUNE_MINUTES * 60.0),
)
POLL_INTERVAL = 1.0

# Enqueue(task): queue one run of ``task`` on django-q2.
Enqueue = Callable[[str], None]


def enqueue_job(task: str) -> None:
    """Queue ``task`` on django-q2 (the default ``Enqueue``); its success is not stored."""
    from django_q.tasks import async_task

    async_task(task, task_name=task.rsplit(".", 1)[-1], group="periodic", save=False)


class Periodic:
    """Queue each job of ``JOBS`` every period while this replica leads."""

    def __init__(
        self,
        *,
        is_leader: Callable[[], bool],
        enqueue: Enqueue = enqueue_job,
        monotonic: Callable[[], float] = time.monotonic,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._is_leader = is_leader
        self._enqueue = enqueue
        self._monotonic = monotonic
        self.poll_interval = poll_interval
        # When each job is due next; empty until this replica leads.
        self._next: dict[str, float] = {}

    def run_once(self) -> list[str]:
        """Queue what is due now; return the jobs queued."""
        if not self._is_leader():
            # A replica that takes over later starts afresh: its first pass queues every job.
            self._next.clear()
            return []
        now = self._monotonic()
        queued = []
        for task, period in JOBS:
            if now < self._next.get(task, now):
                continue
            try:
                self._enqueue(task)
            except Exception:  # the broker is down: try again next pass
                log.exception("periodic: cannot queue %s", task)
                continue
            self._next[task] = now + period
            queued.append(task)
        return queued

    def run(self, stop: threading.Event) -> None:
        """Run passes until ``stop`` is set."""
        while not stop.is_set():
            self.run_once()
            stop.wait(self.poll_interval)
