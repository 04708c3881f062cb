"""Check a status read back against what the operator could have written (docs/status.md).

The status subresource is not the operator's alone: a person with kubectl, or any account that
may resume an analysis, can write it. ``check`` takes the status as read, the spec, the
analysis's generation and the evaluation's now, and returns the status with every part the
operator could not have written discarded, plus one sentence per discarded part. What is
discarded is what a fresh start has: a sequential state starts afresh from the rollout, the
failure count from zero (or from the window when only the count disagrees with it), a time from
the future is dropped (a condition's is moved to now), a rollout from the future is seen again.

``decide`` checks its ``Observation.previous`` first and reports the sentences in one Warning
Event ``StatusDiscarded``; the status it writes holds none of it, so the Event comes once per
discard. The reconciler checks the status it read before it measures, so a sequential metric
reads its steps from where the core continues, and hands ``decide`` the sentences.

What no check can tell from the status alone is a value the operator could have written, e.g.
``failures: 2`` beside ``lastVerdict: Fail``: the operator's seal (``status_seal``) does, and a
pause also needs a Fail of the evaluation itself (``decide``). Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sentinel_core.conditions import Verdict
from sentinel_core.metric_kinds.sequential import GRID, State, grid
from sentinel_core.spec import MAX_METRICS, AnalysisSpec
from sentinel_core.status import AnalysisStatus, Condition, MetricResult
from sentinel_core.values import format_time, parse_time, utc_seconds

# Times up to this far ahead of the evaluation's clock are accepted: another replica of the
# operator may have written them with a clock a little ahead. Farther is from no clock.
MAX_CLOCK_SKEW = timedelta(seconds=60)
# More events than this since a rollout began is no traffic (a million a second for 30 years).
MAX_COUNT = 1e15
# A step's end is written to the millisecond (sequential_read.instant), so each step may move
# ``through`` off the interval's grid by up to a millisecond.
_STEP_SLACK_SECONDS = 0.001
# Each step's log ratios are rounded down to 6 decimals (sequential._floor).
_LOG_SLACK = 1e-6


@dataclass(frozen=True)
class Checked:
    """The status to go on from, and what was discarded from the one read (one sentence each)."""

    status: AnalysisStatus
    discarded: tuple[str, ...] = ()


def check(
    status: AnalysisStatus, *, spec: AnalysisSpec | None, generation: int, now: datetime
) -> Checked:
    """Return ``status`` without what the operator could not have written, and what that was.

    ``spec`` is None when the spec is invalid: what depends on it (the window's size, the
    sequential steps' interval) is then not checked.
    """
    now = utc_seconds(now)
    found: list[str] = []
    if len(status.metric_results) > MAX_METRICS:
        found.append(
            f"metricResults holds {len(status.metric_results)} results, more than the "
            f"{MAX_METRICS} metrics a spec may have"
        )
        status = replace(status, metric_results=())
    status = _times(status, now, found)
    status = _count(status, spec, generation, found)
    results = tuple(
        _sequential(result, spec, generation, now, found) for result in status.metric_results
    )
    return Checked(replace(status, metric_results=results), tuple(found))


def trusted(
    status: AnalysisStatus, *, spec: AnalysisSpec | None, generation: int, now: datetime
) -> AnalysisStatus:
    """Return ``check``'s status alone (the reconciler's read before it measures)."""
    return check(status, spec=spec, generation=generation, now=now).status


def _future(moment: datetime | None, now: datetime) -> bool:
    return moment is not None and moment > now + MAX_CLOCK_SKEW


def _times(status: AnalysisStatus, now: datetime, found: list[str]) -> AnalysisStatus:
    if _future(status.last_evaluation_time, now):
        assert status.last_evaluation_time is not None
        found.append(
            f"lastEvaluationTime {format_time(status.last_evaluation_time)} is in the future"
        )
        status = replace(status, last_evaluation_time=None)
    if _future(status.paused_at, now):
        assert status.paused_at is not None
        found.append(f"pausedAt {format_time(status.paused_at)} is in the future")
        status = replace(status, paused_at=None)
    if status.rollout is not None and _future(status.rollout.started_at, now):
        assert status.rollout.started_at is not None
        found.append(
            f"rollout.startedAt {format_time(status.rollout.started_at)} is in the future: the "
            "rollout is read from the target again"
        )
        status = replace(status, rollout=None)
    conditions: list[Condition] = []
    for condition in status.conditions:
        if _future(condition.last_transition_time, now):
            found.append(
                f"the {condition.type} condition's lastTransitionTime "
                f"{format_time(condition.last_transition_time)} is in the future"
            )
            condition = replace(condition, last_transition_time=now)
        conditions.append(condition)
    return replace(status, conditions=tuple(conditions))


def _count(
    status: AnalysisStatus, spec: AnalysisSpec | None, generation: int, found: list[str]
) -> AnalysisStatus:
    """Check ``failures`` and ``window`` against each other and the last verdict."""
    seen = status.observed_generation
    if seen is not None and seen > generation:
        found.append(
            f"observedGeneration {seen} is ahead of the analysis's generation {generation}"
        )
        return _recount(status)
    if seen is not None and seen != generation:
        # A spec edit since: decide starts the count afresh anyway.
        return status
    window = spec.failure_window if spec is not None else None
    verdict = status.last_verdict
    if window is not None and status.window is not None:
        problem = _window_problem(status.window, window, verdict)
        if problem:
            found.append(f"window {_verdicts_text(status.window)} {problem}")
            return _recount(replace(status, window=()))
        fails = sum(1 for v in status.window if v == Verdict.FAIL)
        if status.failures != fails:
            found.append(
                f"failures {status.failures} is not the {fails} Fail of window "
                f"{_verdicts_text(status.window)}"
            )
            return replace(status, failures=fails)
        return status
    if status.failures == 0:
        return status
    problem = _failures_problem(status, windowed=window is not None)
    if problem:
        found.append(f"failures {status.failures} {problem}")
        return _recount(status)
    return status


def _recount(status: AnalysisStatus) -> AnalysisStatus:
    """Return ``status`` with the count from zero (and an empty window where it has one)."""
    return replace(status, failures=0, window=() if status.window is not None else None)


def _window_problem(window: tuple[Verdict, ...], size: int, verdict: Verdict | None) -> str:
    if len(window) > size:
        return f"holds more than failureWindow {size} verdicts"
    if any(v not in (Verdict.PASS, Verdict.FAIL) for v in window):
        return "holds a verdict that is not decisive"
    if window and verdict is None:
        return "has verdicts but lastVerdict has none"
    if window and verdict in (Verdict.PASS, Verdict.FAIL) and window[-1] != verdict:
        return f"does not end with lastVerdict {verdict}"
    return ""


def _failures_problem(status: AnalysisStatus, *, windowed: bool) -> str:
    verdict = status.last_verdict
    if windowed:
        # With failureWindow the operator always writes the window beside the count.
        return "has no window beside it"
    if status.observed_generation is None or status.last_evaluation_time is None:
        return "was counted by no evaluation (no observedGeneration or lastEvaluationTime)"
    if verdict not in (Verdict.FAIL, Verdict.INCONCLUSIVE):
        return f"follows lastVerdict {verdict or 'none'}: only a Fail counts and a Pass resets"
    results = {r.verdict for r in status.metric_results}
    if results and _verdict_of(results) != verdict:
        return f"follows lastVerdict {verdict}, which the metric results do not give"
    return ""


def _verdict_of(verdicts: set[Verdict]) -> Verdict:
    if Verdict.FAIL in verdicts:
        return Verdict.FAIL
    if Verdict.INCONCLUSIVE in verdicts:
        return Verdict.INCONCLUSIVE
    return Verdict.PASS


def _verdicts_text(window: tuple[Verdict, ...]) -> str:
    return "[" + ", ".join(str(v) for v in window) + "]"


def _sequential(
    result: MetricResult,
    spec: AnalysisSpec | None,
    generation: int,
    now: datetime,
    found: list[str],
) -> MetricResult:
    state = result.sequential
    if state is None:
        return result
    interval = spec.interval_seconds if spec is not None else None
    problem = state_problem(state, interval=interval, generation=generation, now=now)
    if not problem:
        return result
    found.append(
        f"metricResults[{result.name}].sequential {problem}: the evidence starts afresh "
        "from the rollout"
    )
    return replace(result, sequential=None)


def state_problem(state: State, *, interval: float | None, generation: int, now: datetime) -> str:
    """Return why the operator cannot have written ``state``; "" when it can have.

    ``interval`` (the spec's, None when unknown) checks that ``through`` lies whole steps after
    ``since`` when the state is of this ``generation`` (its key says so).
    """
    since, through = parse_time(state.since), parse_time(state.through)
    if since is None or through is None:
        return "has since or through that is not a time"
    if through < since:
        return f"ends (through {state.through}) before it begins (since {state.since})"
    if _future(through, now):
        return f"has through {state.through} in the future"
    counts = (state.new_bad, state.new_total, state.old_bad, state.old_total)
    if any(c > MAX_COUNT for c in counts):
        return f"counts more than {MAX_COUNT:g} events"
    if state.new_bad > state.new_total or state.old_bad > state.old_total:
        return "counts more bad events than events on a side"
    if not _ratio_defined(state):
        return "has counts whose ratio is not a finite number"
    if state.steps == 0 and (state.log_ratios or any(counts) or since != through):
        return "has counted no step but holds counts, evidence or time"
    if state.steps > 0 and not state.log_ratios:
        return "has counted steps but holds no evidence"
    if _pods_exceed_side(state):
        return "holds old pods' sums above the old side's counts"
    if state.reached_at is not None:
        # Written only as the end of a counted step: a Fail that stays (docs/analysis.md).
        reached_at = parse_time(state.reached_at)
        if state.steps == 0 or reached_at is None or not since < reached_at <= through:
            return f"has reachedAt {state.reached_at} outside its counted steps"
    problem = _tiling_problem(state, since, through, interval, generation)
    if problem:
        return problem
    return _evidence_problem(state)


def _pods_exceed_side(state: State) -> bool:
    """Return whether the old pods' sums (podSpread) count more than the old side did.

    The sums widen the margin, so sums the counts cannot have given would move the verdict;
    each pod's sum is rounded to 6 decimals per step, hence the slack.
    """
    slack = 1e-5 * (state.steps + 1) * (len(state.old_by_pod) + 1)
    bad = sum(b for _, b, _ in state.old_by_pod)
    total = sum(t for _, _, t in state.old_by_pod)
    return bad > state.old_bad + slack or total > state.old_total + slack


def _ratio_defined(state: State) -> bool:
    """Return whether the state's ratio (docs/status.md) is undefined or a finite number."""
    try:
        ratio = state.ratio
    except ZeroDivisionError:
        return False
    return ratio is None or math.isfinite(ratio)


def _tiling_problem(
    state: State, since: datetime, through: datetime, interval: float | None, generation: int
) -> str:
    _, _, of = state.key.rpartition("/")
    if interval is None or of != str(generation):
        return ""
    # Steps tile time from since: through is since plus whole intervals, one per step.
    span = (through - since).total_seconds()
    expected = state.steps * interval
    if abs(span - expected) > _STEP_SLACK_SECONDS * (state.steps + 1):
        return (
            f"counts {state.steps} steps of {interval:g} s between since {state.since} and "
            f"through {state.through}"
        )
    return ""


def _evidence_problem(state: State) -> str:
    """Return why the log ratios cannot come from the counts; "" when they can.

    One step adds at most (new bad events) x log(rho/rho0) and at least -(old bad events) x
    log(rho/rho0) at the grid point rho (docs/analysis.md: the tempering only shrinks a step
    towards 0), so the sums are bounded by the counts.
    """
    if not state.log_ratios:
        return ""
    if len(state.log_ratios) != GRID:
        return f"holds {len(state.log_ratios)} log ratios, not {GRID}"
    slack = _LOG_SLACK * (state.steps + 1)
    # log(rho / rho0) at each grid point: the same for every margin rho0.
    steps = [math.log(float(ratio)) for ratio in grid(1.0)]
    for value, step in zip(state.log_ratios, steps, strict=True):
        high, low = state.new_bad * step, -state.old_bad * step
        if value > high + slack + 1e-9 * high or value < low - slack + 1e-9 * low:
            return (
                f"holds evidence its counts cannot give ({state.new_bad:g} and "
                f"{state.old_bad:g} bad events)"
            )
    return ""
