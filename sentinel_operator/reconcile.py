"""Reconcile one RolloutAnalysis by key: fetch, measure, decide, act, write, requeue.

``Reconciler.reconcile(namespace, name)`` is called by the django-q2 task
(``tasks.reconcile_task``) that the due-time dispatcher queues. It is level-based: it reads the
current state every time and never looks at the event that made the analysis due.

The contract, once (controller-runtime's, SPEC §5 "requeue is not retry"):

- The resource is gone (404): the mirror row is marked deleted, which drops it from the
  dispatch queue at once. Done; nothing is requeued (a missing object is success).
- An evaluation got answers from Prometheus (any verdict, also an invalid query or spec, also a
  missing target): the status is written and the analysis is **requeued** at ``+interval``;
  ``backoff_attempt`` goes back to 0.
- A **transient error** (Prometheus unavailable, or any Kubernetes API error, a status write
  still conflicting after ``status_retries`` re-reads): **retried** after
  ``backoff.next_delay(attempt, interval, rng)``, ``attempt`` counting up. Forbidden (RBAC) is
  retried the same way (capped backoff, never a crash loop) but logged as an error naming the
  missing permission, since only a person can fix it.

One attempt, in order: GET the analysis; parse its spec; GET the target Deployment in the
analysis's own namespace only (404 is ``TargetState(exists=False)``, not an error); measure every
metric (one query each; none when the spec is invalid); ``decide``; carry out the pause
(a merge patch with the Deployment's resourceVersion, ``paused-by`` kept a union) BEFORE the
status write; write status through ``/status`` with the resource's resourceVersion, and on a 409
re-read and re-apply the same decided status (never measure or count again); record the events;
write one history row with its metric rows; refresh the mirror; set ``next_due_at``. Prometheus's
URL and token come from ``settings.SENTINEL`` (see ``tasks``), never from a resource.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_cluster.events import record_events
from sentinel_core import backoff
from sentinel_core.conditions import Annotation
from sentinel_core.decision import (
    Decision,
    Observation,
    PauseTarget,
    Requeue,
    TargetState,
    decide,
    parse_paused_by,
)
from sentinel_core.measurement import Measurement
from sentinel_core.spec import AnalysisSpec, InvalidSpecError, parse_spec
from sentinel_core.status import AnalysisStatus
from sentinel_operator import history
from sentinel_operator.metrics import operator_metrics
from sentinel_operator.prometheus import PrometheusClient

log = logging.getLogger(__name__)

# Re-reads after a 409 on the status write (or the pause patch) before giving up with backoff.
STATUS_RETRIES = 5


class Result(StrEnum):
    """How one reconcile ended; also the ``result`` label of ``sentinel_reconciles_total``."""

    EVALUATED = "evaluated"
    TRANSIENT = "transient"
    FORBIDDEN = "forbidden"
    DELETED = "deleted"
    # An unexpected exception (a bug, the database): logged, backed off, re-raised.
    ERROR = "error"


@dataclass(frozen=True)
class ReconcileResult:
    namespace: str
    name: str
    result: Result
    # Seconds until the analysis is due again; None when it is not requeued (deleted).
    requeue_after: float | None
    decision: Decision | None = None
    error: str = ""
    # Prometheus queries this attempt sent.
    queries: int = 0


class _Deleted(Exception):
    """The analysis disappeared (or was re-created under a new uid) during the attempt."""


@dataclass(frozen=True)
class _Context:
    namespace: str
    name: str
    row: Analysis
    resource: dict[str, Any]
    generation: int
    spec: AnalysisSpec | InvalidSpecError
    started: datetime
    start_mono: float

    @property
    def interval(self) -> float:
        if isinstance(self.spec, AnalysisSpec):
            return self.spec.interval_seconds
        return float(self.row.interval_seconds or 30.0)


class Reconciler:
    """Reconcile analyses against one API server and one Prometheus."""

    def __init__(
        self,
        client: kube.KubeClient,
        prometheus: PrometheusClient,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        instance: str = "",
        status_retries: int = STATUS_RETRIES,
    ) -> None:
        self.client = client
        self.prometheus = prometheus
        self._now = now
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self.instance = instance
        self.status_retries = status_retries

    def reconcile(
        self, namespace: str, name: str, *, due_at: datetime | None = None
    ) -> ReconcileResult:
        """Run one attempt for ``namespace/name``; ``due_at`` is when it was due (for the lag)."""
        metrics = operator_metrics()
        started = self._now()
        start_mono = self._monotonic()
        if due_at is not None:
            metrics.dispatch_lag.observe(max(0.0, (started - due_at).total_seconds()))
        try:
            result = self._reconcile(namespace, name, started, start_mono)
        except Exception:
            # A bug or a database failure: count it, and back off rather than leave the
            # analysis to its dispatch claim (minutes).
            log.exception("reconcile %s/%s failed unexpectedly", namespace, name)
            metrics.reconciles.labels(Result.ERROR.value).inc()
            try:
                self._backoff_key(namespace, name)
            except Exception:
                log.exception("reconcile %s/%s: cannot reschedule it either", namespace, name)
            raise
        metrics.reconciles.labels(result.result.value).inc()
        metrics.evaluation_duration.observe(self._monotonic() - start_mono)
        return result

    # -- one attempt -----------------------------------------------------------------------

    def _reconcile(
        self, namespace: str, name: str, started: datetime, start_mono: float
    ) -> ReconcileResult:
        path = kube.analysis_path(namespace, name)
        try:
            resource = self.client.request("GET", path)
        except kube.NotFound:
            return self._deleted(namespace, name, "")
        except kube.KubeError as exc:
            return self._unreadable(namespace, name, exc, started)

        row, _ = mirror.upsert_from_resource(resource, now=started)
        try:
            spec: AnalysisSpec | InvalidSpecError = parse_spec(resource.get("spec"))
        except InvalidSpecError as exc:
            spec = exc
        meta = resource.get("metadata") or {}
        ctx = _Context(
            namespace=namespace,
            name=name,
            row=row,
            resource=resource,
            generation=int(meta.get("generation") or 0),
            spec=spec,
            started=started,
            start_mono=start_mono,
        )

        measurements: tuple[Measurement, ...] = ()
        try:
            target, target_version = TargetState(exists=False), ""
            if isinstance(spec, AnalysisSpec):
                target, target_version = self._target(namespace, spec)
                measurements = tuple(
                    self.prometheus.measure(metric.name, metric.query) for metric in spec.metrics
                )
            decision = decide(
                Observation(
                    namespace=namespace,
                    name=name,
                    generation=ctx.generation,
                    spec=spec,
                    previous=AnalysisStatus.from_dict(resource.get("status")),
                    target=target,
                    measurements=measurements,
                    now=started,
                )
            )
            # Pause first: a status claiming RolloutPaused over an unpaused target would later
            # read as a person's resume.
            if decision.pause is not None:
                self._pause(decision.pause, target_version)
            written = self._write_status(path, resource, decision)
        except _Deleted:
            return self._deleted(namespace, name, str(meta.get("uid") or ""))
        except kube.KubeError as exc:
            return self._failed(ctx, exc, measurements)
        return self._done(ctx, decision, written, measurements)

    def _target(self, namespace: str, spec: AnalysisSpec) -> tuple[TargetState, str]:
        # Only ever the analysis's own namespace: a spec cannot reach into another one.
        try:
            deployment = self.client.request(
                "GET", kube.deployment_path(namespace, spec.target.name)
            )
        except kube.NotFound:
            return TargetState(exists=False), ""
        version = str((deployment.get("metadata") or {}).get("resourceVersion") or "")
        return TargetState.from_deployment(deployment), version

    def _pause(self, pause: PauseTarget, resource_version: str) -> None:
        """Patch the target paused, keeping ``paused-by`` the union of every analysis."""
        path = kube.deployment_path(pause.namespace, pause.name)
        paused_by = pause.paused_by
        for _ in range(self.status_retries):
            patch = pause.patch()
            patch["metadata"]["annotations"][Annotation.PAUSED_BY.value] = ",".join(paused_by)
            # The precondition makes a concurrent pause by another analysis a 409, not a loss.
            patch["metadata"]["resourceVersion"] = resource_version
            try:
                self.client.request("PATCH", path, body=patch, content_type=kube.MERGE_PATCH)
            except kube.Conflict:
                current = self.client.request("GET", path)
                meta = current.get("metadata") or {}
                resource_version = str(meta.get("resourceVersion") or "")
                others = parse_paused_by((meta.get("annotations") or {}).get(Annotation.PAUSED_BY))
                paused_by = tuple(dict.fromkeys((*others, *pause.paused_by)))
                continue
            operator_metrics().pauses.inc()
            log.warning("paused Deployment %s/%s: %s", pause.namespace, pause.name, pause.reason)
            return
        raise kube.Conflict(f"pausing {path} conflicted {self.status_retries} times", status=409)

    def _write_status(
        self, path: str, resource: Mapping[str, Any], decision: Decision
    ) -> dict[str, Any]:
        """PUT the decided status with the resourceVersion; on 409 re-read and re-apply it."""
        status = decision.status.to_dict()
        uid = (resource.get("metadata") or {}).get("uid")
        body = {**resource, "status": status}
        for _ in range(self.status_retries):
            try:
                return self.client.request("PUT", f"{path}/status", body=body)
            except kube.NotFound as exc:
                raise _Deleted() from exc
            except kube.Conflict:
                try:
                    fresh = self.client.request("GET", path)
                except kube.NotFound as exc:
                    raise _Deleted() from exc
                if (fresh.get("metadata") or {}).get("uid") != uid:
                    raise _Deleted() from None
                # The same decided status: nothing is measured or counted again.
                body = {**fresh, "status": status}
        raise kube.Conflict(
            f"status write of {path} conflicted {self.status_retries} times", status=409
        )

    # -- endings ---------------------------------------------------------------------------

    def _done(
        self,
        ctx: _Context,
        decision: Decision,
        written: Mapping[str, Any],
        measurements: tuple[Measurement, ...],
    ) -> ReconcileResult:
        now = self._now()
        record_events(self.client, written, decision.events, now=now, instance=self.instance)
        mirror.upsert_from_resource(written, now=now)
        spec = ctx.spec if isinstance(ctx.spec, AnalysisSpec) else None
        history.record_attempt(
            ctx.row,
            self._attempt(ctx, now, decision.status.failures),
            decision.history,
            spec=spec,
            measurements=measurements,
        )
        if decision.requeue == Requeue.AFTER_INTERVAL:
            attempt, delay = 0, decision.interval_seconds
            result = Result.EVALUATED
        else:
            attempt = ctx.row.backoff_attempt + 1
            delay = backoff.next_delay(attempt, decision.interval_seconds, self._rng)
            result = Result.TRANSIENT
        history.reschedule(
            ctx.row.pk,
            generation=ctx.generation,
            due_at=now + timedelta(seconds=delay),
            backoff_attempt=attempt,
        )
        return ReconcileResult(
            ctx.namespace,
            ctx.name,
            result,
            delay,
            decision=decision,
            error=decision.history.error_message,
            queries=len(measurements),
        )

    def _failed(
        self, ctx: _Context, exc: kube.KubeError, measurements: tuple[Measurement, ...]
    ) -> ReconcileResult:
        now = self._now()
        forbidden = isinstance(exc, kube.Forbidden)
        attempt = ctx.row.backoff_attempt + 1
        delay = backoff.next_delay(attempt, ctx.interval, self._rng)
        key = f"{ctx.namespace}/{ctx.name}"
        if forbidden:
            log.error(
                "reconcile %s: the Kubernetes API refused a request (check the operator's RBAC): "
                "%s; retrying in %.0f s",
                key,
                exc,
                delay,
            )
        else:
            log.warning(
                "reconcile %s: Kubernetes API error: %s; retrying in %.1f s", key, exc, delay
            )
        spec = ctx.spec if isinstance(ctx.spec, AnalysisSpec) else None
        previous = AnalysisStatus.from_dict(ctx.resource.get("status"))
        history.record_attempt(
            ctx.row,
            self._attempt(ctx, now, previous.failures),
            history.error_entry(str(exc), measurements, spec),
            spec=spec,
            measurements=measurements,
            error_reason=history.KUBERNETES_FORBIDDEN
            if forbidden
            else history.KUBERNETES_UNAVAILABLE,
        )
        history.reschedule(
            ctx.row.pk,
            generation=ctx.generation,
            due_at=now + timedelta(seconds=delay),
            backoff_attempt=attempt,
        )
        return ReconcileResult(
            ctx.namespace,
            ctx.name,
            Result.FORBIDDEN if forbidden else Result.TRANSIENT,
            delay,
            error=str(exc),
            queries=len(measurements),
        )

    def _unreadable(
        self, namespace: str, name: str, exc: kube.KubeError, started: datetime
    ) -> ReconcileResult:
        """The analysis itself could not be read: back off its mirror row by key."""
        forbidden = isinstance(exc, kube.Forbidden)
        row, delay = self._backoff_key(namespace, name)
        level = logging.ERROR if forbidden else logging.WARNING
        log.log(level, "reconcile %s/%s: cannot read it: %s", namespace, name, exc)
        if row is not None:
            now = self._now()
            history.record_attempt(
                row,
                history.Attempt(
                    started_at=started,
                    finished_at=now,
                    duration_seconds=max(0.0, (now - started).total_seconds()),
                    generation=row.generation,
                    failures_after=row.failures,
                ),
                history.error_entry(str(exc), (), None),
                spec=None,
                measurements=(),
                error_reason=history.KUBERNETES_FORBIDDEN
                if forbidden
                else history.KUBERNETES_UNAVAILABLE,
            )
        return ReconcileResult(
            namespace,
            name,
            Result.FORBIDDEN if forbidden else Result.TRANSIENT,
            delay,
            error=str(exc),
        )

    def _backoff_key(self, namespace: str, name: str) -> tuple[Analysis | None, float]:
        """Back off the live mirror row of ``namespace/name``; return it and the delay."""
        row = Analysis.objects.live().filter(namespace=namespace, name=name).first()
        interval = float(row.interval_seconds) if row is not None else 30.0
        attempt = (row.backoff_attempt if row is not None else 0) + 1
        delay = backoff.next_delay(attempt, interval, self._rng)
        if row is not None:
            history.reschedule(
                row.pk,
                generation=row.generation,
                due_at=self._now() + timedelta(seconds=delay),
                backoff_attempt=attempt,
            )
        return row, delay

    def _deleted(self, namespace: str, name: str, uid: str) -> ReconcileResult:
        mirror.mark_deleted(namespace, name, uid, now=self._now())
        return ReconcileResult(namespace, name, Result.DELETED, None)

    def _attempt(self, ctx: _Context, now: datetime, failures: int) -> history.Attempt:
        return history.Attempt(
            started_at=ctx.started,
            finished_at=now,
            duration_seconds=max(0.0, self._monotonic() - ctx.start_mono),
            generation=ctx.generation,
            failures_after=failures,
        )
