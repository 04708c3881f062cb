"""How one reconcile attempt ended, and the one function that records it.

``reconcile.Reconciler`` ends every attempt in exactly one ``ReconcileOutcome`` and hands it to
``record``, which carries out everything that follows from an ending, always in the same order:

1. a deleted analysis leaves the mirror (``mark_deleted``, which drops it from the queue);
2. after a status write, the decision's events and the mirror refresh from the API server's
   answer;
3. the history row of the attempt (SPEC §6), when the analysis has a mirror row, and in the same
   transaction the Delivery rows of the decision's notification intents (SPEC §14; sent later
   by the notifications app's tasks, never here);
4. the next due time and backoff count for the dispatcher;
5. ``sentinel_reconciles_total`` by result.

So whether an attempt was evaluated, cut short by the Kubernetes API, could not even read the
analysis, or failed unexpectedly, the bookkeeping is written once, here: the events (HTTP)
first, then steps 1 to 4 in one database transaction, which waits out a database restart
(``durable.durably``): what the cluster already saw must be recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db import transaction

from analyses import mirror
from analyses.models import Analysis
from notifications import store as notifications
from sentinel_cluster import kube
from sentinel_cluster.events import record_events
from sentinel_core.decision import Decision, HistoryEntry
from sentinel_core.measurement import Measurement
from sentinel_core.spec import AnalysisSpec
from sentinel_operator import due, history
from sentinel_operator.durable import durably
from sentinel_operator.metrics import operator_metrics


class Result(StrEnum):
    """How one reconcile ended; also the ``result`` label of ``sentinel_reconciles_total``."""

    # Got answers (any verdict, also an invalid query or spec): requeued at +interval.
    EVALUATED = "evaluated"
    # Prometheus or the Kubernetes API failed for now: retried with backoff.
    TRANSIENT = "transient"
    # The Kubernetes API refused (RBAC): retried with backoff, logged as an error.
    FORBIDDEN = "forbidden"
    # The analysis is gone: nothing is requeued (a missing object is success).
    DELETED = "deleted"
    # An unexpected exception (a bug, the database): backed off, logged, re-raised.
    ERROR = "error"


@dataclass(frozen=True)
class ReconcileOutcome:
    """Everything one reconcile attempt leaves to be recorded."""

    namespace: str
    name: str
    result: Result
    # Seconds until the analysis is due again; None when it is not requeued (deleted).
    requeue_after: float | None = None
    # Retries so far: 0 after an evaluation, counting up through transient errors.
    backoff_attempt: int = 0
    # The mirror row the attempt is recorded on; None when the analysis was never mirrored.
    row: Analysis | None = None
    # The history row's facts and entry; None when the attempt leaves no row.
    attempt: history.Attempt | None = None
    history: HistoryEntry | None = None
    spec: AnalysisSpec | None = None
    measurements: tuple[Measurement, ...] = ()
    # The decision carried out, and the API server's answer to its status write.
    decision: Decision | None = None
    written: Mapping[str, Any] | None = None
    # Of a deleted analysis: its uid ("" matches whichever live row holds the name).
    uid: str = ""
    error: str = ""


def record(
    outcome: ReconcileOutcome, *, client: kube.KubeClient, now: datetime, instance: str = ""
) -> None:
    """Write down what ``outcome`` says, in the order the module docstring gives."""
    written = outcome.written
    if written is not None and outcome.decision is not None:
        # HTTP, so before the transaction: SQLite's one write lock is never held over a request.
        record_events(client, written, outcome.decision.events, now=now, instance=instance)
    if _has_bookkeeping(outcome):
        durably(
            lambda: _bookkeeping(outcome, now),
            what=f"the outcome of {outcome.namespace}/{outcome.name}",
        )
    operator_metrics().reconciles.labels(outcome.result.value).inc()


def _has_bookkeeping(outcome: ReconcileOutcome) -> bool:
    # An empty transaction would still take SQLite's write lock (BEGIN IMMEDIATE).
    return (
        outcome.result == Result.DELETED
        or (outcome.written is not None and outcome.decision is not None)
        or outcome.row is not None
    )


def _bookkeeping(outcome: ReconcileOutcome, now: datetime) -> None:
    """Mirror, history, notifications and next due time in ONE write transaction.

    One transaction per attempt instead of four (docs/performance.md): on SQLite each one is a
    turn at the only write lock. ``durably`` retries it whole after a lost connection, so it is
    never half written.
    """
    row = outcome.row
    with transaction.atomic():
        if outcome.result == Result.DELETED:
            mirror.mark_deleted(outcome.namespace, outcome.name, outcome.uid, now=now)
        written = outcome.written
        if written is not None and outcome.decision is not None:
            mirror.upsert_from_resource(written, now=now)
        if row is not None and outcome.attempt is not None and outcome.history is not None:
            history.record_attempt(
                row,
                outcome.attempt,
                outcome.history,
                spec=outcome.spec,
                measurements=outcome.measurements,
            )
            _store_notifications(outcome, row, now)
        if row is not None and outcome.requeue_after is not None:
            due.reschedule(
                row.pk,
                generation=outcome.attempt.generation if outcome.attempt else row.generation,
                due_at=now + timedelta(seconds=outcome.requeue_after),
                backoff_attempt=outcome.backoff_attempt,
            )


def _store_notifications(outcome: ReconcileOutcome, row: Analysis, now: datetime) -> None:
    # Only a decision whose status was written happened; an attempt cut short decides again.
    decision, written = outcome.decision, outcome.written
    if decision is None or written is None or not decision.notifications:
        return
    uid = str(written.get("metadata", {}).get("uid", ""))
    named = outcome.spec.notify if outcome.spec is not None else ()
    notifications.store(row, uid, named, decision.notifications, now=now)
