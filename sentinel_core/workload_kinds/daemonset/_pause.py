"""How a DaemonSet is held: its ``updateStrategy`` switched to ``OnDelete``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import ON_DELETE, ROLLING_UPDATE, PauseRecord, RecordState
from sentinel_core.workload_kinds._kind import (
    Kept,
    SpecChange,
    Workload,
    held_by_on_delete,
    held_on_delete,
)

# What a pause that switched the strategy keeps: the strategy before it.
KEPT_KEYS = (Annotation.UPDATE_STRATEGY_BEFORE.value,)
# The saved strategy is a few dozen characters; 512 cannot nest deep enough to matter.
MAX_STRATEGY = 512
# A rollingUpdate parameter: an int or a percentage, as the API server accepts them.
_INT_OR_PERCENT = re.compile(r"[0-9]{1,9}%?")


def held(workload: Workload, record: PauseRecord) -> bool:
    return held_on_delete(workload)


def hold(workload: Workload) -> tuple[SpecChange, Kept]:
    before = Annotation.PAUSED_BEFORE.value
    if held_on_delete(workload):
        # Held already (a person's OnDelete): nothing changes, and nothing will be undone.
        return {}, {before: "true"}
    saved = (workload.get("spec") or {}).get("updateStrategy") or {"type": ROLLING_UPDATE}
    return (
        # Only the type changes: rollingUpdate stays as it was (the API server keeps it under
        # OnDelete), so the admission guard can hold the accounts to flipping the type, never
        # widening maxUnavailable or maxSurge
        # (docs/operations.md#the-guard-rail-a-validatingadmissionpolicy).
        {"updateStrategy": {"type": ON_DELETE}},
        {
            before: "false",
            Annotation.UPDATE_STRATEGY_BEFORE.value: json.dumps(
                saved, sort_keys=True, separators=(",", ":")
            ),
        },
    )


def trust(
    workload: Workload, present: Mapping[str, str], holders: tuple[str, ...], held_before: bool
) -> PauseRecord:
    if held_before:
        return held_by_on_delete(workload, holders)
    saved = json.loads(present[Annotation.UPDATE_STRATEGY_BEFORE.value])
    if not held_on_delete(workload):
        return PauseRecord(
            RecordState.STALE, problem="its strategy was switched back by hand", named=holders
        )
    return PauseRecord(RecordState.HELD, holders, False, {"updateStrategy": saved}, named=holders)


def kept_problem(present: Mapping[str, str]) -> str:
    """Return why a saved strategy is not one a pause could have saved; "" if it is."""
    text = present[Annotation.UPDATE_STRATEGY_BEFORE.value]
    if len(text) > MAX_STRATEGY:
        return "update-strategy-before is oversized"
    try:
        saved = json.loads(text)
    except (ValueError, RecursionError):
        return "update-strategy-before is not JSON"
    if not isinstance(saved, dict) or saved.get("type") != ROLLING_UPDATE:
        return "update-strategy-before is not a RollingUpdate strategy"
    if set(saved) - {"type", "rollingUpdate"}:
        return "update-strategy-before has unknown fields"
    rolling = saved.get("rollingUpdate")
    if rolling is None:
        return ""
    if not isinstance(rolling, dict) or set(rolling) - {"maxUnavailable", "maxSurge"}:
        return "update-strategy-before has unknown rollingUpdate fields"
    for value in rolling.values():
        if isinstance(value, bool) or not isinstance(value, int | str):
            return "update-strategy-before has a parameter that is neither a number nor a %"
        if not _INT_OR_PERCENT.fullmatch(str(value)):
            return "update-strategy-before has a parameter that is neither a number nor a %"
    return ""
