"""What a ``sequential`` metric reads from Prometheus, and where its evidence starts (pure).

The kind's ``facts`` and ``measure`` (for the operator) and its judge (for the decision core)
share these, so both derive the same answers from the same status: ``begin`` says which state
the evidence continues from (or where a fresh one starts), ``plan`` which whole steps of
``interval`` lie between its ``through`` and now, ``samples_queries`` the two queries that read
them (the raw samples of the bad and of all events' counters) and ``steps_of`` turns the answers
into ``_evidence.Step``s. docs/analysis.md ("Sequential judgment") describes the arithmetic.

A step's count is the counter's difference over the step, exactly: step ``i`` is the window
``(through + (i-1)·interval, through + i·interval]``, and its count per series is the sum of the
differences between consecutive raw samples whose later sample lies in it (a value lower than
the one before is a counter reset and counts from zero, as Prometheus's ``increase`` counts it),
nothing extrapolated. Consecutive steps share their boundary sample (the last one at or before
the boundary), so each scraped event is counted once. Whatever was not read (an outage, a
restart, a failover) is read by the next evaluation from the same ``through``; nothing is read
twice because ``through`` only moves with the steps counted, in the status.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sentinel_core.conditions import ConditionType, Reason
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.metric_kinds._kind import (
    Asking,
    Facts,
    Range,
    Samples,
    Situation,
    TimedSeries,
)
from sentinel_core.metric_kinds.sequential._evidence import Side, State, Step, fresh
from sentinel_core.metric_kinds.sequential._spec import POD_LABEL, Sequential
from sentinel_core.values import parse_time, utc_seconds

# The label the query adds to tell its parts apart (bad, total, or a histogram's good events).
PART_LABEL = "sentinel_part"
# At most this many steps per read: one answer stays small, and a long backlog (an analysis
# created long after its rollout began, a long outage) is caught up over a few evaluations.
MAX_STEPS = 1000
# At most this long per read (its steps' windows): one answer of raw samples stays far below the
# client's size cap even at a 1 s scrape interval; a longer backlog takes a few evaluations.
MAX_READ_SECONDS = 900.0
# How far before ``through`` a read starts, to find each series' boundary sample (the last one
# at or before ``through``): Prometheus's own lookback, beyond which a series is stale.
LOOKBACK_SECONDS = 300.0
# Steps ending within this long before now are left to the next evaluation: a scrape in flight
# would otherwise be missed by a step already counted.
MAX_SETTLE_SECONDS = 10.0


class _Condition(Protocol):
    @property
    def reason(self) -> str: ...
    @property
    def last_transition_time(self) -> datetime | None: ...


class _Result(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def sequential(self) -> State | None: ...


class _Status(Protocol):
    """What ``basis_of`` reads of a status: ``status.AnalysisStatus`` (which imports this kind)."""

    @property
    def metric_results(self) -> Sequence[_Result]: ...
    def condition(self, type_: ConditionType) -> _Condition | None: ...


class _Rollout(Protocol):
    @property
    def started_at(self) -> datetime | None: ...


@dataclass(frozen=True)
class Reading:
    """What the adapter read for one sequential metric in one evaluation.

    ``new_hash`` is None when the target has no ReplicaSet; ``old_hashes`` is empty when no old
    ReplicaSet has replicas (nothing was read then). ``steps`` are whole steps after the
    state's ``through``, oldest first.
    """

    new_hash: str | None
    old_hashes: tuple[str, ...]
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The steps to read: ``count`` of them, the first ending at ``first``."""

    first: datetime
    count: int
    step_seconds: float

    @property
    def last(self) -> datetime:
        return self.first + timedelta(seconds=self.step_seconds * (self.count - 1))

    @property
    def start(self) -> datetime:
        """Return where the first step begins: the ``through`` it was planned from."""
        return self.first - timedelta(seconds=self.step_seconds)


