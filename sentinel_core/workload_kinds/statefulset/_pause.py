"""How a StatefulSet is held: its partition raised to the lowest ordinal already updated."""

from __future__ import annotations

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import PauseRecord, RecordState, partition
from sentinel_core.values import integer
from sentinel_core.workload_kinds._kind import Kept, SpecChange, Workload, held_on_delete


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
