"""The pause record on a target: its shape, its states, and the checks every kind shares.

A pause writes a record on the target (docs/status.md#pausing-each-kind): who holds it
(``paused-by``), whether the target was already held before (``paused-before``) and, for a
StatefulSet or a DaemonSet, what the pause changed (``partition-before`` and
``paused-partition``, or ``update-strategy-before``). Annotations can be edited by anyone who may
edit the target, so nothing in them is taken on faith: ``read_record``
(``sentinel_core.workload_kinds``) parses every value strictly (ASCII digits, bounded lengths,
JSON of a known shape parsed only once it is small enough to be shallow), what every kind keeps
here (``shared_problem``) and what a kind keeps of its own in the kind's package, and the kind
checks the record against the target it sits on. The answer is one of:

- ``NONE``: no record; nothing on the target is Sentinel's.
- ``HELD``: a whole record that agrees with the target: the holders may release it, and the last
  one restores what the record says the target had.
- ``STALE``: a whole record on a target a person resumed by hand (a Deployment unpaused, the
  partition lowered, the strategy switched back): the hold is over and the record is left over.
- ``UNTRUSTED``: a record that disagrees with the target (the partition raised or the strategy
  changed since the pause), half-deleted, garbled or oversized. Nothing in it is restored.

A leaf: the target kinds import it, and it imports none of them. Pure: the operator and the web
app act on the answer through ``sentinel_core.workload_kinds`` and ``sentinel_cluster.writes``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sentinel_core.conditions import Annotation

ON_DELETE = "OnDelete"
ROLLING_UPDATE = "RollingUpdate"

# The annotations that make up the record; paused-at and pause-reason are for people only.
RECORD_KEYS = (
    Annotation.PAUSED_BY.value,
    Annotation.PAUSED_BEFORE.value,
    Annotation.PAUSED_PARTITION.value,
    Annotation.PARTITION_BEFORE.value,
    Annotation.UPDATE_STRATEGY_BEFORE.value,
)
# What a kind's pause keeps of what it changed, beside paused-by and paused-before (each kind
# keeps only its own: ``WorkloadKind.kept_keys``), in the order a record's are checked.
KEPT_KEYS = (
    Annotation.PARTITION_BEFORE.value,
    Annotation.PAUSED_PARTITION.value,
    Annotation.UPDATE_STRATEGY_BEFORE.value,
)
# Every annotation a pause writes: what a release by the last holder, or a clean-up, removes.
ALL_KEYS = (*RECORD_KEYS, Annotation.PAUSED_AT.value, Annotation.PAUSE_REASON.value)

# Bounds, checked before anything is parsed. Holders: far more analyses than guard one target;
# a namespace is a DNS label (63), an analysis name a DNS subdomain (253).
MAX_HOLDERS = 64
MAX_PAUSED_BY = MAX_HOLDERS * (63 + 1 + 253 + 1)
_HOLDER = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


class RecordState(StrEnum):
    """What the record on a target says, once checked against the target."""

    NONE = "none"
    HELD = "held"
    STALE = "stale"
    UNTRUSTED = "untrusted"


@dataclass(frozen=True)
class PauseRecord:
    """The pause record on one target, read strictly and checked against it."""

    state: RecordState
    # HELD: the analyses holding the target, in the order they paused. Empty otherwise: the
    # holders of a stale or untrusted record hold nothing.
    holders: tuple[str, ...] = ()
    # Whether the target was already held when the first holder paused it (HELD only).
    held_before: bool = False
    # HELD: the spec change that gives the target back what it had before the first pause;
    # None when the pause changed nothing (the target was held already).
    restore: dict[str, Any] | None = None
    # UNTRUSTED: why, as a clause ("partition-before is missing"); STALE: what the person did.
    problem: str = ""
    # The ``namespace/name`` entries the paused-by annotation names, read as far as they are
    # readable, whatever the state: who to tell when the record is not trusted.
    named: tuple[str, ...] = ()


NO_RECORD = PauseRecord(RecordState.NONE)


def shared_problem(present: Mapping[str, Any]) -> str:
    """Return why the record's values every kind keeps cannot be read; "" when they all can.

    Every value a string, ``paused-by`` a bounded list of distinct ``namespace/name`` entries,
    ``paused-before`` true or false. What a kind keeps of its own is checked by the kind
    (``sentinel_core.workload_kinds``: ``read_record``).
    """
    for key, value in present.items():
        if not isinstance(value, str):
            return f"{short(key)} is not a string"
    paused_by = present.get(Annotation.PAUSED_BY.value)
    if paused_by is None:
        return "paused-by is missing"
    if len(paused_by) > MAX_PAUSED_BY:
        return "paused-by is oversized"
    entries = paused_by.split(",")
    if len(entries) > MAX_HOLDERS:
        return "paused-by names too many analyses"
    if not all(_HOLDER.fullmatch(entry) for entry in entries) or len(set(entries)) != len(entries):
        return "paused-by is not a list of distinct namespace/name entries"
    before = present.get(Annotation.PAUSED_BEFORE.value)
    if before is None:
        return "paused-before is missing"
    if before not in ("true", "false"):
        return "paused-before is neither true nor false"
    return ""


def disagrees(problem: str, named: tuple[str, ...]) -> PauseRecord:
    """Return an untrusted record: it disagrees with the target (``problem``)."""
    return PauseRecord(RecordState.UNTRUSTED, problem=problem, named=named)


def named_holders(paused_by: object) -> tuple[str, ...]:
    """Return the well-formed entries of a paused-by value, however garbled the rest is."""
    if not isinstance(paused_by, str) or len(paused_by) > MAX_PAUSED_BY:
        return ()
    entries = (entry for entry in paused_by.split(",")[:MAX_HOLDERS] if _HOLDER.fullmatch(entry))
    return tuple(dict.fromkeys(entries))


def short(key: str) -> str:
    """Return an annotation's key without the prefix, as the record's problems name it."""
    return key.removeprefix("sentinel.example.com/")


def annotations_of(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return a workload's annotations; an empty mapping when they are absent or not one."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, Mapping) else {}


def strategy_type(workload: Mapping[str, Any]) -> str:
    """Return a StatefulSet's or DaemonSet's ``updateStrategy.type`` (RollingUpdate by default)."""
    strategy = (workload.get("spec") or {}).get("updateStrategy") or {}
    return str(strategy.get("type") or ROLLING_UPDATE)


def partition(statefulset: Mapping[str, Any]) -> int | None:
    """Return a StatefulSet's ``rollingUpdate.partition`` (0 when unset); None when garbled."""
    strategy = (statefulset.get("spec") or {}).get("updateStrategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("partition", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value
