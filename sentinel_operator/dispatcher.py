"""The due-time dispatcher: hand every analysis to a worker within a second of its due time.

docs/operator.md "Due-time dispatch". Due times live in the database (``Analysis.next_due_at``, set
by the watch for new or edited resources and by the reconciler after every attempt). django-q2's
scheduler only looks at its schedules every 30 s, far too coarse, so this loop polls the database
every ``poll_interval`` (~0.1 s). When something falls due before the next poll, a pass claims
every analysis due within ``ahead`` (``SENTINEL_DISPATCH_AHEAD``, 0.5 s) and splits them, in due
order, into at most ``workers`` (``SENTINEL_Q_WORKERS``) ``tasks.reconcile_batch_task`` tasks: one
broker round trip per worker per pass instead of one per analysis. The worker waits for each
member's due time, so nothing starts early.

Claiming: before queueing, a row's ``next_due_at`` is moved forward by the claim
(``SENTINEL_CLAIM_TIMEOUT``, 120 s) with a compare-and-set on the due time it was read with. So a
row is queued once even if two passes (or two replicas during a leader change) see it, and a
worker that dies mid-task does not lose the analysis: it becomes due again when the claim runs
out. The reconciler overwrites the claim with the real next due time when it finishes
(``analyses.due.reschedule``); a batch gives back the members it will not start
(``analyses.due.release``):
past half its time limit, or when their claims would run out before it could be killed
(docs/operator.md#claims). Only the leader dispatches; ``runtime`` runs ``Dispatcher.run`` in a
thread.

Reads from caches: with a ``snapshot`` (``caches.Caches.snapshot``, given by ``runtime``) each
member carries what the operator's caches hold for it, so the worker asks the API server only
for what is missing (docs/architecture.md#reads-from-caches).

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

from analyses import due
from analyses.due import DueRow
from sentinel_cluster.informer import Snapshot
from sentinel_db import claims
from sentinel_operator.metrics import operator_metrics
from sentinel_operator.tasks import BATCH_TASK

log = logging.getLogger(__name__)

# A member of a batch: namespace, name, uid, due_at, and what the caches hold for it.
Member = tuple[str, str, str, datetime] | tuple[str, str, str, datetime, Snapshot | None]
# snapshot(namespace, name, uid): what the caches hold for one evaluation.
SnapshotOf = Callable[[str, str, str], Snapshot | None]
# Enqueue(members, claimed_until): put one batch task on the task queue.
Enqueue = Callable[[Sequence[Member], datetime], None]

POLL_INTERVAL = 0.1
BATCH = 200


def enqueue_batch(members: Sequence[Member], claimed_until: datetime) -> None:
    """Queue ``tasks.reconcile_batch_task`` on django-q2 (the default ``Enqueue``).

    Each member's uid goes along so that a 404 marks this incarnation deleted and never one
    created since under the same name (docs/operator.md#deleted-analysis); ``claimed_until``
    lets the task give back members it will not start.
    """
    from django_q.tasks import async_task

    first = members[0]
    async_task(
        BATCH_TASK,
        [
            (member[0], member[1], member[2], member[3].isoformat(), *member[4:])
            for member in members
        ],
        claimed_until.isoformat(),
        task_name=f"reconcile {first[0]}/{first[1]} and {len(members) - 1} more",
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
        enqueue: Enqueue = enqueue_batch,
        poll_interval: float = POLL_INTERVAL,
        ahead: float | None = None,
        workers: int | None = None,
        claim_timeout: timedelta | None = None,
        batch: int = BATCH,
        namespaces: Sequence[str] = (),
        enqueue_in_transaction: bool | None = None,
        snapshot: SnapshotOf | None = None,
    ) -> None:
        self._now = now
        self._is_leader = is_leader
        self._enqueue = enqueue
        self.poll_interval = poll_interval
        self.ahead = timedelta(seconds=settings.SENTINEL.dispatch_ahead if ahead is None else ahead)
        # One task per worker per pass: every worker gets a share, none gets two.
        self.workers = settings.SENTINEL.q_workers if workers is None else workers
        # SENTINEL_CLAIM_TIMEOUT: only an analysis lost with its task waits this long.
        if claim_timeout is None:
            claim_timeout = timedelta(seconds=settings.SENTINEL.claim_timeout)
        self.claim_timeout = claim_timeout
        self.batch = batch
        # Empty means every namespace, as SENTINEL_NAMESPACES does.
        self.namespaces = tuple(namespaces)
        # On django-q2's ORM broker a pass's enqueues are INSERTs on our own database: one
        # transaction for all of them instead of one each. Other brokers queue row by row.
        if enqueue_in_transaction is None:
            enqueue_in_transaction = "orm" in getattr(settings, "Q_CLUSTER", {})
        self.enqueue_in_transaction = enqueue_in_transaction
        self._snapshot = snapshot
        # The pass's read, the most overdue first: compiled once, so the scope and the batch
        # are fixed here.
        self._due = due.read(batch=batch, namespaces=self.namespaces)

    def dispatch_due(self) -> int:
        """Claim and queue what is due within ``ahead`` (one pass); return how many were queued.

        Only when something falls due before the next poll: until then the rows due within
        ``ahead`` gather, so that a pass hands each worker several instead of one.
        """
        now = self._now()
        found = self._due(now + self.ahead)
        if not found or found[0].due_at > now + timedelta(seconds=self.poll_interval):
            return 0
        claimed_until = now + self.claim_timeout
        claimed = due.claim(found, claimed_until)
        if not claimed:
            return 0
        # In due order, dealt out in turn: each task's members are spread over the whole
        # look-ahead, so the workers run side by side rather than one after the other.
        tasks = min(self.workers, len(claimed))
        batches = [claimed[index::tasks] for index in range(tasks)]
        if self.enqueue_in_transaction:
            queued = self._enqueue_together(batches, claimed_until)
        else:
            queued = sum(self._enqueue_one(rows, claimed_until) for rows in batches)
        if queued:
            operator_metrics().dispatched.inc(queued)
        return queued

    def _enqueue_together(self, batches: list[list[DueRow]], claimed_until: datetime) -> int:
        """Queue ``batches`` on the ORM broker in one transaction: all of them or none."""
        claimed = [row for rows in batches for row in rows]
        try:
            with transaction.atomic():
                for rows in batches:
                    self._enqueue(self._members(rows), claimed_until)
        except Exception:
            log.exception("dispatcher: cannot queue %d analyses", len(claimed))
            self._unclaim(claimed, claimed_until)
            return 0
        return len(claimed)

    def _enqueue_one(self, rows: list[DueRow], claimed_until: datetime) -> int:
        try:
            self._enqueue(self._members(rows), claimed_until)
        except Exception:
            log.exception("dispatcher: cannot queue %d analyses", len(rows))
            self._unclaim(rows, claimed_until)
            return 0
        return len(rows)

    def _members(self, rows: list[DueRow]) -> list[Member]:
        if self._snapshot is None:
            return [(row.namespace, row.name, row.uid, row.due_at) for row in rows]
        snapshot = self._snapshot
        return [
            (
                row.namespace,
                row.name,
                row.uid,
                row.due_at,
                snapshot(row.namespace, row.name, row.uid),
            )
            for row in rows
        ]

    @staticmethod
    def _unclaim(rows: list[DueRow], claimed_until: datetime) -> None:
        # The broker failed: make the rows due again at once rather than after the claim.
        due.release([(row.uid, row.due_at) for row in rows], claimed_until)

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
