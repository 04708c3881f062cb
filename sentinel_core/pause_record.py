"""Read the pause record on a target strictly, and tell whether it can be trusted.

A pause writes a record on the target (docs/status.md#pausing-each-kind): who holds it
(``paused-by``), whether the target was already held before (``paused-before``) and, for a
StatefulSet or a DaemonSet, what the pause changed (``partition-before`` and
``paused-partition``, or ``update-strategy-before``). Annotations can be edited by anyone who may
edit the target, so nothing in them is taken on faith: ``read_record`` parses every value
strictly (ASCII digits, bounded lengths, JSON of a known shape parsed only once it is small
enough to be shallow) and checks the record against the target it sits on. The answer is one of:

- ``NONE``: no record; nothing on the target is Sentinel's.
- ``HELD``: a whole record that agrees with the target: the holders may release it, and the last
  one restores what the record says the target had.
- ``STALE``: a whole record on a target a person resumed by hand (a Deployment unpaused, the
  partition lowered, the strategy switched back): the hold is over and the record is left over.
- ``UNTRUSTED``: a record that disagrees with the target (the partition raised or the strategy
  changed since the pause), half-deleted, garbled or oversized. Nothing in it is restored.

Pure: the operator and the web app act on the answer through ``sentinel_core.workload_kinds`` and
``sentinel_cluster.writes``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.kinds import DAEMON_SET, DEPLOYMENT, STATEFUL_SET

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
# Every annotation a pause writes: what a release by the last holder, or a clean-up, removes.
ALL_KEYS = (*RECORD_KEYS, Annotation.PAUSED_AT.value, Annotation.PAUSE_REASON.value)

# Bounds, checked before anything is parsed. Holders: far more analyses than guard one target;
# a namespace is a DNS label (63), an analysis name a DNS subdomain (253).
MAX_HOLDERS = 64
MAX_PAUSED_BY = MAX_HOLDERS * (63 + 1 + 253 + 1)
# A partition is an int32; nine digits are plenty and can never overflow one.
MAX_DIGITS = 9
# The saved DaemonSet strategy is a few dozen characters; 512 cannot nest deep enough to matter.
MAX_STRATEGY = 512
_HOLDER = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
# A rollingUpdate parameter: an int or a percentage, as the API server accepts them.
_INT_OR_PERCENT = re.compile(r"[0-9]{1,9}%?")


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


def read_record(kind: str, workload: Mapping[str, Any]) -> PauseRecord:
    """Return the pause record on ``workload`` (of ``kind``) and whether it can be trusted."""
    annotations = annotations_of(workload)
    present = {key: annotations[key] for key in RECORD_KEYS if key in annotations}
    if not present:
        return NO_RECORD
    named = _named(present.get(Annotation.PAUSED_BY.value))
    problem = _unreadable(kind, present)
    if problem:
        return PauseRecord(RecordState.UNTRUSTED, problem=problem, named=named)
    holders = named
    held_before = present[Annotation.PAUSED_BEFORE.value] == "true"
    if kind == DEPLOYMENT:
        if (workload.get("spec") or {}).get("paused") is not True:
            return PauseRecord(RecordState.STALE, problem="it was resumed by hand", named=named)
        restore = None if held_before else {"paused": False}
        return PauseRecord(RecordState.HELD, holders, held_before, restore, named=named)
    strategy = strategy_type(workload)
    if held_before:
        if strategy != ON_DELETE:
            return PauseRecord(
                RecordState.STALE, problem="its strategy was switched by hand", named=named
            )
        return PauseRecord(RecordState.HELD, holders, True, None, named=named)
    if kind == STATEFUL_SET:
        return _statefulset(workload, present, holders, strategy)
    return _daemonset(present, holders, strategy)


def _statefulset(
    workload: Mapping[str, Any], present: Mapping[str, str], holders: tuple[str, ...], strategy: str
) -> PauseRecord:
    before = int(present[Annotation.PARTITION_BEFORE.value])
    frozen = int(present[Annotation.PAUSED_PARTITION.value])
    if strategy == ON_DELETE:
        return _disagrees("its strategy was switched to OnDelete since the pause", holders)
    current = partition(workload)
    if current is None:
        return _disagrees("its partition is not a whole number", holders)
    if current < frozen:
        return PauseRecord(
            RecordState.STALE,
            problem=f"its partition was lowered by hand to {current}",
            named=holders,
        )
    if current > frozen:
        return _disagrees(f"its partition is {current}, the pause set {frozen}", holders)
    restore = {"updateStrategy": {"rollingUpdate": {"partition": before}}}
    return PauseRecord(RecordState.HELD, holders, False, restore, named=holders)


def _daemonset(present: Mapping[str, str], holders: tuple[str, ...], strategy: str) -> PauseRecord:
    saved = json.loads(present[Annotation.UPDATE_STRATEGY_BEFORE.value])
    if strategy != ON_DELETE:
        return PauseRecord(
            RecordState.STALE, problem="its strategy was switched back by hand", named=holders
        )
    return PauseRecord(RecordState.HELD, holders, False, {"updateStrategy": saved}, named=holders)


def _disagrees(problem: str, named: tuple[str, ...]) -> PauseRecord:
    return PauseRecord(RecordState.UNTRUSTED, problem=problem, named=named)


def _unreadable(kind: str, present: Mapping[str, Any]) -> str:
    """Return why the record's values cannot be read for ``kind``; "" when they all can."""
    for key, value in present.items():
        if not isinstance(value, str):
            return f"{_short(key)} is not a string"
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
    partition_keys = (Annotation.PARTITION_BEFORE.value, Annotation.PAUSED_PARTITION.value)
    strategy_key = Annotation.UPDATE_STRATEGY_BEFORE.value
    # A kind keeps only its own annotations, and a target held before keeps none.
    expected: tuple[str, ...] = ()
    if kind == STATEFUL_SET and before == "false":
        expected = partition_keys
    elif kind == DAEMON_SET and before == "false":
        expected = (strategy_key,)
    for key in (*partition_keys, strategy_key):
        if key in expected and key not in present:
            return f"{_short(key)} is missing"
        if key not in expected and key in present:
            return f"{_short(key)} does not belong to this pause"
    if kind == STATEFUL_SET and before == "false":
        texts = [present[key] for key in partition_keys]
        if not all(_DIGITS.fullmatch(text) for text in texts):
            return "partition-before or paused-partition is not a whole number"
        if int(texts[0]) > int(texts[1]):
            return "partition-before is above paused-partition"
    if kind == DAEMON_SET and before == "false":
        return _strategy_problem(present[strategy_key])
    return ""


def _strategy_problem(text: str) -> str:
    """Return why a saved DaemonSet strategy is not one a pause could have saved; "" if it is."""
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


def _named(paused_by: object) -> tuple[str, ...]:
    """Return the well-formed entries of a paused-by value, however garbled the rest is."""
    if not isinstance(paused_by, str) or len(paused_by) > MAX_PAUSED_BY:
        return ()
    entries = (entry for entry in paused_by.split(",")[:MAX_HOLDERS] if _HOLDER.fullmatch(entry))
    return tuple(dict.fromkeys(entries))


def _short(key: str) -> str:
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
