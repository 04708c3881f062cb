"""The target workload as the core sees it, and the pure half of pausing and releasing it.

``TargetState`` is what the reconciler read of the target; ``PauseTarget`` is the pause the
decision core orders; ``pause_patch``, ``release_patch`` and ``clean_up_patch`` compute the merge
patches that carry a pause out, take one analysis out of it, or remove a record a person left
stale or made untrustworthy. The loops that send them and re-read on a 409 live in
``sentinel_cluster.writes``, used by the operator and the web app alike.

A pause belongs to whoever made it (docs/status.md#pausing-each-kind): the record on the target
(``sentinel_core.pause_record``) says which analyses hold it and what the target had before, for
every kind. A release by one holder only takes it out of ``paused-by``; the last holder's gives
the target back what it had before the first pause (a Deployment a person had paused stays
paused); an analysis that holds nothing changes nothing; a record that disagrees with the
target is never acted on.

Each kind is paused its own way, which its package says (``WorkloadKind.held``, ``hold``): a
Deployment with ``spec.paused``; a StatefulSet by raising its ``rollingUpdate.partition`` to the
lowest ordinal already updated; a DaemonSet by switching its ``updateStrategy`` to ``OnDelete``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.pause_record import ALL_KEYS, NO_RECORD, PauseRecord, RecordState
from sentinel_core.values import format_time
from sentinel_core.workload_kinds._record import read_record
from sentinel_core.workload_kinds._registry import kind_named


@dataclass(frozen=True)
class TargetState:
    """What the reconciler found of the target."""

    exists: bool
    # Whether the target is held: its controller rolls nothing over by itself.
    paused: bool = False
    # ``namespace/name`` of every analysis a trusted pause record names as holding it.
    paused_by: tuple[str, ...] = ()
    # The pause record as read and checked against the target.
    record: PauseRecord = NO_RECORD

    @classmethod
    def from_deployment(cls, deployment: Mapping[str, Any] | None) -> TargetState:
        """Return the state of a Deployment object as the API returned it (None: not found)."""
        return cls.from_workload(DEPLOYMENT, deployment)

    @classmethod
    def from_workload(cls, kind: str, workload: Mapping[str, Any] | None) -> TargetState:
        """Return the state of a target of ``kind`` as the API returned it (None: not found)."""
        if workload is None:
            return cls(exists=False)
        record = read_record(kind, workload)
        return cls(
            exists=True,
            paused=_held(kind, workload, record),
            paused_by=record.holders,
            record=record,
        )

    @property
    def untrusted(self) -> str:
        """Why the pause record cannot be trusted; "" when it can (or there is none)."""
        return self.record.problem if self.record.state == RecordState.UNTRUSTED else ""

    @property
    def needs_clean_up(self) -> bool:
        """Whether a record is left on the target that no release may act on."""
        return self.record.state in (RecordState.STALE, RecordState.UNTRUSTED)


def is_paused(kind: str, workload: Mapping[str, Any]) -> bool:
    """Return whether ``workload`` is held: its controller rolls no pod over by itself.

    A Deployment with ``spec.paused``. A StatefulSet or DaemonSet with ``OnDelete`` (nothing is
    replaced until someone deletes a pod), or a StatefulSet whose partition is where a trusted
    pause record says a pause set it: lowering it by hand is a resume, and a partition a person
    set (a canary) is theirs, not a pause.
    """
    return _held(kind, workload, read_record(kind, workload))


def _held(kind: str, workload: Mapping[str, Any], record: PauseRecord) -> bool:
    return kind_named(kind).held(workload, record)


def paused_by_of(workload: Mapping[str, Any], kind: str = DEPLOYMENT) -> tuple[str, ...]:
    """Return the analyses a trusted pause record on ``workload`` names as holding it."""
    return read_record(kind, workload).holders


def parse_paused_by(text: object) -> tuple[str, ...]:
    """Return the entries of a paused-by value split as written, without blanks (for display)."""
    if not isinstance(text, str):
        return ()
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


@dataclass(frozen=True)
class PauseTarget:
    """Pause the target and record who paused it, when and why."""

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


def pause_patch(pause: PauseTarget, workload: Mapping[str, Any]) -> dict[str, Any]:
    """Return the merge patch that pauses ``workload`` as currently read.

    On a target a trusted record already holds, ``paused-by`` becomes the union of its holders
    and the decided list, and what the first pause kept stays as it is: a second analysis must
    not keep the held state as the one to restore. Otherwise (no record, or one left stale by a
    resume by hand, or one that cannot be trusted) the pause writes a fresh record of the target
    as it is now, removing whatever the old one held. The resourceVersion precondition turns a
    concurrent write into a 409 instead of a lost entry.
    """
    meta = workload.get("metadata") or {}
    record = read_record(pause.kind, workload)
    annotations: dict[str, Any] = pause.annotations()
    spec: dict[str, Any] = {}
    if record.state == RecordState.HELD:
        union = dict.fromkeys((*record.holders, *pause.paused_by))
        annotations[Annotation.PAUSED_BY.value] = ",".join(union)
        spec = kind_named(pause.kind).rehold()
    else:
        spec, kept = kind_named(pause.kind).hold(workload)
        stale = {key: None for key in ALL_KEYS if key in _annotations(workload)}
        annotations = stale | annotations | kept
    patch: dict[str, Any] = {
        "metadata": {
            "annotations": annotations,
            "resourceVersion": str(meta.get("resourceVersion") or ""),
        },
    }
    if spec:
        patch["spec"] = spec
    return patch


def _annotations(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, Mapping) else {}


class Released(StrEnum):
    """What taking one analysis out of a target's pause did (the resume's answer)."""

    # The last holder let go: the target has what it had before the first pause, running.
    RESTORED = "restored"
    # The last holder let go of a target that was held before the first pause: it stays held.
    KEPT_HELD_BEFORE = "kept-held-before"
    # Other analyses still hold it: only this one left ``paused-by``.
    OTHERS_HOLD = "others-hold"
    # This analysis holds nothing on the target: nothing changed.
    NOT_HELD = "not-held"
    # The record cannot be trusted: nothing changed.
    UNTRUSTED = "untrusted"


@dataclass(frozen=True)
class Release:
    """What taking one analysis out of a target's pause changes."""

    # The merge patch to send; None when nothing changes.
    patch: dict[str, Any] | None
    outcome: Released
    # The analyses that hold the target after the release.
    holders: tuple[str, ...] = ()
    # Whether the target is held after the release (by anyone, a person included).
    held: bool = False
    # UNTRUSTED: why the record is not trusted; NOT_HELD: who or what holds the target.
    detail: str = ""

    @property
    def unpauses(self) -> bool:
        """Whether the patch lets the target roll again."""
        return self.outcome == Released.RESTORED


