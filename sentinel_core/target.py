"""The target Deployment as the core sees it, and the pure half of pausing and releasing it.

``TargetState`` is what the reconciler read of the target; ``PauseTarget`` is the pause the
decision core orders; ``pause_patch`` and ``release_patch`` compute the merge patches that carry
a pause out or take one analysis out of it, from the Deployment as currently read. The loops that
send them and re-read on a 409 live in ``sentinel_cluster.writes``, used by the operator and the
web app alike, so both keep ``paused-by`` the same way: a union of every analysis that paused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.values import format_time


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
        if deployment is None:
            return cls(exists=False)
        spec = deployment.get("spec") or {}
        return cls(
            exists=True,
            paused=spec.get("paused") is True,
            paused_by=paused_by_of(deployment),
        )


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
    return {
        "metadata": {
            "annotations": annotations,
            "resourceVersion": str(meta.get("resourceVersion") or ""),
        },
        "spec": {"paused": True},
    }


@dataclass(frozen=True)
class Release:
    """What taking one analysis out of a target's pause changes."""

    # The merge patch to send; None when nothing changes.
    patch: dict[str, Any] | None
    # Whether the patch unpauses the Deployment.
    unpauses: bool


def release_patch(deployment: Mapping[str, Any], key: str, *, claimed: bool) -> Release:
    """Return how to take the analysis ``key`` out of the pause of ``deployment``.

    The Deployment is unpaused only when this analysis had a hand in the pause: it is listed in
    ``paused-by`` or its status says it paused the target (``claimed``). A pause that only a
    person or other analyses made is theirs to lift.
    """
    meta = deployment.get("metadata") or {}
    paused_by = paused_by_of(deployment)
    remaining = tuple(entry for entry in paused_by if entry != key)
    unpause = (deployment.get("spec") or {}).get("paused") is True and (
        claimed or remaining != paused_by
    )
    if not unpause and remaining == paused_by:
        return Release(patch=None, unpauses=False)
    # The precondition keeps a concurrent pause by another analysis from being lost.
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion")}}
    if unpause:
        patch["spec"] = {"paused": False}
    if remaining != paused_by:
        patch["metadata"]["annotations"] = (
            {Annotation.PAUSED_BY.value: ",".join(remaining)}
            if remaining
            # Nobody holds the target any more: the whole pause record goes.
            else dict.fromkeys(a.value for a in Annotation)
        )
    return Release(patch=patch, unpauses=unpause)
