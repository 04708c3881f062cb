"""Write RolloutAnalysis resources to the cluster, then mirror the API server's answer.

Why the cluster comes first: docs/api.md#writes-go-to-the-cluster-first.

The REST API (``analyses.api.views``) and the admin call these functions; nothing else in the
web app writes resources. Every write goes to the cluster FIRST, with a precondition, and only
the API server's answer reaches the database (through ``analyses.mirror``): when the cluster
cannot be reached or refuses, a ``ServiceError`` subclass is raised and nothing has been
written to the database. The one database-only action is ``evaluate_now``.

Callers pass a validated ``AnalysisSpec`` (from ``sentinel_core.spec.parse_spec``), or a
``TemplatedSpec`` for a spec naming templates (written as given, docs/templates.md), so an
unvalidated dict cannot reach the cluster by accident. The target Deployment is always looked up
in the analysis's own namespace; a spec has no field that could name another.

``kube_client()`` builds the client from ``settings.SENTINEL_KUBECONFIG`` (a kubeconfig path;
unset means ``$KUBECONFIG``, ``~/.kube/config`` or the in-cluster config), so tests point the
web app at a devcluster by overriding that setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts import scope
from analyses import due, mirror, signals
from analyses.models import Analysis
from sentinel_cluster import clients, kube, writes
from sentinel_cluster.events import record_events
from sentinel_core.decision import Resumption, resume
from sentinel_core.resource import AnalysisResource
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus
from sentinel_core.templates import TemplatedSpec
from sentinel_core.workload_kinds import Released, read_record

# Top-level spec fields that may be absent (docs/resource.md): an update leaving one out removes it.
_OPTIONAL_SPEC_FIELDS = ("failureWindow", "notify")


class ServiceError(Exception):
    """A write was not carried out; ``message`` is a full sentence for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ClusterUnavailable(ServiceError):
    """The API server could not be reached or answered with a server error."""


class ClusterRefused(ServiceError):
    """The API server refused Rollout Sentinel's own credentials (RBAC) or answered oddly."""


class ResourceConflict(ServiceError):
    """The resource changed (or was deleted, or already exists) in the cluster."""


class ResourceRejected(ServiceError):
    """The API server refused the object; ``field_errors`` maps field paths to messages.

    Paths are the REST API's: ``namespace``, ``name``, ``spec.metrics[0].name``; ``""`` holds
    errors that name no field.
    """

    def __init__(self, message: str, field_errors: Mapping[str, list[str]]) -> None:
        super().__init__(message)
        self.field_errors = dict(field_errors)


class NothingToRelease(ResourceConflict):
    """A resume of an analysis that holds no pause on its target: nothing was changed."""

    code = "nothing_to_release"


class UntrustedPauseRecord(ResourceConflict):
    """The pause record on the target disagrees with it: nothing was restored or changed."""

    code = "untrusted_pause_record"


@dataclass(frozen=True)
class ResumeResult:
    """What ``resume_analysis`` did: this analysis let go of its hold on the target."""

    analysis: Analysis
    # "Deployment shop/checkout": the target, as the messages name it.
    target: str
    outcome: Released
    # The analyses that still hold the target.
    held_by: tuple[str, ...]

    @property
    def target_unpaused(self) -> bool:
        """Whether this call let the target roll again."""
        return self.outcome == Released.RESTORED

    @property
    def message(self) -> str:
        """Say in one sentence what happened to the target."""
        key = f"{self.analysis.namespace}/{self.analysis.name}"
        if self.outcome == Released.RESTORED:
            return f"{self.target} is rolling out again; the failure count of {key} was reset."
        if self.outcome == Released.OTHERS_HOLD:
            return (
                f"{key} no longer holds {self.target}, which stays paused: still held by "
                f"{', '.join(self.held_by)}. The failure count of {key} was reset."
            )
        return (
            f"{key} no longer holds {self.target}, which stays paused as it was before {key} "
            f"paused it (someone else had paused it). The failure count of {key} was reset."
        )


# -- the client ----------------------------------------------------------------------------


def kube_client() -> kube.KubeClient:
    """Return the client for ``settings.SENTINEL_KUBECONFIG``, reused while the file is unchanged.

    Raise ``ClusterUnavailable`` when no configuration can be loaded.
    """
    try:
        return clients.for_kubeconfig(getattr(settings, "SENTINEL_KUBECONFIG", None) or None)
    except kube.KubeError as exc:
        raise ClusterUnavailable(
            f"The Kubernetes configuration cannot be loaded ({exc}); nothing was changed."
        ) from exc


# -- writes --------------------------------------------------------------------------------


