"""The target workload as the core sees it, and the pure half of pausing and releasing it.

``TargetState`` is what the reconciler read of the target; ``PauseTarget`` is the pause the
decision core orders; ``pause_patch`` and ``release_patch`` compute the merge patches that carry
a pause out or take one analysis out of it, from the target as currently read. The loops that
send them and re-read on a 409 live in ``sentinel_cluster.writes``, used by the operator and the
web app alike, so both keep ``paused-by`` the same way: a union of every analysis that paused.

Each kind is paused its own way (docs/status.md#pausing-each-kind): a Deployment with
``spec.paused``; a StatefulSet by raising its ``rollingUpdate.partition`` to the lowest ordinal
already updated; a DaemonSet by switching its ``updateStrategy`` to ``OnDelete``. What the last
two had before is kept in an annotation and restored on release; ``is_paused`` tells, per kind,
whether the target is held, so a person undoing the change by hand reads as a resume.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.kinds import DEPLOYMENT, STATEFUL_SET
from sentinel_core.values import format_time, integer

_ON_DELETE = "OnDelete"
_ROLLING_UPDATE = "RollingUpdate"


@dataclass(frozen=True)
class TargetState:
    """What the reconciler found of the target Deployment."""

    exists: bool
    paused: bool = False
    # ``namespace/name`` of every analysis in the paused-by annotation.
    paused_by: tuple[str, ...] = ()

    @classmethod
    def from_deployment(cls, deployment: Mapping[str, Any] | None) -> TargetState:
        """Return the state of a Deployment object as the API returned it (None: not found)."""
        return cls.from_workload(DEPLOYMENT, deployment)

    @classmethod
    def from_workload(cls, kind: str, workload: Mapping[str, Any] | None) -> TargetState:
        """Return the state of a target of ``kind`` as the API returned it (None: not found)."""
        if workload is None:
            return cls(exists=False)
        return cls(exists=True, paused=is_paused(kind, workload), paused_by=paused_by_of(workload))


def is_paused(kind: str, workload: Mapping[str, Any]) -> bool:
    """Return whether ``workload`` is held: its controller rolls no pod over by itself.

    A Deployment with ``spec.paused``. A StatefulSet or DaemonSet with ``OnDelete`` (nothing is
    replaced until someone deletes a pod), or a StatefulSet whose partition is still at least the
    one a pause set: lowering it by hand is a resume.
    """
    spec = workload.get("spec") or {}
    if kind == DEPLOYMENT:
        return spec.get("paused") is True
    if _strategy_type(workload) == _ON_DELETE:
        return True
    if kind == STATEFUL_SET:
        held = _int_text(_annotations(workload).get(Annotation.PAUSED_PARTITION.value))
        return held is not None and _partition(workload) >= held
    return False


def parse_paused_by(text: object) -> tuple[str, ...]:
    """Return the ``namespace/name`` entries of a paused-by annotation, without blanks."""
    if not isinstance(text, str):
        return ()
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def paused_by_of(deployment: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the paused-by entries of a Deployment object."""
    annotations = (deployment.get("metadata") or {}).get("annotations") or {}
    return parse_paused_by(annotations.get(Annotation.PAUSED_BY.value, ""))


@dataclass(frozen=True)
class PauseTarget:
    """Pause the target Deployment and record who paused it, when and why."""

    namespace: str
    name: str
    # The complete new paused-by list, this analysis included.
    paused_by: tuple[str, ...]
    paused_at: datetime
    reason: str
    # spec.target.kind: how the target is paused (docs/status.md#pausing-each-kind).
    kind: str = DEPLOYMENT

    def annotations(self) -> dict[str, str]:
        return {
            Annotation.PAUSED_BY.value: ",".join(self.paused_by),
            Annotation.PAUSED_AT.value: format_time(self.paused_at),
            Annotation.PAUSE_REASON.value: self.reason,
        }


def pause_patch(pause: PauseTarget, deployment: Mapping[str, Any]) -> dict[str, Any]:
    """Return the merge patch that pauses ``deployment`` as currently read.

    ``paused-by`` becomes the union of what the Deployment holds now and the decided list, so a
    pause another analysis made meanwhile is kept; the resourceVersion precondition turns a
    concurrent write into a 409 instead of a lost entry.
    """
    meta = deployment.get("metadata") or {}
    annotations = pause.annotations()
    union = dict.fromkeys((*paused_by_of(deployment), *pause.paused_by))
    annotations[Annotation.PAUSED_BY.value] = ",".join(union)
    spec, saved = _hold(pause.kind, deployment)
    annotations.update(saved)
    patch: dict[str, Any] = {
        "metadata": {
            "annotations": annotations,
            "resourceVersion": str(meta.get("resourceVersion") or ""),
        },
    }
    if spec:
        patch["spec"] = spec
    return patch