@dataclass(frozen=True)
class Basis:
    """What says where one metric's evidence continues from, all read from the status."""

    previous: State | None
    generation: int
    rollout_start: datetime | None
    resumed_at: datetime | None
    now: datetime

    def state(self, new_hash: str) -> State:
        """Return the state to continue from while ``new_hash`` is the new pods' hash."""
        return begin(
            self.previous,
            new_hash=new_hash,
            generation=self.generation,
            rollout_start=self.rollout_start,
            resumed_at=self.resumed_at,
            now=self.now,
        )


def basis_of(
    status: _Status,
    metric: str,
    *,
    generation: int,
    rollout: _Rollout | None,
    now: datetime,
    resumed_now: bool = False,
) -> Basis:
    """Return metric ``metric``'s basis in ``status`` (the adapter's and the core's alike).

    ``resumed_now``: this attempt saw a person resume the target (the core only).
    """
    previous = next((r.sequential for r in status.metric_results if r.name == metric), None)
    now = utc_seconds(now)
    paused = status.condition(ConditionType.ROLLOUT_PAUSED)
    resumed_at = (
        paused.last_transition_time
        if paused is not None and paused.reason == Reason.RESUMED_BY_USER
        else None
    )
    return Basis(
        previous=previous,
        generation=generation,
        rollout_start=rollout.started_at if rollout is not None else None,
        resumed_at=now if resumed_now else resumed_at,
        now=now,
    )


def key_of(new_hash: str, generation: int) -> str:
    """Return what the evidence is about: the new pods and the spec's generation."""
    return f"{new_hash}/{generation}"


def begin(
    previous: State | None,
    *,
    new_hash: str,
    generation: int,
    rollout_start: datetime | None,
    resumed_at: datetime | None,
    now: datetime,
) -> State:
    """Return the state the evidence continues from: ``previous``, or a fresh one.

    A new rollout (another new hash) counts from when it began (``rollout_start``, or now when
    the operator did not see it begin); a spec edit (another generation) from now; a resume
    (``resumed_at`` after the state's ``since``) from the resume. Nothing is carried over.
    """
    key = key_of(new_hash, generation)
    since = parse_time(previous.since) if previous is not None else None
    resumed_after = resumed_at is not None and (since is None or since < resumed_at)
    if previous is not None and previous.key == key and not resumed_after:
        return previous
    same_rollout = previous is not None and previous.key.split("/", 1)[0] == new_hash
    start = now if same_rollout or rollout_start is None else rollout_start
    if resumed_at is not None and resumed_at > start:
        start = resumed_at
    return fresh(key, instant(min(start, now)))


def plan(through: str, now: datetime, step_seconds: float) -> Plan | None:
    """Return the whole steps after ``through`` that ended by now (less a settle); None if none."""
    start = parse_time(through)
    if start is None or step_seconds <= 0:
        return None
    settle = min(step_seconds, MAX_SETTLE_SECONDS)
    available = (now - start).total_seconds() - settle
    per_read = max(1, math.floor(MAX_READ_SECONDS / step_seconds + 1e-9))
    count = min(math.floor(available / step_seconds + 1e-9), MAX_STEPS, per_read)
    if count < 1:
        return None
    return Plan(
        first=start + timedelta(seconds=step_seconds), count=count, step_seconds=step_seconds
    )


def samples_queries(sequential: Sequential, planned: Plan) -> dict[str, str]:
    """Return, per part, the range selector whose raw samples count ``planned``'s steps.

    Evaluated at ``planned.last``, each reaches ``LOOKBACK_SECONDS`` before the first step, where
    each series' boundary sample is. The parts are ``bad`` and ``total``, or a histogram's
    ``total`` (``_count``) and ``good`` (the ``slowerThan`` bucket).
    """
    span = planned.step_seconds * planned.count + LOOKBACK_SECONDS
    window = f"{round(span * 1000)}ms"
    if sequential.histogram is not None:
        assert sequential.slower_than is not None
        name, matchers = _split(sequential.histogram)
        le = f'le=~"{boundary_pattern(sequential.slower_than)}"'
        good = f"{name}_bucket{{{', '.join([*matchers, le])}}}"
        parts = {"total": _selector(f"{name}_count", matchers), "good": good}
    else:
        assert sequential.bad is not None and sequential.total is not None
        parts = {"bad": sequential.bad, "total": sequential.total}
    return {part: f"{selector}[{window}]" for part, selector in parts.items()}


