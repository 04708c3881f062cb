"""How a DaemonSet is held: its ``updateStrategy`` switched to ``OnDelete``."""

from __future__ import annotations

import json

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import ON_DELETE, ROLLING_UPDATE, PauseRecord
from sentinel_core.workload_kinds._kind import Kept, SpecChange, Workload, held_on_delete


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
