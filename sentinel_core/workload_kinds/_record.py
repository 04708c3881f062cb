"""Read the pause record on a target strictly, asking the target's kind what it keeps of its own.

``sentinel_core.pause_record`` holds the record's shape and the checks every kind shares; the
kind (``WorkloadKind.kept_keys``, ``kept_problem``, ``trust``) says which annotations its pause
keeps of what it changed, how they are read, and whether the record agrees with the object it
sits on (docs/status.md#when-a-pause-record-is-not-trusted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import (
    KEPT_KEYS,
    NO_RECORD,
    RECORD_KEYS,
    PauseRecord,
    RecordState,
    annotations_of,
    named_holders,
    shared_problem,
    short,
)
from sentinel_core.workload_kinds._kind import WorkloadKind
from sentinel_core.workload_kinds._registry import kind_named


def read_record(kind: str, workload: Mapping[str, Any]) -> PauseRecord:
    """Return the pause record on ``workload`` (of ``kind``) and whether it can be trusted."""
    annotations = annotations_of(workload)
    present = {key: annotations[key] for key in RECORD_KEYS if key in annotations}
    if not present:
        return NO_RECORD
    named = named_holders(present.get(Annotation.PAUSED_BY.value))
    target = kind_named(kind)
    problem = shared_problem(present) or _kept_problem(target, present)
    if problem:
        return PauseRecord(RecordState.UNTRUSTED, problem=problem, named=named)
    held_before = present[Annotation.PAUSED_BEFORE.value] == "true"
    return target.trust(workload, present, named, held_before)


def _kept_problem(kind: WorkloadKind, present: Mapping[str, str]) -> str:
    """Return why what the kind's pause kept cannot be read; "" when it can."""
    # A kind keeps only its own annotations, and a target held before keeps none.
    changed = present[Annotation.PAUSED_BEFORE.value] == "false"
    expected = kind.kept_keys if changed else ()
    for key in KEPT_KEYS:
        if key in expected and key not in present:
            return f"{short(key)} is missing"
        if key not in expected and key in present:
            return f"{short(key)} does not belong to this pause"
    return kind.kept_problem(present) if changed else ""