def boundaries_query(sequential: Sequential) -> str:
    """Return the instant query listing a histogram's bucket boundaries (its ``le`` values)."""
    assert sequential.histogram is not None
    name, matchers = _split(sequential.histogram)
    return f"count by (le) ({_selector(f'{name}_bucket', matchers)})"


def lacks_boundary(sequential: Sequential, series: Sequence[TimedSeries]) -> bool:
    """Return whether a histogram answered its events but not the slowerThan boundary."""
    if sequential.histogram is None:
        return False
    parts = {labels.get(PART_LABEL) for labels, points in series if points}
    return "total" in parts and "good" not in parts


def boundary_pattern(boundary: float) -> str:
    """Return a regular expression matching the ``le`` texts clients write for ``boundary``.

    Go clients write 1 and 0.25, Python's write 1.0 and 0.25; Prometheus 3 normalises either.
    """
    texts = {f"{boundary:g}", repr(float(boundary))}
    if float(boundary).is_integer():
        texts.add(str(int(boundary)))
    return "|".join(sorted(re.escape(text).replace("\\", "\\\\") for text in texts))


def steps_of(
    sequential: Sequential,
    series: Sequence[TimedSeries],
    *,
    plan: Plan,
    new_hash: str,
    old_hashes: Sequence[str],
) -> tuple[Step, ...]:
    """Return the planned steps' counts per side and pod from the raw samples of ``series``.

    Each series is labelled with its part (``PART_LABEL``); its counts per step are its counter's
    differences (``step_counts``), summed per side and pod. A step without a sample of a pod
    counts 0 for it (Prometheus had nothing scraped there).
    """
    old = set(old_hashes)
    # (step index, side, pod) -> part -> count
    counts: dict[tuple[int, str, str], dict[str, float]] = {}
    for labels, points in series:
        side_hash = labels.get(sequential.by)
        side = "new" if side_hash == new_hash else "old" if side_hash in old else None
        part = labels.get(PART_LABEL)
        if side is None or part is None:
            continue
        pod = labels.get(POD_LABEL, "")
        for index, value in step_counts(points, plan).items():
            cell = counts.setdefault((index, side, pod), {})
            cell[part] = cell.get(part, 0.0) + value
    pods: dict[tuple[int, str], list[tuple[str, float, float]]] = {}
    for (index, side, pod), cell in sorted(counts.items()):
        pods.setdefault((index, side), []).append((pod, *_pod_counts(sequential, cell)))
    return tuple(
        Step(
            new=_side(pods.get((index, "new"), [])),
            old=_side(pods.get((index, "old"), [])),
            end=instant(plan.first + timedelta(seconds=plan.step_seconds * index)),
        )
        for index in range(plan.count)
    )


def step_counts(points: Sequence[tuple[float, float]], plan: Plan) -> dict[int, float]:
    """Return one counter series' events per step index of ``plan``, from its raw samples.

    A sample in step i adds its difference to the sample before it, or its whole value when
    lower (a counter reset: the counter restarted from zero, as ``increase`` reads it). The
    series' first sample in the read is only a base, as in ``increase``: a series first seen
    after an outage longer than the read's lookback would otherwise count its whole life in one
    step. Timestamps are compared in whole milliseconds, Prometheus's resolution, so a sample
    exactly on a boundary belongs to the step that ends there.
    """
    start_ms = round(plan.start.timestamp() * 1000)
    step_ms = round(plan.step_seconds * 1000)
    counts: dict[int, float] = {}
    previous: float | None = None
    for moment, value in sorted(points):
        if not math.isfinite(value) or value < 0:
            continue
        offset = round(moment * 1000) - start_ms
        if offset > 0:
            index = (offset - 1) // step_ms
            if index >= plan.count:
                break
            if previous is not None:
                added = value if value < previous else value - previous
                counts[index] = counts.get(index, 0.0) + added
        previous = value
    return counts


