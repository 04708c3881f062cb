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

One attempt, in order, each step once: the analysis as the operator's caches handed it with the
task, else GET it, and read it (``AnalysisResource.read``, the one parse of the attempt, handed
along from here); the target (its kind) in the analysis's own namespace only, from the task or
GET (404 is ``TargetState(exists=False)``, not an error; always GET while the status claims the
pause, since a copy behind a person's resume would decide the count), and its ReplicaSets or
ControllerRevisions from the task when it carries that incarnation's, else listed; measure
every metric (none when the spec is invalid); ``decide``; carry out the pause (``writes.pause``),
or remove a pause record left stale or untrustworthy (``writes.clean_up``), BEFORE the status
write; write status through ``/status`` (``writes.write_status``: on a 409
re-read and re-apply the decided status, never measure or count again, keeping a person's
resume made in between and announcing it once: ``sentinel_core.decision.after_conflict``). What
came from the caches is never written from when stale: a pause is confirmed against the API
server first, and a 409 whose fresh copy shows the cached one was behind makes the attempt
again from the fresh copy (docs/architecture.md#reads-from-caches). The
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
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from analyses import mirror
from notifications import store as notifications
from sentinel_cluster import kube, revisions, writes
from sentinel_cluster.informer import Snapshot
from sentinel_cluster.replicasets import compared_hashes
from sentinel_core.conditions import ConditionType
from sentinel_core.decision import Decision, Observation, after_conflict, decide
from sentinel_core.kinds import KINDS
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import Situation, kind_of
from sentinel_core.pause_upgrade import adoption_patch
from sentinel_core.resource import AnalysisResource
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus, Rollout
from sentinel_core.status_check import check
from sentinel_core.status_seal import seal, unseal
from sentinel_core.workload_kinds import (
    ControllerRevisions,
    TargetState,
    kind_named,
    read_record,
)
from sentinel_operator import sealing, templating
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
        seal_key: bytes | None = None,
    ) -> None:
        self.client = client
        # Each metric's provider (docs/operations.md#metric-providers); tests: Providers.single.
        self.providers = providers
        self._now = now
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self.instance = instance
        # What status.seal is made and checked with (sentinel_operator/sealing.py).
        self._seal_key = seal_key if seal_key is not None else sealing.seal_key()

    def reconcile(
        self,
        namespace: str,
        name: str,
        *,
        due_at: datetime | None = None,
        uid: str | None = None,
        cached: Snapshot | None = None,
    ) -> Outcome:
        """Run one attempt for ``namespace/name``, record its outcome and return it.

        ``due_at`` is when the analysis was due, for the dispatch lag and the requeue, which
        counts from it (docs/status.md#requeue-and-backoff). ``uid`` is the incarnation
        the attempt is for (the dispatcher's due row); None reads it from the mirror, before the
        analysis is read, so that a 404 marks that incarnation and no later one. ``cached`` is
        what the operator's caches held for it (``caches.Caches.snapshot``): read from there
        instead of the API server (docs/architecture.md#reads-from-caches).
        """
        metrics = operator_metrics()
        started = self._now()
        start_mono = self._monotonic()
        if due_at is not None:
            metrics.dispatch_lag.observe(max(0.0, (started - due_at).total_seconds()))
        if uid is None:
            uid = mirror.live_uid(namespace, name)
        try:
            reads = _Reads.of(cached, namespace, name, uid)
            try:
                outcome = self._attempt(namespace, name, uid, started, start_mono, reads)
            except _Stale as stale:
                # The caches were behind the API server: the attempt is made again from what
                # was just read, nothing written or counted from the stale copy.
                log.info("reconcile %s/%s: the caches were behind; made again", namespace, name)
                outcome = self._attempt(namespace, name, uid, started, start_mono, stale.reads)
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
        self,
        namespace: str,
        name: str,
        uid: str,
        started: datetime,
        start_mono: float,
        reads: _Reads,
    ) -> Outcome:
        raw = reads.analysis
        if raw is None:
            try:
                raw = self.client.request("GET", kube.analysis_path(namespace, name))
            except kube.NotFound:
                return Deleted(namespace, name, uid=uid)
            except kube.KubeError as exc:
                return Unreadable(namespace, name, exc, started, self._now())

        try:
            resolution = templating.resolve_object(self.client, raw, reads.templates)
        except kube.KubeError as exc:
            return Unreadable(namespace, name, exc, started, self._now())
        resource = _resolved_resource(raw, resolution)
        spec = resource.valid_spec
        measurements: tuple[Measurement, ...] = ()
        # The status as decide will go on from it: what the operator cannot have written, then
        # what it did not seal, discarded; the rollout and each sequential metric's steps are
        # read from there (docs/status.md#what-the-operator-trusts-in-its-status).
        checked = check(resource.status, spec=spec, generation=resource.generation, now=started)
        sealed = unseal(
            checked.status,
            (raw.get("status") or {}).get("seal"),
            key=self._seal_key,
            uid=resource.uid,
        )
        status = sealed.status
        rollout = status.rollout
        try:
            target, workload = TargetState(exists=False), None
            left_behind: tuple[str, ...] = ()
            adopted = ""
            if spec is not None:
                claimed = status.is_true(ConditionType.ROLLOUT_PAUSED)
                target, workload = self._target(namespace, spec, reads, claimed=claimed)
                if workload is not None and claimed:
                    target, workload, adopted = self._adopt(namespace, name, spec, workload, target)
                left_behind = self._left_behind(resource, spec)
                owned = reads.owned_reader(self.client, spec, workload)
                read = self._revisions(spec.target.kind, workload, owned)
                rollout = self._rollout(spec.target.kind, rollout, workload, read, started, owned)
                measurements = self._measure(
                    resource, status, spec, workload, read, rollout, started, owned
                )
            decision = decide(
                Observation(
                    namespace=namespace,
                    name=name,
                    generation=resource.generation,
                    spec=resource.spec,
                    previous=status,
                    discarded=checked.discarded + sealed.discarded,
                    target=target,
                    measurements=measurements,
                    now=started,
                    rollout=rollout,
                    notify_context=notifications.context_for(resource.uid, resource.status),
                    left_behind=left_behind,
                    adopted=adopted,
                )
            )
            # Pause first: a status claiming RolloutPaused over an unpaused target would later
            # read as a person's resume.
            if decision.pause is not None and workload is not None:
                if reads.cached:
                    workload = self._confirm(raw, workload, spec)
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
            write = _StatusWrite(
                raw,
                resource.status,
                decision,
                resolution.templates,
                resolution.metrics,
                seal_key=self._seal_key,
            )
            answer = writes.write_status(
                self.client, raw, write.status_for, stale=_behind(raw) if reads.cached else None
            )
        except writes.StaleRead as exc:
            raise _Stale(_Reads(analysis=dict(exc.fresh))) from exc
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
        self, namespace: str, spec: AnalysisSpec, reads: _Reads, *, claimed: bool
    ) -> tuple[TargetState, dict[str, Any] | None]:
        # Only ever the analysis's own namespace: a spec cannot reach into another one.
        kind = spec.target.kind
        cached = reads.target_of(spec)
        # While the status claims the pause, the cache's copy is not judged from: one that has
        # not seen a person's resume yet would keep the count over it, one that has not seen
        # this analysis's own pause would read as a resume (docs/architecture.md#reads-from-caches).
        if cached is not None and not claimed:
            return TargetState.from_workload(kind, cached), cached
        try:
            workload = self.client.request(
                "GET", kube.workload_path(kind, namespace, spec.target.name)
            )
        except kube.NotFound:
            return TargetState(exists=False), None
        return TargetState.from_workload(kind, workload), workload

    def _adopt(
        self,
        namespace: str,
        name: str,
        spec: AnalysisSpec,
        workload: dict[str, Any],
        target: TargetState,
    ) -> tuple[TargetState, dict[str, Any], str]:
        """Adopt a pause this analysis made before paused-before existed (pause_upgrade)."""
        kind, target_name = spec.target.kind, spec.target.name
        patch = adoption_patch(kind, workload, f"{namespace}/{name}")
        if patch is None:
            return target, workload, ""
        written = writes.adopt(self.client, kind, namespace, target_name, patch)
        if written is None:
            return target, workload, ""
        log.warning("adopted the pause of %s %s/%s", kind, namespace, target_name)
        return TargetState.from_workload(kind, written), written, f"{kind} {target_name}"

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

    def _confirm(
        self, raw: Mapping[str, Any], workload: dict[str, Any], spec: AnalysisSpec
    ) -> dict[str, Any]:
        """Return the target as the API server has it, before a pause decided from the caches.

        The analysis and the target are read again; when either is not what the attempt read
        (the analysis written since, the target another incarnation or edited), ``_Stale``
        makes the attempt again from them. Else the pause goes ahead, its resourceVersion
        precondition the fresh one's.
        """
        meta = raw.get("metadata") or {}
        path = kube.analysis_path(str(meta.get("namespace")), str(meta.get("name")))
        try:
            fresh = self.client.request("GET", path)
        except kube.NotFound as exc:
            raise writes.AnalysisGone(path) from exc
        kind, namespace = spec.target.kind, str(meta.get("namespace"))
        try:
            target = self.client.request(
                "GET", kube.workload_path(kind, namespace, spec.target.name)
            )
        except kube.NotFound:
            target = None
        again = _Reads(analysis=fresh, target=target, target_key=(kind, spec.target.name))
        if (fresh.get("metadata") or {}).get("resourceVersion") != meta.get("resourceVersion"):
            raise _Stale(again)
        if target is None or _changed(workload, target):
            raise _Stale(again)
        return target

    def _revisions(
        self, kind: str, workload: Mapping[str, Any] | None, owned: kube.OwnedReader
    ) -> ControllerRevisions | None:
        """Return what a StatefulSet's or DaemonSet's controller rolls out (read once)."""
        if workload is None or kind_named(kind).revisions is None:
            return None
        return revisions.read(owned, kind, workload)

    def _rollout(
        self,
        kind: str,
        previous: Rollout | None,
        workload: Mapping[str, Any] | None,
        read: ControllerRevisions | None,
        now: datetime,
        owned: kube.OwnedReader,
    ) -> Rollout | None:
        """Return the target's rollout (docs/status.md#rollouts-statusrollout), read by its kind.

        A Deployment's is a changed pod template, begun when its new ReplicaSet was created; a
        StatefulSet's or DaemonSet's a new revision its controller rolls out, begun when that
        ControllerRevision was created. docs/resource.md describes the baseline before it.
        """
        if workload is None:
            return previous

        def created(key: str) -> datetime | None:
            return revisions.revision_created(owned, kind, workload, key)

        return kind_named(kind).rollout(previous, workload, read, created, now)

    def _measure(
        self,
        resource: AnalysisResource,
        status: AnalysisStatus,
        spec: AnalysisSpec,
        workload: Mapping[str, Any] | None,
        read: ControllerRevisions | None,
        rollout: Rollout | None,
        now: datetime,
        owned: kube.OwnedReader,
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
            hashes = compared_hashes(owned, workload)
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


class _Stale(Exception):
    """The caches were behind the API server; ``reads`` is what was read from it since."""

    def __init__(self, reads: _Reads) -> None:
        super().__init__("read from a stale cache")
        self.reads = reads


@dataclass(frozen=True)
class _Reads:
    """What one attempt starts from instead of asking the API server (None: ask it).

    ``cached`` when it came from the operator's caches (a pause is then confirmed, and a
    status write's 409 told apart from a stale cache); not when it was read for the attempt
    made again after one.
    """

    analysis: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    target_key: tuple[str, str] | None = None
    owned: tuple[dict[str, Any], ...] | None = None
    # The templates the analysis names, as the caches held them (templating.resolve_object).
    templates: tuple[dict[str, Any], ...] | None = None
    cached: bool = False

    @classmethod
    def of(cls, snapshot: Snapshot | None, namespace: str, name: str, uid: str | None) -> _Reads:
        """Return the reads a dispatched snapshot gives, kept to the incarnation dispatched."""
        analysis = (snapshot or {}).get("analysis")
        if snapshot is None or not isinstance(analysis, dict):
            return cls()
        meta = analysis.get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) != (namespace, name) or (
            uid is not None and meta.get("uid") != uid
        ):
            return cls()
        target, owned = snapshot.get("target"), snapshot.get("owned")
        templates = snapshot.get("templates")
        return cls(
            analysis=analysis,
            target=target if isinstance(target, dict) else None,
            target_key=(str(snapshot.get("kind")), str(snapshot.get("name"))),
            owned=tuple(owned) if isinstance(owned, list) else None,
            templates=tuple(dict(t) for t in templates) if isinstance(templates, list) else None,
            cached=True,
        )

    def target_of(self, spec: AnalysisSpec) -> dict[str, Any] | None:
        """Return the target read for ``spec`` (its kind and name), if any."""
        if self.target is None or self.target_key != (spec.target.kind, spec.target.name):
            return None
        return self.target

    def owned_reader(
        self, client: kube.KubeClient, spec: AnalysisSpec | None, workload: Mapping[str, Any] | None
    ) -> kube.OwnedReader:
        """Return where the target's ReplicaSets or ControllerRevisions are read from."""
        cached = self.target_of(spec) if spec is not None else None
        if self.owned is None or cached is None or workload is None:
            return client
        # Also for the target read afresh (a paused analysis's): the same incarnation owns them.
        if workload is not cached and _uid(workload) != _uid(cached):
            return client
        return _Owned(self.owned)


