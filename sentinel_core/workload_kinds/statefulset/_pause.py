"""How a StatefulSet is held: its partition raised to the lowest ordinal already updated."""

from __future__ import annotations

import re
from collections.abc import Mapping

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import (
    ON_DELETE,
    PauseRecord,
    RecordState,
    disagrees,
    partition,
    strategy_type,
)
from sentinel_core.values import integer
from sentinel_core.workload_kinds._kind import (
    Kept,
    SpecChange,
    Workload,
    held_by_on_delete,
    held_on_delete,
)

# What a pause that raised the partition keeps: the partition before it, and the one it set.
KEPT_KEYS = (Annotation.PARTITION_BEFORE.value, Annotation.PAUSED_PARTITION.value)
# A partition is an int32; nine digits are plenty and can never overflow one.
MAX_DIGITS = 9
_DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def held(workload: Workload, record: PauseRecord) -> bool:
    # A partition a person set (a canary) is theirs, not a pause: only the one a trusted record
    # says a pause set holds it, and lowering it by hand is a resume.
    return held_on_delete(workload) or record.state == RecordState.HELD


def hold(workload: Workload) -> tuple[SpecChange, Kept]:
    before = Annotation.PAUSED_BEFORE.value
    if held_on_delete(workload):
        # Held already (a person's OnDelete): nothing changes, and nothing will be undone.
        return {}, {before: "true"}
    current = partition(workload) or 0
    frozen = max(current, _lowest_updated_ordinal(workload))
    kept = {
        before: "false",
        Annotation.PAUSED_PARTITION.value: str(frozen),
        Annotation.PARTITION_BEFORE.value: str(current),
    }
    return {"updateStrategy": {"rollingUpdate": {"partition": frozen}}}, kept


def kept_problem(present: Mapping[str, str]) -> str:
    texts = [present[key] for key in KEPT_KEYS]
    if not all(_DIGITS.fullmatch(text) for text in texts):
        return "partition-before or paused-partition is not a whole number"
    if int(texts[0]) > int(texts[1]):
        return "partition-before is above paused-partition"
    return ""


def trust(
    workload: Workload, present: Mapping[str, str], holders: tuple[str, ...], held_before: bool
) -> PauseRecord:
    if held_before:
        return held_by_on_delete(workload, holders)
    before = int(present[Annotation.PARTITION_BEFORE.value])
    frozen = int(present[Annotation.PAUSED_PARTITION.value])
    if strategy_type(workload) == ON_DELETE:
        return disagrees("its strategy was switched to OnDelete since the pause", holders)
    current = partition(workload)
    if current is None:
        return disagrees("its partition is not a whole number", holders)
    if current < frozen:
        return PauseRecord(
            RecordState.STALE,
            problem=f"its partition was lowered by hand to {current}",
            named=holders,
        )
    if current > frozen:
        return disagrees(f"its partition is {current}, the pause set {frozen}", holders)
    restore = {"updateStrategy": {"rollingUpdate": {"partition": before}}}
    return PauseRecord(RecordState.HELD, holders, False, restore, named=holders)


def _lowest_updated_ordinal(statefulset: Workload) -> int:
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