def _hold(kind: str, workload: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Return the spec change that holds ``workload`` and the annotations that remember it.

    What a target had before is saved only when it is not already held: a second analysis
    tripping on a held target must not save the held state as the one to restore.
    """
    if kind == DEPLOYMENT:
        return {"paused": True}, {}
    held = is_paused(kind, workload)
    if kind == STATEFUL_SET:
        if _strategy_type(workload) == _ON_DELETE:
            return {}, {}
        current = _partition(workload)
        frozen = max(current, _lowest_updated_ordinal(workload))
        saved = {Annotation.PAUSED_PARTITION.value: str(frozen)}
        if not held:
            saved[Annotation.PARTITION_BEFORE.value] = str(current)
        return {"updateStrategy": {"rollingUpdate": {"partition": frozen}}}, saved
    if held:
        return {}, {}
    before = (workload.get("spec") or {}).get("updateStrategy") or {"type": _ROLLING_UPDATE}
    return (
        # Only the type changes: rollingUpdate stays as it was (the API server keeps it under
        # OnDelete), so the admission guard can hold the accounts to flipping the type, never
        # widening maxUnavailable or maxSurge
        # (docs/operations.md#the-guard-rail-a-validatingadmissionpolicy).
        {"updateStrategy": {"type": _ON_DELETE}},
        {Annotation.UPDATE_STRATEGY_BEFORE.value: json.dumps(before, sort_keys=True)},
    )


def _lowest_updated_ordinal(statefulset: Mapping[str, Any]) -> int:
    """Return the lowest ordinal a StatefulSet's rolling update has reached.

    The controller updates from the highest ordinal down, so the ``updatedReplicas`` pods at
    the update revision are the top ones. Without a rollout in progress (both revisions the
    same, or no status yet) it is ``replicas``: the partition then holds any rollout to come.
    """
    replicas = integer((statefulset.get("spec") or {}).get("replicas", 1))
    replicas = replicas if replicas is not None and replicas >= 0 else 1
    status = statefulset.get("status") or {}
    update, current = status.get("updateRevision"), status.get("currentRevision")
    if not update or update == current:
        return replicas
    updated = integer(status.get("updatedReplicas", 0)) or 0
    return max(0, replicas - max(0, updated))


def _restore(kind: str, workload: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the spec change that undoes a pause of ``workload``; None when none is known."""
    if kind == DEPLOYMENT:
        return {"paused": False}
    annotations = _annotations(workload)
    if kind == STATEFUL_SET:
        before = _int_text(annotations.get(Annotation.PARTITION_BEFORE.value))
        if before is None:
            return None
        return {"updateStrategy": {"rollingUpdate": {"partition": before}}}
    try:
        saved = json.loads(str(annotations.get(Annotation.UPDATE_STRATEGY_BEFORE.value)))
    except ValueError:
        return None
    if not isinstance(saved, dict) or saved.get("type") not in (_ROLLING_UPDATE, _ON_DELETE):
        return None
    return {"updateStrategy": saved}


# The annotations that remember what a pause changed; a release that undoes it removes them.
_SAVED = (
    Annotation.PAUSED_PARTITION.value,
    Annotation.PARTITION_BEFORE.value,
    Annotation.UPDATE_STRATEGY_BEFORE.value,
)


def _int_text(value: object) -> int | None:
    """Return an annotation's whole number (``"3"``); None for anything else."""
    text = value.strip() if isinstance(value, str) else ""
    return int(text) if text.isdigit() else None


def _annotations(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, Mapping) else {}


def _strategy_type(workload: Mapping[str, Any]) -> str:
    strategy = (workload.get("spec") or {}).get("updateStrategy") or {}
    return str(strategy.get("type") or _ROLLING_UPDATE)


def _partition(statefulset: Mapping[str, Any]) -> int:
    strategy = (statefulset.get("spec") or {}).get("updateStrategy") or {}
    partition = integer((strategy.get("rollingUpdate") or {}).get("partition", 0))
    return partition if partition is not None else 0


@dataclass(frozen=True)
class Release:
    """What taking one analysis out of a target's pause changes."""

    # The merge patch to send; None when nothing changes.
    patch: dict[str, Any] | None
    # Whether the patch unpauses the Deployment.
    unpauses: bool


def release_patch(
    deployment: Mapping[str, Any], key: str, *, claimed: bool, kind: str = DEPLOYMENT
) -> Release:
    """Return how to take the analysis ``key`` out of the pause of ``deployment`` (of ``kind``).

    The target is unpaused only when this analysis had a hand in the pause: it is listed in
    ``paused-by`` or its status says it paused the target (``claimed``). A pause that only a
    person or other analyses made is theirs to lift. A StatefulSet or DaemonSet gets back the
    partition or strategy saved when it was paused; without a saved one (a person set
    ``OnDelete``) there is nothing of ours to undo.
    """
    meta = deployment.get("metadata") or {}
    paused_by = paused_by_of(deployment)
    remaining = tuple(entry for entry in paused_by if entry != key)
    restore = _restore(kind, deployment)
    unpause = (
        restore is not None and is_paused(kind, deployment) and (claimed or remaining != paused_by)
    )
    if not unpause and remaining == paused_by:
        return Release(patch=None, unpauses=False)
    # The precondition keeps a concurrent pause by another analysis from being lost.
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion")}}
    annotations: dict[str, Any] = {}
    saved = [k for k in _SAVED if k in _annotations(deployment)]
    if unpause:
        patch["spec"] = restore
        # Restored: what was saved is spent; a later pause saves afresh.
        annotations |= dict.fromkeys(saved)
    if remaining != paused_by:
        annotations |= (
            {Annotation.PAUSED_BY.value: ",".join(remaining)}
            if remaining
            # Nobody holds the target any more: the whole pause record goes.
            else dict.fromkeys((*(a.value for a in Annotation if a.value not in _SAVED), *saved))
        )
    if annotations:
        patch["metadata"]["annotations"] = annotations
    return Release(patch=patch, unpauses=unpause)