def create_analysis(
    namespace: str,
    name: str,
    spec: AnalysisSpec | TemplatedSpec,
    *,
    client: kube.KubeClient | None = None,
    now: datetime | None = None,
) -> Analysis:
    """Create the resource in the cluster, then mirror the API server's answer."""
    _require_scope(namespace)
    client = client or kube_client()
    body = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec.to_dict(),
    }
    with translated(f"{namespace}/{name}"):
        try:
            created = client.request("POST", kube.analyses_path(namespace), body=body)
        except kube.Conflict as exc:
            raise ResourceConflict(
                f"A RolloutAnalysis {namespace}/{name} already exists in the cluster."
            ) from exc
        except kube.NotFound as exc:
            # The only thing a create can miss is its namespace.
            raise ResourceRejected(
                f"Namespace {namespace} does not exist in the cluster.",
                {"namespace": [f"namespace {namespace!r} does not exist in the cluster"]},
            ) from exc
    row, _ = mirror.upsert_from_resource(created, now=now)
    return row


def update_analysis(
    analysis: Analysis,
    spec: AnalysisSpec | TemplatedSpec,
    *,
    resource_version: str | None = None,
    client: kube.KubeClient | None = None,
    now: datetime | None = None,
) -> Analysis:
    """Replace the spec in the cluster if it is still at ``resource_version``; mirror the answer.

    ``resource_version`` defaults to the mirror's (see ``_preconditioned`` for the operator's
    status writes). A merge patch carrying ``metadata.resourceVersion`` is refused with 409 by
    the API server when the resource moved on, and keeps labels and annotations that the mirror
    does not hold. Every spec field is written out (defaults included), and an optional field
    the new spec leaves out (``failureWindow``) is sent as null, which a merge patch removes: so
    nothing of the old spec survives the merge.
    """
    _require_scope(analysis.namespace)
    client = client or kube_client()
    path = kube.analysis_path(analysis.namespace, analysis.name)
    with translated(f"{analysis.namespace}/{analysis.name}"):
        _refuse_leaving_a_held_target(client, analysis, spec)
    new_spec: dict[str, Any] = spec.to_dict()
    # At the mirror's resourceVersion the cluster's spec is the mirror's, so its keys are the
    # ones to clear; the optional ones are cleared anyway, for a client sending a newer version.
    dropped = {key: None for key in (*analysis.spec, *_OPTIONAL_SPEC_FIELDS) if key not in new_spec}

    def send(version: str) -> dict[str, Any]:
        patch = {"metadata": {"resourceVersion": version}, "spec": {**new_spec, **dropped}}
        return client.request("PATCH", path, body=patch, content_type=kube.MERGE_PATCH)

    with translated(f"{analysis.namespace}/{analysis.name}"):
        updated = _preconditioned(client, analysis, path, resource_version, send)
    if (updated.get("metadata") or {}).get("uid") != analysis.uid:
        # Deleted and created again under the same name between our read and this write.
        raise ResourceConflict(_changed_message(analysis, analysis.resource_version))
    row, _ = mirror.upsert_from_resource(updated, now=now)
    return row


def delete_analysis(
    analysis: Analysis,
    *,
    resource_version: str | None = None,
    client: kube.KubeClient | None = None,
    now: datetime | None = None,
) -> None:
    """Delete the resource if it is still this incarnation at ``resource_version``.

    ``resource_version`` defaults to the mirror's (see ``_preconditioned``). The mirror row is
    then marked deleted (its history is kept for the retention period).
    """
    _require_scope(analysis.namespace)
    client = client or kube_client()
    path = kube.analysis_path(analysis.namespace, analysis.name)

    def send(version: str) -> dict[str, Any]:
        preconditions = {"uid": analysis.uid, "resourceVersion": version}
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
        return client.request("DELETE", path, body=options)

    with translated(f"{analysis.namespace}/{analysis.name}"):
        _preconditioned(client, analysis, path, resource_version, send)
    mirror.mark_deleted(analysis.namespace, analysis.name, analysis.uid, now=now)