def release_patch(workload: Mapping[str, Any], key: str, *, kind: str = DEPLOYMENT) -> Release:
    """Return how to take the analysis ``key`` out of the pause of ``workload`` (of ``kind``).

    Only a trusted record that names ``key`` is acted on. With other holders left, ``key``
    leaves ``paused-by`` and nothing else changes; as the last holder, the target gets back what
    the record says it had before the first pause and the whole record goes. Anything else
    (no record, a stale one, one naming only others, one that cannot be trusted) changes
    nothing: the answer says why.
    """
    meta = workload.get("metadata") or {}
    record = read_record(kind, workload)
    held = _held(kind, workload, record)
    if record.state == RecordState.UNTRUSTED:
        return Release(None, Released.UNTRUSTED, held=held, detail=record.problem)
    if record.state != RecordState.HELD or key not in record.holders:
        return Release(
            None, Released.NOT_HELD, record.holders, held, _holder_text(kind, held, record)
        )
    remaining = tuple(entry for entry in record.holders if entry != key)
    # The precondition keeps a concurrent pause by another analysis from being lost.
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion")}}
    if remaining:
        patch["metadata"]["annotations"] = {Annotation.PAUSED_BY.value: ",".join(remaining)}
        return Release(patch, Released.OTHERS_HOLD, remaining, held=True)
    patch["metadata"]["annotations"] = {k: None for k in ALL_KEYS if k in _annotations(workload)}
    if record.restore is None:
        return Release(patch, Released.KEPT_HELD_BEFORE, held=True)
    patch["spec"] = record.restore
    return Release(patch, Released.RESTORED, held=False)


def _holder_text(kind: str, held: bool, record: PauseRecord) -> str:
    """Return who holds a target an analysis does not hold, as a clause."""
    if record.state == RecordState.HELD and record.holders:
        return "it is held by " + ", ".join(record.holders)
    if held:
        return f"the {kind} was paused by someone else"
    return f"the {kind} is not paused"


def clean_up_patch(workload: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """Return the merge patch removing a stale or untrusted record; None when there is none.

    Only annotations go: the spec is left as the person left it.
    """
    if read_record(kind, workload).state not in (RecordState.STALE, RecordState.UNTRUSTED):
        return None
    meta = workload.get("metadata") or {}
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {k: None for k in ALL_KEYS if k in _annotations(workload)},
        }
    }
