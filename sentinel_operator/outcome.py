"""How one reconcile attempt ended, when it is due again, and the one function that records it.

``reconcile.Reconciler`` ends every attempt in exactly one ``Outcome``, one of five frozen types,
each carrying only what its ending has:

- ``Evaluated``: the decision was carried out and its status written (any verdict, also an
  invalid spec or query, also Prometheus unavailable: then ``decision.transient`` says so);
- ``CutShort``: the Kubernetes API failed after the analysis was read; nothing decided was
  written, the values measured so far are kept in the history row;
- ``Unreadable``: the analysis itself could not be read (the API server down, or RBAC);
- ``Deleted``: the analysis is gone (a missing object is success);
- ``Crashed``: an unexpected exception (a bug, the database).

``next_due`` is the contract of docs/status.md#requeue-and-backoff in one function: an
evaluation that got answers is **requeued** one interval after its due time, or on the
analysis's own phase after waiting for a backlog (``requeue.requeue_at``), and its backoff
count goes back to 0; every other live ending is **retried** after ``backoff.next_delay`` with
the count one up; a deleted analysis is not due again.

``record`` writes down what follows from an outcome, dispatching on its type: the decision's
events (HTTP, so before the transaction), then in ONE database transaction the mirror (from the
resource already read, with the API server's answer to the status write), the history row
(docs/status.md#history-outcomes), the Delivery rows of the decision's notification intents
(docs/notifications.md; sent later by the notifications app, never here) and the next due time;
last ``sentinel_reconciles_total`` by ``result``. After a read of the analysis the transaction
waits out a database restart (``durable.durably``): what the cluster already saw must be
recorded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from django.db import transaction

from analyses import due, mirror
from analyses.models import Analysis
from notifications import store as notifications
from sentinel_cluster import kube
from sentinel_cluster.events import record_events
from sentinel_core import backoff, requeue
from sentinel_core.conditions import ErrorReason
from sentinel_core.decision import Decision, interrupted
from sentinel_core.measurement import Measurement
from sentinel_core.resource import AnalysisResource
from sentinel_operator import history
from sentinel_operator.durable import durably
from sentinel_operator.metrics import operator_metrics


class Result(StrEnum):
    """The ``result`` label of ``sentinel_reconciles_total``: an outcome in one word."""

    EVALUATED = "evaluated"
    # Prometheus or the Kubernetes API failed for now: retried with backoff.
    TRANSIENT = "transient"
    # The Kubernetes API refused (RBAC): retried with backoff, logged as an error.
    FORBIDDEN = "forbidden"
    DELETED = "deleted"
    ERROR = "error"


@dataclass(frozen=True)
class Evaluated:
    """The decision was carried out and its status written."""

    # The analysis as read, with the status and resourceVersion the API server answered.
    resource: AnalysisResource
    decision: Decision
    measurements: tuple[Measurement, ...]
    attempt: history.Attempt


@dataclass(frozen=True)
class CutShort:
    """The Kubernetes API failed after the analysis was read; nothing decided was written."""

    resource: AnalysisResource
    error: kube.KubeError
    # Measured before the failure: judged into the history row, never counted.
    measurements: tuple[Measurement, ...]
    attempt: history.Attempt


@dataclass(frozen=True)
class Unreadable:
    """The analysis itself could not be read; its mirror row is found by key."""

    namespace: str
    name: str
    error: kube.KubeError
    started: datetime
    finished: datetime


@dataclass(frozen=True)
class Deleted:
    """The analysis is gone: its mirror row leaves the queue, its history stays."""

    namespace: str
    name: str
    # The incarnation the attempt was for; only its row is marked (mirror.mark_deleted), never
    # a new one created under the same name meanwhile.
    uid: str


@dataclass(frozen=True)
class Crashed:
    """An unexpected exception: backed off by key rather than left to the dispatch claim."""

    namespace: str
    name: str


Outcome = Evaluated | CutShort | Unreadable | Deleted | Crashed


@dataclass(frozen=True)
class Due:
    """When an analysis is due again and its backoff count from then on."""

    at: datetime
    backoff_attempt: int


def result(outcome: Outcome) -> Result:
    """Return the one-word label of ``outcome``."""
    match outcome:
        case Evaluated(decision=decision):
            return Result.TRANSIENT if decision.transient else Result.EVALUATED
        case CutShort(error=error) | Unreadable(error=error):
            return Result.FORBIDDEN if isinstance(error, kube.Forbidden) else Result.TRANSIENT
        case Deleted():
            return Result.DELETED
        case Crashed():
            return Result.ERROR


def next_due(
    outcome: Outcome,
    *,
    interval: float,
    backoff_attempt: int,
    now: datetime,
    rng: random.Random,
    due_at: datetime | None = None,
) -> Due | None:
    """Return when the analysis is due again after ``outcome``; None when it is not.

    ``interval`` and ``backoff_attempt`` are the analysis's as the bookkeeping found them;
    ``due_at`` is when the attempt was due (None when not known). Requeue is not retry: only an
    evaluation that got answers waits the interval from its due time (``requeue.requeue_at``)
    and resets the count; anything transient (and a crash) waits ``backoff.next_delay`` of the
    next attempt.
    """
    match outcome:
        case Deleted():
            return None
        case Evaluated(resource=resource, decision=decision) if not decision.transient:
            # From the attempt's own times only: the plain-SQL path, which reads no row, agrees.
            again = requeue.requeue_at(
                due_at,
                started=outcome.attempt.started_at,
                now=now,
                interval=decision.interval_seconds,
                uid=resource.uid,
            )
            return Due(again, 0)
        case _:
            attempt = backoff_attempt + 1
            delay = backoff.next_delay(attempt, interval, rng)
            return Due(now + timedelta(seconds=delay), attempt)


def record(
    outcome: Outcome,
    *,
    client: kube.KubeClient,
    now: datetime,
    rng: random.Random,
    instance: str = "",
    due_at: datetime | None = None,
) -> Due | None:
    """Write down what ``outcome`` says (the module docstring's order); return its next due.

    ``due_at`` is when the attempt was due, which a requeue counts the interval from.
    """
    if isinstance(outcome, Evaluated):
        # HTTP, so before the transaction: SQLite's one write lock is never held over a request.
        record_events(
            client,
            outcome.resource.reference(),
            outcome.decision.events,
            now=now,
            instance=instance,
        )
    if isinstance(outcome, Unreadable | Crashed):
        # Nothing reached the cluster, so nothing must be waited for: a database that is down
        # fails this at once and the dispatch claim brings the analysis back.
        scheduled = _bookkeeping(outcome, now, rng, due_at)
    else:
        scheduled = durably(
            lambda: _bookkeeping(outcome, now, rng, due_at), what=f"the outcome of {_key(outcome)}"
        )
    operator_metrics().reconciles.labels(result(outcome).value).inc()
    return scheduled


def _bookkeeping(
    outcome: Outcome, now: datetime, rng: random.Random, due_at: datetime | None
) -> Due | None:
    """Mirror, history, notifications and next due time in ONE write transaction.

    One transaction per attempt instead of four (docs/performance.md): on SQLite each one is a
    turn at the only write lock. ``durably`` retries it whole after a lost connection, so it is
    never half written.
    """
    with transaction.atomic():
        if isinstance(outcome, Evaluated):
            refreshed = _refreshed(outcome, now, rng, due_at)
            if refreshed is not None:
                return refreshed
        match outcome:
            case Deleted(namespace=namespace, name=name, uid=uid):
                mirror.mark_deleted(namespace, name, uid, now=now)
                return None
            case Evaluated(resource=resource, decision=decision):
                row, _ = mirror.upsert(resource, now=now)
                spec = resource.valid_spec
                history.record_attempt(
                    row.pk,
                    outcome.attempt,
                    decision.history,
                    spec=spec,
                    measurements=outcome.measurements,
                    due_at=due_at,
                )
                # Only a decision whose status was written happened; one cut short decides again.
                if decision.notifications:
                    named = spec.notify if spec is not None else ()
                    notifications.store(row, resource.uid, named, decision.notifications, now=now)
                interval = decision.interval_seconds
            case CutShort(resource=resource, error=error):
                row, _ = mirror.upsert(resource, now=now)
                spec = resource.valid_spec
                entry = interrupted(
                    spec,
                    outcome.measurements,
                    reason=_error_reason(error),
                    message=str(error),
                    rollout=resource.status.rollout,
                )
                history.record_attempt(
                    row.pk,
                    outcome.attempt,
                    entry,
                    spec=spec,
                    measurements=outcome.measurements,
                    due_at=due_at,
                )
                interval = resource.summary.interval_seconds
            case Unreadable(namespace=namespace, name=name, error=error):
                found = _live_row(namespace, name)
                if found is None:
                    return None
                row = found
                facts = history.Attempt(
                    started_at=outcome.started,
                    finished_at=outcome.finished,
                    duration_seconds=max(0.0, (outcome.finished - outcome.started).total_seconds()),
                    generation=row.generation,
                    failures_after=row.failures,
                )
                entry = interrupted(None, (), reason=_error_reason(error), message=str(error))
                history.record_attempt(
                    row.pk, facts, entry, spec=None, measurements=(), due_at=due_at
                )
                interval = float(row.interval_seconds)
            case Crashed(namespace=namespace, name=name):
                found = _live_row(namespace, name)
                if found is None:
                    return None
                row = found
                interval = float(row.interval_seconds)
        scheduled = next_due(
            outcome,
            interval=interval,
            backoff_attempt=row.backoff_attempt,
            now=now,
            rng=rng,
            due_at=due_at,
        )
        assert scheduled is not None  # only Deleted is never due again, and it returned
        generation = (
            outcome.attempt.generation
            if isinstance(outcome, Evaluated | CutShort)
            else row.generation
        )
        due.reschedule(
            row.pk,
            generation=generation,
            due_at=scheduled.at,
            backoff_attempt=scheduled.backoff_attempt,
        )
        return scheduled


def _refreshed(
    outcome: Evaluated, now: datetime, rng: random.Random, due_at: datetime | None
) -> Due | None:
    """The steady state's bookkeeping in three plain statements; None when it does not apply.

    A requeue (answers got, so the next due time needs no backoff count read first) of the
    same spec the mirror holds, with no notification to store: one UPDATE of the mirror row
    (status, next due time, backoff count), the evaluation INSERT and the metric results'
    (docs/performance.md, "Bookkeeping as plain SQL"). Anything else, and a row the UPDATE does
    not find (first sight, deleted, a newer spec mirrored meanwhile), takes the general path.
    """
    resource, decision = outcome.resource, outcome.decision
    if decision.transient or decision.notifications:
        return None
    if resource.generation != outcome.attempt.generation:
        return None
    scheduled = next_due(
        outcome,
        interval=decision.interval_seconds,
        backoff_attempt=0,
        now=now,
        rng=rng,
        due_at=due_at,
    )
    assert scheduled is not None  # an evaluation is always due again
    pk = mirror.refresh_status(
        resource, now=now, scheduled=due.rescheduled(scheduled.at, scheduled.backoff_attempt)
    )
    if pk is None:
        return None
    history.record_attempt(
        pk,
        outcome.attempt,
        decision.history,
        spec=resource.valid_spec,
        measurements=outcome.measurements,
        due_at=due_at,
    )
    return scheduled


def _live_row(namespace: str, name: str) -> Analysis | None:
    return Analysis.objects.live().filter(namespace=namespace, name=name).first()


def _error_reason(error: kube.KubeError) -> ErrorReason:
    if isinstance(error, kube.Forbidden):
        return ErrorReason.KUBERNETES_FORBIDDEN
    return ErrorReason.KUBERNETES_UNAVAILABLE


def _key(outcome: Outcome) -> str:
    if isinstance(outcome, Evaluated | CutShort):
        return outcome.resource.key
    return f"{outcome.namespace}/{outcome.name}"
