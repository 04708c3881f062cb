"""Judge one metric's measurement against its spec: ``maxValue``, ``maxIncrease``, ``minSamples``.

``_decide.decide`` (and ``_decide.interrupted``) call ``judge`` once per metric that got an
answer; the verdicts of all metrics then make the evaluation's verdict. Pure: the baseline and
the guard were measured by the reconciler, the rollout was detected by it.

A metric with only ``maxValue`` (docs/resource.md) is judged exactly as one with the relative
thresholds left out: same verdict, same message; the worst series' labels are the one addition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sentinel_core.conditions import Reason, Verdict
from sentinel_core.kinds import DEPLOYMENT, no_new_side
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds.compare import judge_comparison
from sentinel_core.metric_kinds.sequential import (
    Basis,
    Settings,
    advance,
    counted,
    judge_sequential,
)
from sentinel_core.metric_kinds.threshold import Increase
from sentinel_core.spec import MetricSpec
from sentinel_core.status import MetricResult, Rollout
from sentinel_core.values import format_value, parse_time

# status.metricResults[].series: at most this many labels, each value cut to this length.
MAX_SERIES_LABELS = 10
MAX_LABEL_VALUE = 100


@dataclass(frozen=True)
class Judgement:
    """One metric's result, with why it is Inconclusive and what broke when it failed."""

    result: MetricResult
    # NoData, InsufficientData or NoBaseline for an Inconclusive result; None otherwise.
    reason: Reason | None = None
    # For a Fail: the one-sentence why, naming the metric ("p99: 0.412 is 249 % above the
    # baseline ..."); for an Inconclusive: what is missing, without the name.
    why: str = ""


def judge(
    metric: MetricSpec,
    m: Measurement,
    rollout: Rollout | None = None,
    *,
    sequential: SequentialContext | None = None,
    kind: str = DEPLOYMENT,
) -> Judgement:
    """Return the judgement of measurement ``m`` of ``metric`` (which got an answer).

    ``sequential`` is what a ``sequential`` metric's evidence continues from; ``kind``, the
    target's, words a missing side of ``compare`` and ``sequential``.
    """
    if metric.sequential is not None:
        if sequential is None:
            # An attempt cut short (decision.interrupted): the evidence is the status's.
            why = "not judged: the attempt ended before the evidence was continued"
            result = MetricResult(name=metric.name, verdict=Verdict.INCONCLUSIVE)
            return _inconclusive(result, Reason.NO_COMPARISON, why)
        return _judge_sequential(metric, m, sequential, kind)
    series = series_labels(m.labels)
    base = MetricResult(
        name=metric.name,
        verdict=Verdict.INCONCLUSIVE,
        max_value=metric.max_value,
        baseline=m.baseline_text if metric.max_increase is not None else None,
        samples=m.samples_text if metric.min_samples is not None else None,
        series=series,
    )
    has_value = m.value is not None and not math.isnan(m.value)
    guard = metric.min_samples
    if guard is not None and (m.samples is None or math.isnan(m.samples) or m.samples < guard.min):
        # The value is shown, only not judged: too little traffic is no evidence either way.
        if has_value and m.value is not None:
            base = _with(base, value=m.text if m.text is not None else format_value(m.value))
        got = (
            "no data" if m.samples is None else f"only {m.samples_text or format_value(m.samples)}"
        )
        why = f"minSamples query returned {got}, under the minimum {format_value(guard.min)}"
        return _inconclusive(base, Reason.INSUFFICIENT_DATA, f"{why}: too little to judge")
    if metric.compare is not None:
        # Judged from the two sides' samples; the instant value is only shown. Which side is
        # missing says more than "no data" (no ReplicaSet, no old pods, too few samples).
        if has_value and m.value is not None:
            base = _with(base, value=m.text if m.text is not None else format_value(m.value))
        return _judge_compare(metric, m, base, kind)
    # NaN is no data (docs/operator.md); the client already maps it to None, this guards the
    # contract.
    if m.value is None or math.isnan(m.value):
        message = m.message or "no data: empty result or NaN"
        return _inconclusive(base, Reason.NO_DATA, message)
    value = m.text if m.text is not None else format_value(m.value)
    base = _with(base, value=value)
    if metric.max_increase is None:
        # docs/resource.md's fixed threshold, unchanged.
        assert metric.max_value is not None  # parse_spec: at least one bound
        failed = m.value > metric.max_value
        message = m.message or (f"worst of {m.series} series" if m.series > 1 else "")
        # The words of the Healthy message before docs/resource.md, unchanged.
        why = f"{metric.name} is {value}, above maxValue {format_value(metric.max_value)}"
        return Judgement(
            _with(
                base,
                verdict=Verdict.FAIL if failed else Verdict.PASS,
                message=message,
                limit=metric.max_value,
            ),
            why=_also(why, message) if failed else "",
        )
    return _judge_relative(metric, m, base, value, rollout)


