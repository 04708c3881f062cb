"""How a Deployment is held: ``spec.paused`` (docs/status.md#pausing-each-kind)."""

from __future__ import annotations

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import PauseRecord
from sentinel_core.workload_kinds._kind import Kept, SpecChange, Workload


def held(workload: Workload, record: PauseRecord) -> bool:
    return _paused(workload)


def hold(workload: Workload) -> tuple[SpecChange, Kept]:
    return {"paused": True}, {Annotation.PAUSED_BEFORE.value: _text(_paused(workload))}


def rehold() -> SpecChange:
    # Sent again with the added holder: the patch then holds the Deployment whatever it read.
    return {"paused": True}


def _paused(workload: Workload) -> bool:
    return (workload.get("spec") or {}).get("paused") is True


def _text(value: bool) -> str:
    return "true" if value else "false"
