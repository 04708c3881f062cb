"""One metric's judgement beyond fixed thresholds (docs/resource.md), and what decide makes of it.

minSamples guards, maxIncrease against a baseline (percent, absolute, a baseline of 0, none),
beforeRollout before and after a rollout, the worst series' labels, and the one-sentence why in
the metric message, the Healthy message and the RolloutPaused event (docs/status.md's example).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sentinel_core.conditions import (
    ConditionStatus,
    ConditionType,
    EventReason,
    EventType,
    Reason,
    Verdict,
)
from sentinel_core.decision import judge
from sentinel_core.decision._judge import series_labels
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds.threshold import Reading as ThresholdReading
from sentinel_core.metric_kinds.threshold import baseline_at
from sentinel_core.spec import MetricSpec, parse_spec
from sentinel_core.status import Rollout
from sentinel_core.workload_kinds import next_rollout, template_hash
from tests.core.test_decision import NOW, World, condition

STARTED = datetime(2026, 11, 29, 9, 58, 10, tzinfo=UTC)
ROLLOUT = Rollout(template_hash="5c7f9d", started_at=STARTED)


def metric(**fields: Any) -> MetricSpec:
    raw = {"name": "p99-latency", "query": "q", **fields}
    return parse_spec({"target": {"name": "checkout"}, "metrics": [raw]}).metrics[0]


def measured(value: float | None, **fields: Any) -> Measurement:
    text = None if value is None else f"{value:g}"
    reading = ThresholdReading(**fields)
    return Measurement(metric="p99-latency", value=value, text=text, series=1, reading=reading)


RELATIVE = {"maxIncrease": {"percent": 20}, "baseline": {"beforeRollout": True}}


def test_the_spec_example_fails_with_its_sentence() -> None:
    m = metric(maxValue=0.25, **RELATIVE)
    got = judge(
        m,
        Measurement(
            metric="p99-latency",
            value=0.412,
            text="0.412",
            series=3,
            message="worst of 3 series",
            labels=(("pod", "checkout-7d9f-x2k4"), ("route", "/pay"), ("__name__", "x")),
            reading=ThresholdReading(baseline=0.118, baseline_text="0.118"),
        ),
        ROLLOUT,
    )
    assert got.result.verdict == Verdict.FAIL
    assert got.result.message == (
        "0.412 is 249 % above the baseline 0.118 before the rollout (limit +20 %), and above "
        "maxValue 0.25; worst of 3 series"
    )
    assert got.result.baseline == "0.118"
    assert got.result.series == (("pod", "checkout-7d9f-x2k4"), ("route", "/pay"))
    assert got.result.limit == 0.118 * 1.2


def test_within_the_baseline_passes_and_the_limit_is_the_lowest_bound() -> None:
    got = judge(metric(maxValue=0.5, **RELATIVE), measured(0.13, baseline=0.118), ROLLOUT)
    assert got.result.verdict == Verdict.PASS
    assert "within +20 % of the baseline 0.118 before the rollout" in got.result.message
    assert got.result.limit == 0.118 * 1.2


def test_absolute_increase_and_offset() -> None:
    m = metric(maxIncrease={"absolute": 0.05}, baseline={"offset": "1h"})
    assert judge(m, measured(0.16, baseline=0.1)).result.verdict == Verdict.FAIL
    passed = judge(m, measured(0.15, baseline=0.1)).result
    assert passed.verdict == Verdict.PASS and passed.limit == 0.1 + 0.05
    failed = judge(m, measured(0.2, baseline=0.1)).result
    assert "above the baseline 0.1 1h ago (limit +0.05)" in failed.message


def test_a_baseline_of_zero_with_percent_fails_any_increase_and_says_so() -> None:
    m = metric(maxIncrease={"percent": 50}, baseline={"offset": "10m"})
    got = judge(m, measured(0.001, baseline=0.0, baseline_text="0"))
    assert got.result.verdict == Verdict.FAIL
    assert "baseline of 0" in got.result.message and "any increase fails" in got.result.message
    assert judge(m, measured(0.0, baseline=0.0)).result.verdict == Verdict.PASS


def test_a_baseline_without_data_is_inconclusive_even_with_max_value() -> None:
    for max_value in ({}, {"maxValue": 1.0}):
        m = metric(maxIncrease={"percent": 5}, baseline={"offset": "1h"}, **max_value)
        got = judge(m, measured(0.5, baseline=None))
        assert got.result.verdict == Verdict.INCONCLUSIVE
        assert got.reason == Reason.NO_BASELINE
        assert "the baseline 1h ago has no data" in got.why
    # ...unless maxValue already fails it.
    m = metric(maxIncrease={"percent": 5}, baseline={"offset": "1h"}, maxValue=0.1)
    assert judge(m, measured(0.5, baseline=float("nan"))).result.verdict == Verdict.FAIL


def test_before_any_rollout_only_max_value_judges() -> None:
    alone = metric(**RELATIVE)
    first_seen = Rollout(template_hash="abc")  # recorded, but no rollout seen begin
    for rollout in (None, first_seen):
        got = judge(alone, measured(9.0), rollout)
        assert (got.result.verdict, got.reason) == (Verdict.INCONCLUSIVE, Reason.NO_BASELINE)
        assert "no rollout of the target seen yet" in got.why
    with_max = metric(maxValue=1.0, **RELATIVE)
    passed = judge(with_max, measured(0.5), None).result
    assert passed.verdict == Verdict.PASS
    assert "judged on maxValue alone" in passed.message
    assert judge(with_max, measured(1.5), None).result.verdict == Verdict.FAIL


def test_a_guard_under_its_minimum_is_insufficient_data() -> None:
    m = metric(maxValue=0.25, minSamples={"query": "sum(x)", "min": 200})
    low = judge(m, measured(0.9, samples=12.0, samples_text="12"))
    assert (low.result.verdict, low.reason) == (Verdict.INCONCLUSIVE, Reason.INSUFFICIENT_DATA)
    assert low.result.samples == "12"
    assert "only 12, under the minimum 200" in low.result.message
    none = judge(m, measured(0.9))
    assert none.reason == Reason.INSUFFICIENT_DATA and "returned no data" in none.why
    enough = judge(m, measured(0.9, samples=200.0, samples_text="200"))
    assert enough.result.verdict == Verdict.FAIL and enough.result.samples == "200"


def test_series_labels_are_capped_in_count_and_length() -> None:
    labels = tuple((f"l{i:02}", "v" * 150) for i in range(15))
    kept = series_labels((("__name__", "up"), *labels))
    assert len(kept) == 10 and all(len(v) == 100 for _, v in kept)
    assert [k for k, _ in kept] == [f"l{i:02}" for i in range(10)]


def test_template_hash_is_stable_and_rollouts_are_detected() -> None:
    a = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"image": "a:1"}]}}
    reordered = {"spec": {"containers": [{"image": "a:1"}]}, "metadata": {"labels": {"app": "x"}}}
    assert template_hash(a) == template_hash(reordered) and len(template_hash(a)) == 16
    first = next_rollout(None, "h1", newest_replicaset=STARTED, now=NOW)
    assert first == Rollout(template_hash="h1")
    assert next_rollout(first, "h1", newest_replicaset=None, now=NOW) is first
    assert next_rollout(first, "h2", newest_replicaset=STARTED, now=NOW) == ROLLOUT.__class__(
        "h2", STARTED
    )
    assert next_rollout(first, "h2", newest_replicaset=None, now=NOW).started_at == NOW
    assert next_rollout(first, None, newest_replicaset=None, now=NOW) is first
    offset = metric(maxIncrease={"percent": 1}, baseline={"offset": "1h30m"})
    # The baseline's instant, as the threshold kind's facts ask it: the rollout's start (None:
    # no rollout started yet), or now minus the offset.
    assert (NOW - baseline_at(offset, None, NOW)).total_seconds() == 5400  # type: ignore[operator]
    assert baseline_at(metric(**RELATIVE), ROLLOUT.started_at, NOW) == STARTED
    assert baseline_at(metric(**RELATIVE), None, NOW) is None
    assert baseline_at(metric(maxValue=1), ROLLOUT.started_at, NOW) is None


RAW = {
    "target": {"name": "checkout"},
    "metrics": [{"name": "p99-latency", "query": "q", "maxValue": 0.25, **RELATIVE}],
    "failureLimit": 2,
}


def test_decide_says_why_in_healthy_and_the_pause_event_and_detects_the_rollout() -> None:
    world = World(spec=parse_spec(RAW))
    regress = Measurement(
        metric="p99-latency",
        value=0.2,
        text="0.2",
        series=2,
        message="worst of 2 series",
        labels=(("pod", "checkout-2"),),
        reading=ThresholdReading(baseline=0.1, baseline_text="0.1"),
    )
    first = world.decide_with((regress,), rollout=Rollout("h1"))
    assert first.status.rollout == Rollout("h1")
    # No rollout seen begin yet: judged on maxValue alone, which 0.2 is within.
    assert condition(first.status, ConditionType.HEALTHY)[:2] == ("True", "WithinThresholds")
    assert "judged on maxValue alone" in first.status.metric_results[0].message
    assert first.status.failures == 0 and not first.events

    detected = world.decide_with((regress,), rollout=Rollout("h2", STARTED))
    events = {e.reason: e for e in detected.events}
    assert events[EventReason.ROLLOUT_DETECTED].type == EventType.NORMAL
    assert "h2" in events[EventReason.ROLLOUT_DETECTED].message
    status, reason, message = condition(detected.status, ConditionType.HEALTHY)
    assert (status, reason) == (ConditionStatus.FALSE, "ThresholdExceeded")
    assert message == (
        "p99-latency: 0.2 is 100 % above the baseline 0.1 before the rollout (limit +20 %); "
        "worst of 2 series in series {pod=checkout-2}"
    )
    assert detected.status.metric_results[0].to_dict()["series"] == {"pod": "checkout-2"}

    paused = world.decide_with((regress,))
    assert paused.pause is not None
    event = next(e for e in paused.events if e.reason == EventReason.ROLLOUT_PAUSED)
    assert "2 consecutive failed evaluations reached failureLimit 2" in event.message
    assert "0.2 is 100 % above the baseline 0.1 before the rollout" in event.message
    assert EventReason.ROLLOUT_DETECTED not in {e.reason for e in paused.events}


def test_decide_reports_insufficient_data_and_counts_nothing() -> None:
    raw = {
        "target": {"name": "checkout"},
        "metrics": [
            {
                "name": "p99-latency",
                "query": "q",
                "maxValue": 0.25,
                "minSamples": {"query": "n", "min": 200},
            }
        ],
    }
    world = World(spec=parse_spec(raw))
    decision = world.decide_with((measured(0.9, samples=12.0, samples_text="12"),))
    assert decision.status.last_verdict == Verdict.INCONCLUSIVE
    assert decision.status.failures == 0
    status, reason, message = condition(decision.status, ConditionType.HEALTHY)
    assert (status, reason) == ("Unknown", "InsufficientData")
    assert message == (
        "p99-latency: minSamples query returned only 12, under the minimum 200: too little to judge"
    )
    assert decision.status.metric_results[0].to_dict()["samples"] == "12"