def instant(moment: datetime) -> str:
    """Return ``moment`` in RFC 3339 UTC: whole seconds, or milliseconds when it has them."""
    moment = moment.astimezone(UTC)
    if moment.microsecond == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _pod_counts(sequential: Sequential, cell: Mapping[str, float]) -> tuple[float, float]:
    total = cell.get("total", 0.0)
    if sequential.histogram is not None:
        bad = total - cell.get("good", 0.0)
    else:
        bad = cell.get("bad", 0.0)
    return min(max(bad, 0.0), total), total


def _side(pods: list[tuple[str, float, float]]) -> Side:
    bad = sum(b for _, b, _ in pods)
    total = sum(t for _, _, t in pods)
    # The names follow each old pod's counts across steps: its persistent spread.
    return Side(
        bad=bad,
        total=total,
        pods=tuple((b, t) for _, b, t in pods),
        names=tuple(name for name, _, _ in pods),
    )


def _split(selector: str) -> tuple[str, list[str]]:
    """Return a selector's metric name and its label matchers."""
    name, _, rest = selector.partition("{")
    inner = rest.rstrip().removesuffix("}").strip().rstrip(",")
    return name.strip(), [inner] if inner else []


def _selector(name: str, matchers: list[str]) -> str:
    return f"{name}{{{', '.join(matchers)}}}" if matchers else name


def facts(metric: Any, situation: Situation) -> Facts:
    """Return the facts to measure ``metric`` with: where its evidence continues from."""
    shared = situation.facts
    if situation.new_hash is None:
        return shared
    basis = basis_of(
        situation.status,
        metric.name,
        generation=situation.generation,
        rollout=situation.rollout,
        now=situation.now,
    )
    return replace(shared, through=basis.state(situation.new_hash).through)


def measure(metric: Any, facts: Facts) -> Asking:
    """Ask the raw samples of the whole steps since ``through``: one query per part.

    Nothing is asked without two sides. A histogram without the ``slowerThan`` boundary is an
    invalid query, whose message names the boundaries it has (one more query, only then).
    """
    spec = metric.sequential
    new_hash, old_hashes, now = facts.new_hash, facts.old_hashes, facts.now
    reading = Reading(new_hash, old_hashes)
    planned = (
        plan(facts.through, now, facts.step)
        if facts.through is not None and now is not None
        else None
    )
    if new_hash is None or not old_hashes or planned is None or now is None:
        return Measurement(metric=metric.name, reading=reading)
    series: list[TimedSeries] = []
    for part, query in samples_queries(spec, planned).items():
        answer = yield Samples(
            query, at=planned.last, label=f"{part} samples of {planned.count} steps"
        )
        assert isinstance(answer, tuple)
        series.extend(({**labels, PART_LABEL: part}, points) for labels, points in answer)
    if lacks_boundary(spec, series):
        found = yield Range(boundaries_query(spec), start=now, end=now, step=facts.step)
        assert isinstance(found, tuple)
        return _lacking_boundary(metric.name, spec, found)
    steps = steps_of(spec, series, plan=planned, new_hash=new_hash, old_hashes=old_hashes)
    return Measurement(metric=metric.name, reading=replace(reading, steps=steps))


def _lacking_boundary(name: str, spec: Sequential, answer: Sequence[TimedSeries]) -> Measurement:
    """Return the invalid query of a histogram without the slowerThan boundary."""
    found = {labels.get("le", "") for labels, _ in answer} - {""}
    shown = ", ".join(sorted(found, key=_boundary)) or "none"
    return Measurement(
        metric=name,
        error=MeasurementError.INVALID_QUERY,
        message=(
            f"histogram {spec.histogram} has no bucket le={spec.slower_than:g} for slowerThan; "
            f"its boundaries are {shown}"
        ),
    )


def _boundary(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")
