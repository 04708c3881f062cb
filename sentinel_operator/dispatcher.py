"""The due-time dispatcher: hand every analysis to a worker within a second of its due time.

docs/operator.md "Due-time dispatch". Due times live in the database (``Analysis.next_due_at``, set
by the watch for new or edited resources and by the reconciler after every attempt). django-q2's
scheduler only looks at its schedules every 30 s, far too coarse, so this loop polls the database
every ``poll_interval`` (~0.1 s) and queues ``tasks.reconcile_task`` for each due row.

Claiming: before queueing, a row's ``next_due_at`` is moved forward by ``claim_timeout`` with a
compare-and-set on the due time it was read with. So a row is queued once even if two passes
(or two replicas during a leader change) see it, and a worker that dies mid-task does not lose
the analysis: it becomes due again when the claim runs out. The reconciler overwrites the claim
with the real next due time when it finishes (``due.reschedule``). Only the leader dispatches;
``runtime`` runs ``Dispatcher.run`` in a thread.

Scope: with ``SENTINEL_NAMESPACES`` set, only rows in those namespaces are ever dispatched,
whatever else the database holds; the reconcile task refuses the others too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from analyses import claims
from analyses.models import Analysis
from sentinel_operator.metrics import operator_metrics
from sentinel_operator.tasks import RECONCILE_TASK

log = logging.getLogger(__name__)

# Enqueue(namespace, name, due_at, uid): put one reconcile on the task queue.
Enqueue = Callable[[str, str, datetime, str], None]
# A due row as read: pk, namespace, name, next_due_at, uid.
_Due = tuple[int, str, str, datetime, str]

# Longer than a reconcile may take (django-q2 kills a task after Q_CLUSTER["timeout"] = 60 s)
# plus the wait in a busy broker queue; only a lost task ever waits this long.
CLAIM_TIMEOUT = timedelta(seconds=120)
POLL_INTERVAL = 0.1
BATCH = 200


def enqueue_reconcile(namespace: str, name: str, due_at: datetime, uid: str) -> None:
    """Queue ``tasks.reconcile_task`` on django-q2 (the default ``Enqueue``).

    The uid goes along so that a 404 marks this incarnation deleted and never one created
    since under the same name (docs/operator.md#deleted-analysis).
    """
    from django_q.tasks import async_task

    async_task(
        RECONCILE_TASK,
        namespace,
        name,
        due_at.isoformat(),
        uid,
        task_name=f"reconcile {namespace}/{name}",
        group="reconcile",
        # Successful results are in the status and the history already; skip the Task row.
        save=False,
    )


class Dispatcher:
    """Poll for due analyses, claim them and queue their reconcile."""

    def __init__(
        self,
        *,
        now: Callable[[], datetime],
        is_leader: Callable[[], bool],
        enqueue: Enqueue = enqueue_reconcile,
        poll_interval: float = POLL_INTERVAL,
        claim_timeout: timedelta = CLAIM_TIMEOUT,
        batch: int = BATCH,
        namespaces: Sequence[str] = (),
        enqueue_in_transaction: bool | None = None,
    ) -> None:
        self._now = now
        self._is_leader = is_leader
        self._enqueue = enqueue
        self.poll_interval = poll_interval
        self.claim_timeout = claim_timeout
        self.batch = batch
        # Empty means every namespace, as SENTINEL_NAMESPACES does.
        self.namespaces = tuple(namespaces)
        # On django-q2's ORM broker a pass's enqueues are INSERTs on our own database: one
        # transaction for all of them instead of one each. Other brokers queue row by row.
        if enqueue_in_transaction is None:
            enqueue_in_transaction = "orm" in getattr(settings, "Q_CLUSTER", {})
        self.enqueue_in_transaction = enqueue_in_transaction

    def dispatch_due(self) -> int:
        """Claim and queue every analysis due now (one pass); return how many were queued."""
        now = self._now()
        rows = Analysis.objects.due(now)
        if self.namespaces:
            # Filtered in the query, so rows out of scope never fill a batch either.
            rows = rows.filter(namespace__in=self.namespaces)
        due = list(rows.values_list("pk", "namespace", "name", "next_due_at", "uid")[: self.batch])
        if not due:
            return 0
        claimed_until = now + self.claim_timeout
        claimed = self._claim(due, claimed_until)
        if self.enqueue_in_transaction:
            queued = self._enqueue_together(claimed, claimed_until)
        else:
            queued = sum(self._enqueue_one(row, claimed_until) for row in claimed)
        if queued:
            operator_metrics().dispatched.inc(queued)
        return queued

    def _claim(self, due: list[_Due], claimed_until: datetime) -> list[_Due]:
        # A concurrent claim or reschedule wins: only rows still at the due time read are taken.
        live = Analysis.objects.filter(deleted_at__isnull=True)
        found = [(row[0], row[3]) for row in due]
        taken = {pk for pk, _ in claims.claim(live, "next_due_at", found, claimed_until)}
        return [row for row in due if row[0] in taken]

    def _enqueue_together(self, claimed: list[_Due], claimed_until: datetime) -> int:
        """Queue ``claimed`` on the ORM broker in one transaction: all of them or none."""
        try:
            with transaction.atomic():
                for _, namespace, name, due_at, uid in claimed:
                    self._enqueue(namespace, name, due_at, uid)
        except Exception:
            log.exception("dispatcher: cannot queue %d analyses", len(claimed))
            self._unclaim(claimed, claimed_until)
            return 0
        return len(claimed)

    def _enqueue_one(self, row: _Due, claimed_until: datetime) -> int:
        try:
            self._enqueue(row[1], row[2], row[3], row[4])
        except Exception:
            log.exception("dispatcher: cannot queue %s/%s", row[1], row[2])
            self._unclaim([row], claimed_until)
            return 0
        return 1

    @staticmethod
    def _unclaim(rows: list[_Due], claimed_until: datetime) -> None:
        # The broker failed: make the rows due again at once rather than after the claim.
        found = [(row[0], row[3]) for row in rows]
        claims.release(Analysis.objects.all(), "next_due_at", found, claimed_until)

    def run(self, stop: threading.Event) -> None:
        """Dispatch until ``stop`` is set, while this replica leads."""
        claims.poll(
            stop,
            is_leader=self._is_leader,
            # A full batch means more are due: go again without sleeping.
            one_pass=lambda: self.dispatch_due() >= self.batch,
            interval=self.poll_interval,
            log=log,
            failed="dispatcher: pass failed",
        )