def resume_analysis(
    analysis: Analysis,
    *,
    actor: str | None,
    via: str = "the REST API",
    client: kube.KubeClient | None = None,
    now: datetime | None = None,
) -> ResumeResult:
    """Resume the rollout this analysis guards, as a person asked.

    Only a person resumes (docs/operator.md#never-auto-resume), and a pause belongs to whoever
    made it (docs/status.md#pausing-each-kind).

    Take this analysis out of the pause record of its target in the analysis's namespace
    (``sentinel_cluster.writes.release``): the last holder gives the target back what it had
    before the first pause. Then write ``decision.resume``'s status (failures reset,
    ``RolloutPaused=False/ResumedByUser``) through the status subresource, record the event, and
    mirror the answer. The target goes first: a status saying this analysis let go of a target
    that still carries its pause would be a lie, whereas a running target under a stale status
    is what the operator already handles as a ``kubectl rollout resume``.

    Raise ``NothingToRelease`` when this analysis holds nothing on the target (none found, not
    named by its record, or a resume by hand already let it go) and ``UntrustedPauseRecord``
    when the record disagrees with the target; neither changes anything anywhere.
    """
    _require_scope(analysis.namespace)
    client = client or kube_client()
    moment = now or timezone.now()
    path = kube.analysis_path(analysis.namespace, analysis.name)
    key = f"{analysis.namespace}/{analysis.name}"
    resumption: Resumption | None = None

    def resumed(fresh: Mapping[str, Any]) -> dict[str, Any]:
        # On a 409 the operator wrote meanwhile: resume from its fresh status instead.
        nonlocal resumption
        resumption = resume(
            AnalysisStatus.from_dict(fresh.get("status")), now=moment, actor=actor, via=via
        )
        written = resumption.status.to_dict()
        # The operator's seal is kept: the evidence it sealed still verifies, and the count the
        # resume resets needs none (docs/status.md#what-the-operator-trusts-in-its-status).
        sealed = (fresh.get("status") or {}).get("seal")
        if isinstance(sealed, str):
            written["seal"] = sealed
        return written

    with translated(f"{analysis.namespace}/{analysis.name}"):
        raw = _current(client, analysis, path)
        resource = AnalysisResource.read(raw)
        spec = resource.valid_spec
        if spec is None:
            raise NothingToRelease(
                f"Nothing to release: the spec of {key} is invalid, so it names no target; "
                "nothing was changed."
            )
        kind, name = spec.target.kind, spec.target.name
        what = f"{kind} {analysis.namespace}/{name}"
        try:
            change = writes.release(client, analysis.namespace, name, key, kind=kind)
        except kube.Conflict as exc:
            raise ResourceConflict(f"{what} kept changing; try resuming again.") from exc
        if change is None:
            raise NothingToRelease(
                f"Nothing to release: {what} was not found; nothing was changed."
            )
        if change.outcome == Released.UNTRUSTED:
            raise UntrustedPauseRecord(
                f"The pause record on {what} cannot be trusted ({change.detail}): nothing was "
                f"restored or changed. Check the {kind} and set it back by hand if it should "
                "roll (docs/status.md#when-a-pause-record-is-not-trusted)."
            )
        if change.outcome == Released.NOT_HELD:
            raise NothingToRelease(
                f"Nothing to release: {key} holds no pause on {what} ({change.detail}); "
                "nothing was changed."
            )
        try:
            written = writes.write_status(client, raw, resumed)
        except writes.AnalysisGone as exc:
            raise ResourceConflict(f"The analysis {key} was deleted in the cluster.") from exc
        except kube.Conflict as exc:
            raise ResourceConflict(
                f"The status of {key} kept changing in the cluster; try resuming again."
            ) from exc
    assert resumption is not None  # set by the write that succeeded
    # Advisory: a missing event never undoes the resume (record_events logs failures).
    record_events(client, written, resumption.events, now=moment)
    row, _ = mirror.upsert_from_resource(written, now=now)
    if resumption.notifications:
        signals.resumed.send(
            resume_analysis, analysis=row, uid=resource.uid, notifications=resumption.notifications
        )
    return ResumeResult(analysis=row, target=what, outcome=change.outcome, held_by=change.holders)


def evaluate_now(analysis: Analysis, *, now: datetime | None = None) -> datetime:
    """Make the analysis due at once; the operator's dispatcher picks it up within a second.

    Only the mirror row changes (``next_due_at``): scheduling is the operator's own state, not
    the resource's. Return the due time; raise ``ResourceConflict`` when the analysis has been
    deleted meanwhile.
    """
    _require_scope(analysis.namespace)
    moment = now or timezone.now()
    if not due.evaluate_now(analysis.pk, moment):
        raise ResourceConflict(
            f"The analysis {analysis.namespace}/{analysis.name} was deleted in the cluster."
        )
    return moment


# -- helpers -------------------------------------------------------------------------------


