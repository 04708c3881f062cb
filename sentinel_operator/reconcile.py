"""Reconcile one RolloutAnalysis by key: read, measure, decide, act, write; then record.

``Reconciler.reconcile(namespace, name)`` is called by the django-q2 task
(``tasks.reconcile_batch_task``, once per member) that the due-time dispatcher queues. It is
level-based: it reads the current state every time and never looks at the event that made the
analysis due.

The contract, once (controller-runtime's; docs/status.md#requeue-and-backoff):

- The resource is gone (404): ``Deleted``; the mirror row of the incarnation the attempt was for
  (its uid, as dispatched) is marked deleted, which drops it from the dispatch queue at once; a
  new incarnation created meanwhile under the same name is left alone. Nothing is requeued (a
  missing object is success).
- An evaluation got answers from Prometheus (any verdict, also an invalid query or spec, also a
  missing target): ``Evaluated``; the status is written and the analysis is **requeued** one
  ``interval`` after its due time (``sentinel_core.requeue``), its backoff count back to 0.
- A **transient error** (Prometheus unavailable: ``Evaluated`` with a transient decision; any
  Kubernetes API error: ``CutShort`` or ``Unreadable``; a status write still conflicting after
  ``writes.CONFLICT_RETRIES`` re-reads): **retried** after ``backoff.next_delay``, the count one
  up. Forbidden (RBAC) is retried the same way (capped backoff, never a crash loop) but logged
  as an error naming the refused request, since only a person can fix it.

One attempt, in order, each step once: GET the analysis and read it (``AnalysisResource.read``,
the one parse of the attempt, handed along from here); GET the target (its kind) in the
analysis's own namespace only (404 is ``TargetState(exists=False)``, not an error); measure
every metric (none when the spec is invalid); ``decide``; carry out the pause (``writes.pause``),
or remove a pause record left stale or untrustworthy (``writes.clean_up``), BEFORE the status
write; write status through ``/status`` (``writes.write_status``: on a 409
re-read and re-apply the decided status, never measure or count again, keeping a person's
resume made in between and announcing it once: ``sentinel_core.decision.after_conflict``). The
attempt then ends in one ``outcome.Outcome``, which ``outcome.record`` writes down: events, then
mirror, history row, notifications and next due time in one transaction, then metrics. Nothing is
written to the database before ``decide``; the one thing read for it (the notification context,
only during an outage) is read once and handed in. Prometheus's URL and token come from
``settings.SENTINEL`` (see ``tasks``), never from a resource.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from analyses import mirror
from notifications import store as notifications
from sentinel_cluster import kube, revisions, writes
from sentinel_cluster.replicasets import compared_hashes, newest_replicaset_created
from sentinel_core.conditions import ConditionType
from sentinel_core.decision import Decision, Observation, after_conflict, decide
from sentinel_core.kinds import DEPLOYMENT, KINDS
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import Situation, kind_of
from sentinel_core.pause_record import read_record
from sentinel_core.resource import AnalysisResource
from sentinel_core.rollout import (
    ControllerRevisions,
    next_revision_rollout,
    next_rollout,
    template_hash,
)
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus, Rollout
from sentinel_core.status_check import trusted
from sentinel_core.target import TargetState
from sentinel_operator import templating
from sentinel_operator.history import Attempt
from sentinel_operator.measuring import NO_HASHES, measure_from
from sentinel_operator.metrics import operator_metrics
from sentinel_operator.outcome import (
    Crashed,
    CutShort,
    Deleted,
    Due,
    Evaluated,
    Outcome,
    Unreadable,
    record,
)
from sentinel_operator.providers import Providers

log = logging.getLogger(__name__)


class Reconciler:
    """Reconcile analyses against one API server and the configured metric providers."""

    def __init__(
        self,
        client: kube.KubeClient,
        providers: Providers,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        instance: str = "",
    ) -> None:
        self.client = client
        # Each metric's provider (docs/operations.md#metric-providers); tests: Providers.single.
        self.providers = providers
        self._now = now
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self.instance = instance

    def reconcile(
        self,
        namespace: str,
        name: str,
        *,
        due_at: datetime | None = None,
        uid: str | None = None,
    ) -> Outcome:
        """Run one attempt for ``namespace/name``, record its outcome and return it.

        ``due_at`` is when the analysis was due, for the dispatch lag and the requeue, which
        counts from it (docs/status.md#requeue-and-backoff). ``uid`` is the incarnation
        the attempt is for (the dispatcher's due row); None reads it from the mirror, before the
        analysis is read, so that a 404 marks that incarnation and no later one.
        """
        metrics = operator_metrics()
        started = self._now()
        start_mono = self._monotonic()
        if due_at is not None:
            metrics.dispatch_lag.observe(max(0.0, (started - due_at).total_seconds()))
        if uid is None:
            uid = mirror.live_uid(namespace, name)
        try:
            outcome = self._attempt(namespace, name, uid, started, start_mono)
        except Exception:
            # A bug or a database failure: back off rather than leave the analysis to its
            # dispatch claim (minutes), then let django-q2 see the exception.
            log.exception("reconcile %s/%s failed unexpectedly", namespace, name)
            try:
                self._record(Crashed(namespace, name))
            except Exception:
                log.exception("reconcile %s/%s: cannot reschedule it either", namespace, name)
            raise
        scheduled = self._record(outcome, due_at)
        if isinstance(outcome, CutShort | Unreadable):
            _log_refusal(outcome, scheduled, self._now())
        metrics.evaluation_duration.observe(self._monotonic() - start_mono)
        return outcome

    def _record(self, outcome: Outcome, due_at: datetime | None = None) -> Due | None:
        return record(
            outcome,
            client=self.client,
            now=self._now(),
            rng=self._rng,
            instance=self.instance,
            due_at=due_at,
        )

    # -- one attempt -----------------------------------------------------------------------

    def _attempt(
        self, namespace: str, name: str, uid: str, started: datetime, start_mono: float
    ) -> Outcome:
        try:
            raw = self.client.request("GET", kube.analysis_path(namespace, name))
        except kube.NotFound:
            return Deleted(namespace, name, uid=uid)
        except kube.KubeError as exc:
            return Unreadable(namespace, name, exc, started, self._now())

        try:
            resolution = templating.resolve_object(self.client, raw)
        except kube.KubeError as exc:
            return Unreadable(namespace, name, exc, started, self._now())
        resource = _resolved_resource(raw, resolution)
        spec = resource.valid_spec
        measurements: tuple[Measurement, ...] = ()
        # The status as decide will go on from it: the rollout and each sequential metric's
        # steps are read from there (docs/status.md#what-the-operator-trusts-in-its-status).
        status = trusted(resource.status, spec=spec, generation=resource.generation, now=started)
        rollout = status.rollout
        try:
            target, workload = TargetState(exists=False), None
            left_behind: tuple[str, ...] = ()
            if spec is not None:
                target, workload = self._target(namespace, spec)
                left_behind = self._left_behind(resource, spec)
                read = self._revisions(spec.target.kind, workload)
                rollout = self._rollout(spec.target.kind, rollout, workload, read, started)
                measurements = self._measure(
                    resource, status, spec, workload, read, rollout, started
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
                    notify_context=notifications.context_for(resource.uid, resource.status),
                    left_behind=left_behind,
                )
            )
            # Pause first: a status claiming RolloutPaused over an unpaused target would later
            # read as a person's resume.
            if decision.pause is not None and workload is not None:
                writes.pause(self.client, decision.pause, workload)
                operator_metrics().pauses.inc()
                log.warning(
                    "paused %s %s/%s: %s",
                    decision.pause.kind,
                    decision.pause.namespace,
                    decision.pause.name,
                    decision.pause.reason,
                )
            elif target.needs_clean_up and workload is not None and spec is not None:
                # A record a person left stale (a resume by hand) or made untrustworthy: it goes,
                # so that no later release acts on it (docs/status.md#pausing-each-kind).
                writes.clean_up(
                    self.client, spec.target.kind, namespace, spec.target.name, workload
                )
            write = _StatusWrite(raw, resource.status, decision, resolution.templates)
            answer = writes.write_status(self.client, raw, write.status_for)
        except writes.AnalysisGone:
            return Deleted(namespace, name, uid=resource.uid)
        except kube.KubeError as exc:
            return CutShort(resource, exc, measurements, self._facts(resource, started, start_mono))
        return Evaluated(
            resource.answered(answer, write.written),
            write.decision,
            measurements,
            self._facts(resource, started, start_mono, failures=write.written.failures),
        )

    def _target(
        self, namespace: str, spec: AnalysisSpec
    ) -> tuple[TargetState, dict[str, Any] | None]:
        # Only ever the analysis's own namespace: a spec cannot reach into another one.
        kind = spec.target.kind
        try:
            workload = self.client.request(
                "GET", kube.workload_path(kind, namespace, spec.target.name)
            )
        except kube.NotFound:
            return TargetState(exists=False), None
        return TargetState.from_workload(kind, workload), workload

    def _left_behind(self, resource: AnalysisResource, spec: AnalysisSpec) -> tuple[str, ...]:
        """Return the other targets this analysis still holds after its spec was edited.

        Read only in the attempt that sees a new generation of an analysis whose status claims a
        pause (a kubectl edit may have pointed it elsewhere; the REST API and the admin refuse
        that), so a steady state costs nothing: one list per kind, in its own namespace.
        """
        status = resource.status
        seen = status.observed_generation
        if not status.is_true(ConditionType.ROLLOUT_PAUSED) or seen in (None, resource.generation):
            return ()
        found = []
        for kind in KINDS:
            listed = self.client.request("GET", kube.workloads_path(kind, resource.namespace))
            for item in listed.get("items") or []:
                name = str((item.get("metadata") or {}).get("name") or "")
                if (kind, name) == (spec.target.kind, spec.target.name):
                    continue
                if resource.key in read_record(kind, item).holders:
                    found.append(f"{kind} {name}")
        return tuple(found)

    def _revisions(
        self, kind: str, workload: Mapping[str, Any] | None
    ) -> ControllerRevisions | None:
        """Return what a StatefulSet's or DaemonSet's controller rolls out (read once)."""
        if workload is None or kind == DEPLOYMENT:
            return None
        return revisions.read(self.client, kind, workload)

    def _rollout(
        self,
        kind: str,
        previous: Rollout | None,
        workload: Mapping[str, Any] | None,
        read: ControllerRevisions | None,
        now: datetime,
    ) -> Rollout | None:
        """Return the target's rollout (docs/status.md#rollouts-statusrollout).

        A Deployment's is a changed pod template, begun when its new ReplicaSet was created; a
        StatefulSet's or DaemonSet's a new revision its controller rolls out, begun when that
        ControllerRevision was created. docs/resource.md describes the baseline before it.
        """
        if workload is None:
            return previous
        # The creation time is read only on a change: one list per rollout, not per evaluation.
        if read is not None:
            created = None
            key = read.update
            new = previous.template_hash != key if previous is not None else read.rolling
            if read.caught_up and key and new:
                created = revisions.revision_created(self.client, kind, workload, key)
            return next_revision_rollout(previous, read, created=created, now=now)
        current = template_hash((workload.get("spec") or {}).get("template") or {})
        newest = None
        if previous is not None and previous.template_hash != current:
            newest = newest_replicaset_created(self.client, workload, current)
        return next_rollout(previous, current, newest_replicaset=newest, now=now)

    def _measure(
        self,
        resource: AnalysisResource,
        status: AnalysisStatus,
        spec: AnalysisSpec,
        workload: Mapping[str, Any] | None,
        read: ControllerRevisions | None,
        rollout: Rollout | None,
        now: datetime,
    ) -> tuple[Measurement, ...]:
        """Measure every metric of ``spec`` at its provider, each query at most once."""
        self.providers.refresh()
        # New pods against old pods (docs/resource.md), for the metric kinds that need the two
        # sides: one list of a Deployment's ReplicaSets; the other target kinds' sides were read
        # with their rollout (``read``).
        compares = any(kind_of(metric).sides for metric in spec.metrics)
        hashes = NO_HASHES
        if compares and read is not None:
            hashes = read.hashes
        elif compares and workload is not None:
            hashes = compared_hashes(self.client, workload)
        return tuple(
            measure_from(
                self.providers,
                resource.namespace,
                metric,
                kind_of(metric).facts(
                    metric, _situation(resource, status, spec, rollout, now, hashes)
                ),
            )
            for metric in spec.metrics
        )

    def _facts(
        self,
        resource: AnalysisResource,
        started: datetime,
        start_mono: float,
        *,
        failures: int | None = None,
    ) -> Attempt:
        """Return the history row's facts; ``failures`` after it (unchanged when not decided)."""
        return Attempt(
            started_at=started,
            finished_at=self._now(),
            duration_seconds=max(0.0, self._monotonic() - start_mono),
            generation=resource.generation,
            failures_after=resource.status.failures if failures is None else failures,
        )


def _situation(
    resource: AnalysisResource,
    status: AnalysisStatus,
    spec: AnalysisSpec,
    rollout: Rollout | None,
    now: datetime,
    hashes: tuple[str | None, tuple[str, ...]],
) -> Situation:
    """Return the evaluation as the metric kinds see it when they say what to measure from.

    The kinds read it (a baseline's instant, where evidence continues) from ``status``: the
    status as the core will see it, checked (docs/status.md#what-the-operator-trusts-in-its-status).
    """
    return Situation(
        status=status,
        spec=spec,
        generation=resource.generation,
        rollout=rollout,
        now=now,
        target_kind=spec.target.kind,
        new_hash=hashes[0],
        old_hashes=hashes[1],
    )


class _StatusWrite:
    """The status one attempt writes: the decided one, and after a 409 ``after_conflict``'s.

    ``decision`` is the decision as it stands after the last write (its status is what that
    write carried, for the mirror and the history row; its actions what ``outcome.record``
    carries out), ``written`` that status.
    """

    def __init__(
        self,
        raw: Mapping[str, Any],
        read: AnalysisStatus,
        decision: Decision,
        templates: tuple[dict[str, Any], ...] | None = None,
    ) -> None:
        self._raw, self._read, self._decided = raw, read, decision
        self.decision = decision
        # status.templates: the template generations the spec was resolved from.
        self._templates = templates

    @property
    def written(self) -> AnalysisStatus:
        return self.decision.status

    def status_for(self, fresh: Mapping[str, Any]) -> Mapping[str, Any]:
        if fresh is not self._raw:
            # A 409: someone wrote in between; a person's resume must not be overwritten, nor
            # announced twice.
            self.decision = after_conflict(
                self._decided,
                read=self._read,
                fresh=AnalysisStatus.from_dict(fresh.get("status")),
            )
        written = self.written.to_dict()
        if self._templates is not None:
            written["templates"] = list(self._templates)
        return written


def _resolved_resource(
    raw: Mapping[str, Any], resolution: templating.Resolution
) -> AnalysisResource:
    """Return the analysis as read with its templates resolved (docs/templates.md).

    A template whose generation changed since the status was written is a spec edit: the
    previous status is read as one of a generation the spec never had (-1), so the decision
    core and the metric kinds count afresh, exactly as after an edit of the analysis.
    """
    resource = AnalysisResource.read(resolution.obj)
    if resolution.obj is not raw:
        # The mirror keeps the spec as written, templates and args included.
        resource = replace(resource, raw_spec=dict(raw.get("spec") or {}))
    if resolution.error is not None:
        resource = replace(resource, spec=resolution.error)
    if resolution.changed and resource.status.observed_generation is not None:
        resource = replace(resource, status=replace(resource.status, observed_generation=-1))
    return resource


def _log_refusal(outcome: CutShort | Unreadable, scheduled: Due | None, now: datetime) -> None:
    """Log a Kubernetes API failure: a refusal (RBAC) as an error, anything else as a warning."""
    if isinstance(outcome, CutShort):
        key = outcome.resource.key
    else:
        key = f"{outcome.namespace}/{outcome.name}"
    retry = (
        f"retrying in {(scheduled.at - now).total_seconds():.1f} s"
        if scheduled is not None
        else "not mirrored, so not retried"
    )
    if isinstance(outcome.error, kube.Forbidden):
        log.error(
            "reconcile %s: the Kubernetes API refused a request (check the operator's RBAC): "
            "%s; %s",
            key,
            outcome.error,
            retry,
        )
    else:
        log.warning("reconcile %s: Kubernetes API error: %s; %s", key, outcome.error, retry)
