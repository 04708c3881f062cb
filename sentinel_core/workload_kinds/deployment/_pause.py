"""How a Deployment is held: ``spec.paused`` (docs/status.md#pausing-each-kind)."""

from __future__ import annotations

from collections.abc import Mapping

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import PauseRecord, RecordState
from sentinel_core.workload_kinds._kind import Kept, SpecChange, Workload


def held(workload: Workload, record: PauseRecord) -> bool:
    return _paused(workload)


def hold(workload: Workload) -> tuple[SpecChange, Kept]:
    return {"paused": True}, {Annotation.PAUSED_BEFORE.value: _text(_paused(workload))}


def rehold() -> SpecChange:
    # Sent again with the added holder: the patch then holds the Deployment whatever it read.
    return {"paused": True}


def trust(
    workload: Workload, present: Mapping[str, str], holders: tuple[str, ...], held_before: bool
) -> PauseRecord:
    if not _paused(workload):
        return PauseRecord(RecordState.STALE, problem="it was resumed by hand", named=holders)
    restore = None if held_before else {"paused": False}
    return PauseRecord(RecordState.HELD, holders, held_before, restore, named=holders)


def _paused(workload: Workload) -> bool:
    return (workload.get("spec") or {}).get("paused") is True


def _text(value: bool) -> str:
    return "true" if value else "false"