def _require_scope(namespace: str) -> None:
    # The last line behind the API's and the admin's own checks: nothing outside
    # SENTINEL_NAMESPACES is written, whoever calls.
    if not scope.in_scope(namespace):
        message = scope.outside_message(namespace)
        raise ResourceRejected(message[0].upper() + message[1:] + ".", {"namespace": [message]})


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn the client's errors left over by the caller into ``ServiceError`` subclasses.

    ``what`` names the object in the sentence of a refusal ("ns/name", "the template ns/name").
    """
    try:
        yield
    except kube.Unavailable as exc:
        raise ClusterUnavailable(
            f"The Kubernetes API server cannot be reached ({exc}); try again once it is back."
        ) from exc
    except kube.Invalid as exc:
        raise ResourceRejected(
            f"The Kubernetes API server refused {what}: {exc}",
            _field_errors(exc),
        ) from exc
    except kube.Forbidden as exc:
        raise ClusterRefused(
            "The Kubernetes API server refused Rollout Sentinel's own credentials "
            f"({exc}); ask an administrator to check its RBAC."
        ) from exc
    except kube.KubeError as exc:
        raise ClusterRefused(f"The Kubernetes API server answered unexpectedly: {exc}") from exc


def _preconditioned(
    client: kube.KubeClient,
    analysis: Analysis,
    path: str,
    resource_version: str | None,
    send: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """Return ``send(version)``'s answer, the write being refused if the resource changed.

    The operator writes status every interval, and each status write is a new resourceVersion
    that the mirror sees a moment later. When the precondition is the mirror's version (the
    caller gave none, or the same) and the 409 came only from such writes — same uid, same
    ``metadata.generation``, i.e. the spec the person edited is still the one in the cluster —
    the write is retried once at the current version. A spec changed meanwhile, or an explicit
    older ``resource_version``, is a ``ResourceConflict``.
    """
    version = resource_version or analysis.resource_version
    try:
        return send(version)
    except kube.NotFound as exc:
        raise _changed(analysis, version, exc) from exc
    except kube.Conflict as exc:
        if version != analysis.resource_version:
            raise _changed(analysis, version, exc) from exc
        meta = _current(client, analysis, path).get("metadata") or {}
        if meta.get("generation") != analysis.generation:
            raise _changed(analysis, version, exc) from exc
        current = str(meta.get("resourceVersion") or "")
    try:
        return send(current)
    except (kube.Conflict, kube.NotFound) as exc:
        raise _changed(analysis, version, exc) from exc


def _refuse_leaving_a_held_target(
    client: kube.KubeClient, analysis: Analysis, spec: AnalysisSpec | TemplatedSpec
) -> None:
    """Refuse a new ``spec.target`` while this analysis holds a pause on its current one.

    Pointing it elsewhere would strand that pause where no resume of this analysis reaches it
    (docs/status.md#pausing-each-kind): the person resumes first, then retargets.
    """
    # The mirror's spec, as the cluster holds it at the mirror's resourceVersion: the admin's
    # form has already set the row's own target_name to the new one.
    target = analysis.spec.get("target") if isinstance(analysis.spec, dict) else None
    target = target if isinstance(target, dict) else {}
    kind, name = analysis.target_kind, str(target.get("name") or "")
    if not name or (spec.target.kind, spec.target.name) == (kind, name):
        return
    try:
        current = client.request("GET", kube.workload_path(kind, analysis.namespace, name))
    except kube.NotFound:
        return
    key = f"{analysis.namespace}/{analysis.name}"
    if key not in read_record(kind, current).holders:
        return
    message = (
        f"{key} holds a pause on {kind} {analysis.namespace}/{name}; resume it before pointing "
        "the analysis at another target, so that the pause is not left behind."
    )
    raise ResourceRejected(message, {"spec.target": [message]})


def _field_errors(exc: kube.Invalid) -> dict[str, list[str]]:
    """Return the API server's causes keyed by the REST API's field paths."""
    errors: dict[str, list[str]] = {}
    for cause in exc.causes:
        field = str(cause.get("field") or "")
        # metadata.name and metadata.namespace are top-level fields of the REST shape.
        field = field.removeprefix("metadata.") if field in _METADATA_FIELDS else field
        errors.setdefault(field, []).append(str(cause.get("message") or cause.get("reason")))
    if not errors:
        message = (exc.body or {}).get("message") if isinstance(exc.body, dict) else None
        errors[""] = [str(message or exc)]
    return errors


_METADATA_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def _changed(analysis: Analysis, version: str, exc: kube.KubeError) -> ResourceConflict:
    if isinstance(exc, kube.NotFound):
        return ResourceConflict(
            f"The analysis {analysis.namespace}/{analysis.name} was deleted in the cluster."
        )
    return ResourceConflict(_changed_message(analysis, version))


def _changed_message(analysis: Analysis, version: str) -> str:
    return (
        f"The analysis {analysis.namespace}/{analysis.name} changed in the cluster since "
        f"resourceVersion {version}; reload it and apply your change again."
    )


def _current(client: kube.KubeClient, analysis: Analysis, path: str) -> dict[str, Any]:
    """Read the resource; it must still be the incarnation the mirror row stands for."""
    try:
        resource = client.request("GET", path)
    except kube.NotFound as exc:
        raise _changed(analysis, analysis.resource_version, exc) from exc
    if (resource.get("metadata") or {}).get("uid") != analysis.uid:
        raise ResourceConflict(
            f"The analysis {analysis.namespace}/{analysis.name} was deleted and created again "
            "in the cluster; reload it."
        )
    return resource
