"""Judge a threshold metric: ``maxValue``, ``maxIncrease`` against its baseline, ``minSamples``.

The decision core calls the kind's ``judge`` once per metric that got an answer; ``compare``
shows the same fields and applies the same guard (``shown``, ``guard``). Pure: the baseline and
the guard were measured by the operator, the rollout was detected by it.

A metric with only ``maxValue`` (docs/resource.md) is judged exactly as one with the relative
thresholds left out: same verdict, same message; the worst series' labels are the one addition.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from sentinel_core.conditions import Reason, Verdict
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds._kind import Context, Judgement, inconclusive, series_labels
from sentinel_core.metric_kinds.threshold._read import Reading
from sentinel_core.metric_kinds.threshold._spec import Increase
from sentinel_core.values import format_value


def shown(metric: Any, m: Measurement, base: Any) -> Any:
    """Return ``base`` with what a threshold's result shows: bounds, baseline, guard, series."""
    reading = m.reading if isinstance(m.reading, Reading) else Reading()
    return replace(
        base,
        max_value=metric.max_value,
        baseline=reading.baseline_text if metric.max_increase is not None else None,
        samples=reading.samples_text if metric.min_samples is not None else None,
        series=series_labels(m.labels),
    )


def with_value(base: Any, m: Measurement) -> Any:
    """Return ``base`` showing ``m``'s value, when it has one (it is only shown, not judged)."""
    if m.value is None or math.isnan(m.value):
        return base
    return replace(base, value=m.text if m.text is not None else format_value(m.value))


def guard(metric: Any, m: Measurement, base: Any) -> Judgement | None:
    """Return the Inconclusive judgement of too little traffic; None when the guard holds."""
    guard = metric.min_samples
    reading = m.reading if isinstance(m.reading, Reading) else Reading()
    samples = reading.samples
    if guard is None or not (samples is None or math.isnan(samples) or samples < guard.min):
        return None
    # The value is shown, only not judged: too little traffic is no evidence either way.
    got = "no data" if samples is None else f"only {reading.samples_text or format_value(samples)}"
    why = f"minSamples query returned {got}, under the minimum {format_value(guard.min)}"
    return inconclusive(
        with_value(base, m), Reason.INSUFFICIENT_DATA, f"{why}: too little to judge"
    )


def judge(metric: Any, m: Measurement, base: Any, context: Context) -> Judgement:
    """Return the judgement of measurement ``m`` of ``metric`` (which got an answer)."""
    base = shown(metric, m, base)
    stopped = guard(metric, m, base)
    if stopped is not None:
        return stopped
    # NaN is no data (docs/operator.md); the client already maps it to None, this guards the
    # contract.
    if m.value is None or math.isnan(m.value):
        message = m.message or "no data: empty result or NaN"
        return inconclusive(base, Reason.NO_DATA, message)
    value = m.text if m.text is not None else format_value(m.value)
    base = replace(base, value=value)
    if metric.max_increase is None:
        # docs/resource.md's fixed threshold, unchanged.
        assert metric.max_value is not None  # parse_spec: at least one bound
        failed = m.value > metric.max_value
        message = m.message or (f"worst of {m.series} series" if m.series > 1 else "")
        # The words of the Healthy message before docs/resource.md, unchanged.
        why = f"{metric.name} is {value}, above maxValue {format_value(metric.max_value)}"
        return Judgement(
            replace(
                base,
                verdict=Verdict.FAIL if failed else Verdict.PASS,
                message=message,
                limit=metric.max_value,
            ),
            why=_also(why, message) if failed else "",
        )
    return _judge_relative(metric, m, base, value, context.rollout)


def _judge_relative(metric: Any, m: Measurement, base: Any, value: str, rollout: Any) -> Judgement:
    increase, baseline = metric.max_increase, metric.baseline
    assert increase is not None and baseline is not None and m.value is not None
    reading = m.reading if isinstance(m.reading, Reading) else Reading()
    where = baseline.describe()
    broken: list[str] = []
    bounds: list[float] = []
    no_baseline = ""
    no_rollout = baseline.before_rollout and (rollout is None or rollout.started_at is None)
    if no_rollout:
        no_baseline = "no rollout of the target seen yet, so no baseline before it"
    elif reading.baseline is None or math.isnan(reading.baseline):
        no_baseline = f"the baseline {where} has no data (empty result or NaN)"
    else:
        limit = increase.limit(reading.baseline)
        bounds.append(limit)
        shown_baseline = reading.baseline_text or format_value(reading.baseline)
        if m.value > limit:
            broken.append(
                _above_baseline(m.value, value, reading.baseline, shown_baseline, where, increase)
            )
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
            replace(
                base,
                verdict=Verdict.FAIL,
                message=_sentence(why, detail),
                limit=limit_value,
            ),
            why=f"{metric.name}: {_sentence(why, detail)}",
        )
    if no_baseline and (metric.max_value is None or not no_rollout):
        # Nothing decisive to compare with: Inconclusive, never counted.
        return inconclusive(replace(base, limit=limit_value), Reason.NO_BASELINE, no_baseline)
    if no_baseline:
        message = f"{value} is within maxValue {format_value(metric.max_value or 0.0)}; "
        message += f"judged on maxValue alone: {no_baseline}"
    else:
        assert reading.baseline is not None
        shown_baseline = reading.baseline_text or format_value(reading.baseline)
        message = (
            f"{value} is within {increase.describe()} of the baseline {shown_baseline} {where}"
        )
    return Judgement(
        replace(base, verdict=Verdict.PASS, message=_sentence(message, detail), limit=limit_value)
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


def _sentence(text: str, detail: str) -> str:
    return f"{text}; {detail}" if detail else text


def _also(why: str, message: str) -> str:
    return f"{why} ({message})" if message else why