def series_labels(labels: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Return the labels kept in status: sorted by name, at most 10, values cut to 100 chars."""
    kept = sorted((k, v) for k, v in labels if k != "__name__")[:MAX_SERIES_LABELS]
    return tuple((k, v[:MAX_LABEL_VALUE]) for k, v in kept)


def _judge_relative(
    metric: MetricSpec,
    m: Measurement,
    base: MetricResult,
    value: str,
    rollout: Rollout | None,
) -> Judgement:
    increase, baseline = metric.max_increase, metric.baseline
    assert increase is not None and baseline is not None and m.value is not None
    where = baseline.describe()
    broken: list[str] = []
    bounds: list[float] = []
    no_baseline = ""
    no_rollout = baseline.before_rollout and (rollout is None or rollout.started_at is None)
    if no_rollout:
        no_baseline = "no rollout of the target seen yet, so no baseline before it"
    elif m.baseline is None or math.isnan(m.baseline):
        no_baseline = f"the baseline {where} has no data (empty result or NaN)"
    else:
        limit = increase.limit(m.baseline)
        bounds.append(limit)
        shown = m.baseline_text or format_value(m.baseline)
        if m.value > limit:
            broken.append(_above_baseline(m.value, value, m.baseline, shown, where, increase))
    if metric.max_value is not None:
        bounds.append(metric.max_value)
        if m.value > metric.max_value:
            broken.append(f"above maxValue {format_value(metric.max_value)}")
            if len(broken) == 1:
                broken[0] = f"{value} is {broken[0]}"
    detail = f"worst of {m.series} series" if m.series > 1 else ""
    limit_value = min(bounds) if bounds else None
    if broken:
        why = ", and ".join(broken)
        return Judgement(
            _with(
                base,
                verdict=Verdict.FAIL,
                message=_sentence(why, detail),
                limit=limit_value,
            ),
            why=f"{metric.name}: {_sentence(why, detail)}",
        )
    if no_baseline and (metric.max_value is None or not no_rollout):
        # Nothing decisive to compare with: Inconclusive, never counted.
        return _inconclusive(_with(base, limit=limit_value), Reason.NO_BASELINE, no_baseline)
    if no_baseline:
        message = f"{value} is within maxValue {format_value(metric.max_value or 0.0)}; "
        message += f"judged on maxValue alone: {no_baseline}"
    else:
        assert m.baseline is not None
        shown = m.baseline_text or format_value(m.baseline)
        message = f"{value} is within {increase.describe()} of the baseline {shown} {where}"
    return Judgement(
        _with(base, verdict=Verdict.PASS, message=_sentence(message, detail), limit=limit_value)
    )


def _judge_compare(metric: MetricSpec, m: Measurement, base: MetricResult, kind: str) -> Judgement:
    """Judge the new pods against the old ones (docs/analysis.md) from the samples fetched."""
    assert metric.compare is not None
    # The worst series of the instant query says nothing about which side is worse.
    base = _with(base, series=())
    if m.sides is None:
        why = "no comparison: the samples of the two sides were not fetched"
        return _inconclusive(base, Reason.NO_COMPARISON, why)
    outcome = judge_comparison(metric.compare, m.sides, kind=kind)
    if outcome.comparison is None:
        return _inconclusive(base, Reason.NO_COMPARISON, outcome.message)
    judged = _with(
        base,
        verdict=Verdict.FAIL if outcome.failed else Verdict.PASS,
        message=outcome.message,
        comparison=outcome.comparison,
    )
    return Judgement(judged, why=f"{metric.name}: {outcome.message}" if outcome.failed else "")


@dataclass(frozen=True)
class SequentialContext:
    """What a sequential metric is judged with beyond its measurement (docs/analysis.md)."""

    basis: Basis
    # The analysis's number of sequential metrics and its falsePauseRate: needed is m/budget.
    metrics: int
    budget: float


def _judge_sequential(
    metric: MetricSpec, m: Measurement, context: SequentialContext, kind: str
) -> Judgement:
    """Continue the metric's evidence with the steps read and judge it."""
    spec = metric.sequential
    assert spec is not None
    if spec.histogram is not None:
        rate, events = f"share of requests slower than {spec.slower_than:g}", "requests"
    else:
        rate, events = "error rate", "requests"
    settings = Settings(
        max_increase=spec.max_increase,
        metrics=context.metrics,
        false_pause_rate=context.budget,
        min_events=spec.min_events,
        rate_name=rate,
        events_name=events,
    )
    reading = m.reading
    base = MetricResult(name=metric.name, verdict=Verdict.INCONCLUSIVE, limit=settings.needed)
    if reading is None or reading.new_hash is None:
        why = no_new_side(kind)
        kept = context.basis.previous
        return _inconclusive(_with(base, sequential=kept), Reason.NO_COMPARISON, why)
    before = context.basis.state(reading.new_hash)
    # Only steps after the state's end count: a step is never counted twice.
    through = parse_time(before.through)
    steps = [
        step
        for step in reading.steps
        if through is None or (parse_time(step.end) or through) > through
    ]
    state = replace(advance(before, steps, settings), needed=settings.needed)
    outcome = judge_sequential(
        settings, state, rollout=True, old_side=bool(reading.old_hashes), kind=kind
    )
    judged = _with(
        base,
        value=format_value(float(f"{state.evidence:.6g}")),
        sequential=state,
        counted=counted(before, state) if steps else None,
    )
    if outcome.missing:
        return _inconclusive(judged, Reason.NO_COMPARISON, outcome.missing)
    failed = outcome.verdict == Verdict.FAIL
    return Judgement(
        _with(judged, verdict=outcome.verdict, message=outcome.message),
        why=f"{metric.name}: {outcome.message}" if failed else "",
    )


def _above_baseline(
    value: float, shown_value: str, baseline: float, shown: str, where: str, increase: Increase
) -> str:
    if baseline == 0 and increase.percent is not None:
        return (
            f"{shown_value} is above the baseline 0 {where}: with a baseline of 0 the limit "
            f"{increase.describe()} is 0 too, so any increase fails"
        )
    if baseline > 0:
        percent = (value - baseline) / baseline * 100
        return (
            f"{shown_value} is {percent:.0f} % above the baseline {shown} {where} "
            f"(limit {increase.describe()})"
        )
    return (
        f"{shown_value} is {format_value(value - baseline)} above the baseline {shown} {where} "
        f"(limit {increase.describe()})"
    )


def _inconclusive(base: MetricResult, reason: Reason, message: str) -> Judgement:
    return Judgement(_with(base, verdict=Verdict.INCONCLUSIVE, message=message), reason, message)


def _with(result: MetricResult, **changes: object) -> MetricResult:
    return replace(result, **changes)  # type: ignore[arg-type]


def _sentence(text: str, detail: str) -> str:
    return f"{text}; {detail}" if detail else text


def _also(why: str, message: str) -> str:
    return f"{why} ({message})" if message else why