class _Owned:
    """The target's ReplicaSets or ControllerRevisions as the caches held them."""

    def __init__(self, items: tuple[dict[str, Any], ...]) -> None:
        self._items = items

    def list_owned(self, path: str, owner: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return list(self._items)


def _uid(obj: Mapping[str, Any]) -> object:
    return (obj.get("metadata") or {}).get("uid")


def _behind(read: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """Return whether a copy read after a 409 shows that ``read`` (from the caches) was stale.

    Stale: another generation of the spec, or an evaluation the copy from the cache had not
    seen yet. Anything else written in between (a person's resume) is a concurrent write,
    handled as without a cache (docs/operator.md#conflicts).
    """

    def evaluation(obj: Mapping[str, Any]) -> tuple[Any, Any]:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        return meta.get("generation"), status.get("lastEvaluationTime")

    seen = evaluation(read)
    return lambda fresh: evaluation(fresh) != seen


def _changed(cached: Mapping[str, Any], fresh: Mapping[str, Any]) -> bool:
    """Whether the target changed in what a decision reads since the cache's copy."""

    def what(obj: Mapping[str, Any]) -> tuple[Any, ...]:
        meta = obj.get("metadata") or {}
        return (meta.get("uid"), meta.get("generation"), _annotations(meta))

    return what(cached) != what(fresh)


def _annotations(meta: Mapping[str, Any]) -> dict[str, Any]:
    # kubectl's last-applied copy is dropped from the cache's copy; it is no pause record.
    annotations = meta.get("annotations") or {}
    return {k: v for k, v in annotations.items() if k != _LAST_APPLIED}


_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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
        metrics: tuple[dict[str, Any], ...] | None = None,
        *,
        seal_key: bytes,
    ) -> None:
        self._raw, self._read, self._decided = raw, read, decision
        self._seal_key = seal_key
        self.decision = decision
        # status.templates: the template generations the spec was resolved from;
        # status.resolvedMetrics: what was evaluated, with where each metric came from.
        self._templates = templates
        self._metrics = metrics

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
        if self._metrics is not None:
            written["resolvedMetrics"] = list(self._metrics)
        uid = str((self._raw.get("metadata") or {}).get("uid") or "")
        written["seal"] = seal(self.written, key=self._seal_key, uid=uid)
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
