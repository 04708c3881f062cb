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
  still conflicting after ``writes.CONFLICT_RETRIES`` re-reads): **retried** after
  ``backoff.next_delay(attempt, interval, rng)``, ``attempt`` counting up. Forbidden (RBAC) is
  retried the same way (capped backoff, never a crash loop) but logged as an error naming the
  missing permission, since only a person can fix it.

One attempt, in order: GET the analysis; parse its spec; GET the target Deployment in the
analysis's own namespace only (404 is ``TargetState(exists=False)``, not an error); measure every
metric (one query each; none when the spec is invalid); ``decide``; carry out the pause
(``writes.pause``: a merge patch with the Deployment's resourceVersion, ``paused-by`` kept a
union) BEFORE the status write; write status through ``/status`` (``writes.write_status``: on a
409 re-read and re-apply the same decided status, never measure or count again). Every attempt
then ends in one ``ReconcileOutcome``, which ``outcome.record`` writes down: events, mirror,
history row, next due time, metrics. Prometheus's URL and token come from ``settings.SENTINEL``
(see ``tasks``), never from a resource.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from analyses import mirror
from analyses.models import Analysis
from notifications import store as notifications
from sentinel_cluster import kube, writes
from sentinel_cluster.replicasets import compared_hashes, newest_replicaset_created
from sentinel_core import backoff
from sentinel_core.conditions import ErrorReason
from sentinel_core.decision import Observation, decide, interrupted
from sentinel_core.measurement import Measurement
from sentinel_core.resource import AnalysisResource
from sentinel_core.rollout import baseline_instant, next_rollout, template_hash
from sentinel_core.spec import DEFAULT_INTERVAL_SECONDS, AnalysisSpec
from sentinel_core.status import Rollout
from sentinel_core.target import TargetState
from sentinel_operator.history import Attempt
from sentinel_operator.measuring import NO_HASHES, measure_from
from sentinel_operator.metrics import operator_metrics
from sentinel_operator.outcome import ReconcileOutcome, Result, record
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Context:
    """One attempt's inputs, read before anything is measured."""

    resource: AnalysisResource
    raw: Mapping[str, Any]
    row: Analysis
    started: datetime
    start_mono: float


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
        providers: Providers | None = None,
    ) -> None:
        self.client = client
        self.prometheus = prometheus
        # SPEC §10.1: each metric's provider; without a providers file only ``default``.
        self.providers = providers if providers is not None else Providers.single(prometheus)
        self._now = now
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self.instance = instance

    def reconcile(
        self, namespace: str, name: str, *, due_at: datetime | None = None
    ) -> ReconcileOutcome:
        """Run one attempt for ``namespace/name``, record its outcome and return it.

        ``due_at`` is when the analysis was due, for the dispatch lag.
        """
        metrics = operator_metrics()
        started = self._now()
        start_mono = self._monotonic()
        if due_at is not None:
            metrics.dispatch_lag.observe(max(0.0, (started - due_at).total_seconds()))
        try:
            outcome = self._attempt(namespace, name, started, start_mono)
        except Exception:
            # A bug or a database failure: back off rather than leave the analysis to its
            # dispatch claim (minutes), then let django-q2 see the exception.
            log.exception("reconcile %s/%s failed unexpectedly", namespace, name)
            try:
                self._record(self._backed_off(namespace, name, Result.ERROR, ""))
            except Exception:
                log.exception("reconcile %s/%s: cannot reschedule it either", namespace, name)
            raise
        self._record(outcome)
        metrics.evaluation_duration.observe(self._monotonic() - start_mono)
        return outcome

    def _record(self, outcome: ReconcileOutcome) -> None:
        record(outcome, client=self.client, now=self._now(), instance=self.instance)

    # -- one attempt -----------------------------------------------------------------------

    def _attempt(
        self, namespace: str, name: str, started: datetime, start_mono: float
    ) -> ReconcileOutcome:
        try:
            raw = self.client.request("GET", kube.analysis_path(namespace, name))
        except kube.NotFound:
            return ReconcileOutcome(namespace, name, Result.DELETED)
        except kube.KubeError as exc:
            return self._unreadable(namespace, name, exc, started)

        row, _ = mirror.upsert_from_resource(raw, now=started)
        resource = AnalysisResource.read(raw)
        ctx = _Context(resource, raw, row, started, start_mono)
        spec = resource.valid_spec
        measurements: tuple[Measurement, ...] = ()
        rollout = resource.status.rollout
        try:
            target, deployment = TargetState(exists=False), None
            if spec is not None:
                target, deployment = self._target(namespace, spec)
                rollout = self._rollout(rollout, deployment, started)
                self.providers.refresh()
                # compare (SPEC §3.2): one list of the target's ReplicaSets per evaluation.
                compares = any(metric.compare is not None for metric in spec.metrics)
                hashes = (
                    compared_hashes(self.client, deployment)
                    if compares and deployment is not None
                    else NO_HASHES
                )
                measurements = tuple(
                    measure_from(
                        self.providers,
                        namespace,
                        metric,
                        baseline_at=baseline_instant(metric, rollout, started),
                        now=started,
                        step=spec.interval_seconds,
                        hashes=hashes,
                    )
                    for metric in spec.metrics
                )
            decision = decide(
                Observation(
                    namespace=namespace,
                    name=name,
                    generation=resource.generation,
                    spec=resource.spec,
                    previous=resource.status,
                    target=target,
                    measurements=measurements,
                    now=started,
                    rollout=rollout,
                    notify_context=notifications.context_for(row, resource.status),
                )
            )
            # Pause first: a status claiming RolloutPaused over an unpaused target would later
            # read as a person's resume.
            if decision.pause is not None and deployment is not None:
                writes.pause(self.client, decision.pause, deployment)
                operator_metrics().pauses.inc()
                log.warning(
                    "paused Deployment %s/%s: %s",
                    decision.pause.namespace,
                    decision.pause.name,
                    decision.pause.reason,
                )
            status = decision.status.to_dict()
            written = writes.write_status(self.client, raw, lambda _fresh: status)
        except writes.AnalysisGone:
            return ReconcileOutcome(namespace, name, Result.DELETED, uid=resource.uid)
        except kube.KubeError as exc:
            return self._cut_short(ctx, exc, measurements)

        transient = decision.transient
        attempt = ctx.row.backoff_attempt + 1 if transient else 0
        delay = (
            backoff.next_delay(attempt, decision.interval_seconds, self._rng)
            if transient
            else decision.interval_seconds
        )
        return ReconcileOutcome(
            namespace,
            name,
            Result.TRANSIENT if transient else Result.EVALUATED,
            requeue_after=delay,
            backoff_attempt=attempt,
            row=ctx.row,
            attempt=self._facts(ctx, decision.status.failures),
            history=decision.history,
            spec=spec,
            measurements=measurements,
            decision=decision,
            written=written,
            error=decision.history.error_message,
        )

    def _target(
        self, namespace: str, spec: AnalysisSpec
    ) -> tuple[TargetState, dict[str, Any] | None]:
        # Only ever the analysis's own namespace: a spec cannot reach into another one.
        try:
            deployment = self.client.request(
                "GET", kube.deployment_path(namespace, spec.target.name)
            )
        except kube.NotFound:
            return TargetState(exists=False), None
        return TargetState.from_deployment(deployment), deployment

    def _rollout(
        self, previous: Rollout | None, deployment: Mapping[str, Any] | None, now: datetime
    ) -> Rollout | None:
        """Return the target's rollout: a changed pod template starts a new one (SPEC §3.1)."""
        if deployment is None:
            return previous
        current = template_hash((deployment.get("spec") or {}).get("template") or {})
        newest = None
        if previous is not None and previous.template_hash != current:
            # Only on a change: one list per rollout, not one per evaluation.
            newest = newest_replicaset_created(self.client, deployment, current)
        return next_rollout(previous, current, newest_replicaset=newest, now=now)

    # -- endings other than an evaluation --------------------------------------------------

    def _cut_short(
        self, ctx: _Context, exc: kube.KubeError, measurements: tuple[Measurement, ...]
    ) -> ReconcileOutcome:
        """The Kubernetes API failed after the analysis was read: back off, keep the values."""
        resource = ctx.resource
        forbidden = isinstance(exc, kube.Forbidden)
        attempt = ctx.row.backoff_attempt + 1
        delay = backoff.next_delay(attempt, resource.summary.interval_seconds, self._rng)
        self._log_refusal(resource.key, exc, forbidden, delay)
        return ReconcileOutcome(
            resource.namespace,
            resource.name,
            Result.FORBIDDEN if forbidden else Result.TRANSIENT,
            requeue_after=delay,
            backoff_attempt=attempt,
            row=ctx.row,
            attempt=self._facts(ctx, resource.status.failures),
            history=interrupted(
                resource.valid_spec,
                measurements,
                reason=_error_reason(forbidden),
                message=str(exc),
                rollout=resource.status.rollout,
            ),
            spec=resource.valid_spec,
            measurements=measurements,
            error=str(exc),
        )

    def _unreadable(
        self, namespace: str, name: str, exc: kube.KubeError, started: datetime
    ) -> ReconcileOutcome:
        """The analysis itself could not be read: back off its mirror row by key."""
        forbidden = isinstance(exc, kube.Forbidden)
        level = logging.ERROR if forbidden else logging.WARNING
        log.log(level, "reconcile %s/%s: cannot read it: %s", namespace, name, exc)
        outcome = self._backed_off(
            namespace, name, Result.FORBIDDEN if forbidden else Result.TRANSIENT, str(exc)
        )
        row = outcome.row
        if row is None:
            return outcome
        now = self._now()
        facts = Attempt(
            started_at=started,
            finished_at=now,
            duration_seconds=max(0.0, (now - started).total_seconds()),
            generation=row.generation,
            failures_after=row.failures,
        )
        entry = interrupted(None, (), reason=_error_reason(forbidden), message=str(exc))
        return ReconcileOutcome(
            namespace,
            name,
            outcome.result,
            requeue_after=outcome.requeue_after,
            backoff_attempt=outcome.backoff_attempt,
            row=row,
            attempt=facts,
            history=entry,
            error=str(exc),
        )

    def _backed_off(
        self, namespace: str, name: str, result: Result, error: str
    ) -> ReconcileOutcome:
        """Return an outcome backing off the live mirror row of ``namespace/name`` by key."""
        row = Analysis.objects.live().filter(namespace=namespace, name=name).first()
        interval = float(row.interval_seconds) if row is not None else DEFAULT_INTERVAL_SECONDS
        attempt = (row.backoff_attempt if row is not None else 0) + 1
        return ReconcileOutcome(
            namespace,
            name,
            result,
            requeue_after=backoff.next_delay(attempt, interval, self._rng),
            backoff_attempt=attempt,
            row=row,
            error=error,
        )

    def _facts(self, ctx: _Context, failures: int) -> Attempt:
        now = self._now()
        return Attempt(
            started_at=ctx.started,
            finished_at=now,
            duration_seconds=max(0.0, self._monotonic() - ctx.start_mono),
            generation=ctx.resource.generation,
            failures_after=failures,
        )

    @staticmethod
    def _log_refusal(key: str, exc: kube.KubeError, forbidden: bool, delay: float) -> None:
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


def _error_reason(forbidden: bool) -> ErrorReason:
    return ErrorReason.KUBERNETES_FORBIDDEN if forbidden else ErrorReason.KUBERNETES_UNAVAILABLE
