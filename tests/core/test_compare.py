"""New pods against old pods (docs/analysis.md) in the pure core: parse, judge, status, decide.

The statistics are SciPy's; what is tested here is how the core uses them: one-sided by
``worse``, failing only on significance *and* an effect beyond ``maxEffect``, every
``NoComparison`` case, the one-sentence message, and the status round trip through the CRD's
schema. The rates (false failures, detection) are measured in bench/compare_calibration.py.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import ConditionType, Reason, Verdict
from sentinel_core.decision import judge
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds.compare import (
    Compare,
    Effect,
    Reading,
    Sides,
    judge_comparison,
    split_sides,
)
from sentinel_core.spec import InvalidSpecError, MetricSpec, parse_spec
from sentinel_core.status import AnalysisStatus
from tests.core.test_decision import World
from tests.core.test_status_api import check_status

SPEC_EXAMPLE = {
    "name": "latency-vs-old",
    "query": "q",
    "compare": {
        "by": "pod_template_hash",
        "worse": "increase",
        "maxEffect": {"percent": 10},
        "confidence": 0.95,
        "lookback": "5m",
        "minSamples": 10,
    },
}


def metric(**compare: Any) -> MetricSpec:
    raw = {"name": "latency-vs-old", "query": "q", "compare": compare}
    return parse_spec({"target": {"name": "checkout"}, "metrics": [raw]}).metrics[0]


def errors(item: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(InvalidSpecError) as invalid:
        parse_spec({"target": {"name": "checkout"}, "metrics": [item]}, strict=True)
    return invalid.value.by_field()


def sides(new: list[float], old: list[float]) -> Sides:
    return Sides("new1", ("old1",), tuple(new), tuple(old))


def lognormal(rng: random.Random, n: int, scale: float = 1.0) -> list[float]:
    return [scale * rng.lognormvariate(-1.4, 0.3) for _ in range(n)]


# -- parse ---------------------------------------------------------------------------------


def test_the_spec_example_parses_and_round_trips() -> None:
    spec = parse_spec({"target": {"name": "checkout"}, "metrics": [SPEC_EXAMPLE]}, strict=True)
    got = spec.metrics[0]
    assert got.compare == Compare(
        "pod_template_hash", "increase", Effect(percent=10), 0.95, "5m", 300.0, 10
    )
    assert got.max_value is None
    assert spec.to_dict()["metrics"][0] == SPEC_EXAMPLE


def test_defaults_are_the_crds() -> None:
    assert metric().compare == Compare()
    assert metric().to_dict()["compare"] == {
        "by": "pod_template_hash",
        "worse": "increase",
        "confidence": 0.95,
        "lookback": "5m",
        "minSamples": 10,
    }


@pytest.mark.parametrize(
    ("compare", "path"),
    [
        ({"by": "pod-template-hash"}, "compare.by"),
        ({"worse": "up"}, "compare.worse"),
        ({"confidence": 0.5}, "compare.confidence"),
        ({"confidence": 1}, "compare.confidence"),
        ({"confidence": "high"}, "compare.confidence"),
        ({"minSamples": 2}, "compare.minSamples"),
        ({"minSamples": 2.5}, "compare.minSamples"),
        ({"lookback": "0s"}, "compare.lookback"),
        ({"lookback": "soon"}, "compare.lookback"),
        ({"maxEffect": {}}, "compare.maxEffect"),
        ({"maxEffect": {"percent": 1, "absolute": 1}}, "compare.maxEffect"),
        ({"maxEffect": {"percent": -1}}, "compare.maxEffect.percent"),
        ({"typo": 1}, "compare.typo"),
    ],
)
def test_each_broken_rule_is_one_field_error(compare: dict[str, Any], path: str) -> None:
    got = errors({"name": "m", "query": "q", "compare": compare})
    assert list(got) == [f"spec.metrics[0].{path}"], got


@pytest.mark.parametrize("bound", [{"maxValue": 1}, {"maxIncrease": {"percent": 1}}])
def test_compare_excludes_the_other_bounds(bound: dict[str, Any]) -> None:
    item: dict[str, Any] = {"name": "m", "query": "q", "compare": {}, **bound}
    if "maxIncrease" in bound:
        item["baseline"] = {"offset": "1h"}
    got = errors(item)
    assert got == {
        "spec.metrics[0].compare": ["excludes maxValue and maxIncrease on the same metric"]
    }


def test_without_any_bound_maxvalue_is_required() -> None:
    assert errors({"name": "m", "query": "q"}) == {
        "spec.metrics[0].maxValue": ["is required unless maxIncrease or compare is given"]
    }


# -- judge_comparison ----------------------------------------------------------------------


def test_a_big_regression_fails_with_the_sentence() -> None:
    rng = random.Random(1)
    got = judge_comparison(
        metric(maxEffect={"percent": 10}).compare or Compare(),
        sides(lognormal(rng, 12, 1.5), lognormal(rng, 12)),
    )
    assert got.failed
    assert got.comparison is not None and got.comparison.p_value < 0.05
    assert got.comparison.new_samples == got.comparison.old_samples == 12
    assert got.message.startswith("new pods' median ")
    assert "% above old pods' " in got.message and "12 vs 12 samples" in got.message


def test_worse_decrease_looks_the_other_way() -> None:
    rng = random.Random(2)
    high, low = lognormal(rng, 20, 2.0), lognormal(rng, 20)
    increase, decrease = Compare(), Compare(worse="decrease")
    assert judge_comparison(increase, sides(high, low)).failed
    assert not judge_comparison(decrease, sides(high, low)).failed
    assert judge_comparison(decrease, sides(low, high)).failed
    assert "below old pods'" in judge_comparison(decrease, sides(low, high)).message


def test_a_significant_effect_within_max_effect_passes() -> None:
    # +5 % on every sample: certain, but within maxEffect 10 %.
    old = [1.0 + i / 100 for i in range(50)]
    new = [v * 1.05 for v in old]
    assert judge_comparison(Compare(), sides(new, old)).failed
    within = judge_comparison(Compare(max_effect=Effect(percent=10)), sides(new, old))
    assert not within.failed and within.comparison is not None
    assert within.comparison.p_value < 0.05
    assert not judge_comparison(Compare(max_effect=Effect(absolute=0.1)), sides(new, old)).failed
    assert judge_comparison(Compare(max_effect=Effect(absolute=0.01)), sides(new, old)).failed


def test_all_ties_are_no_evidence() -> None:
    got = judge_comparison(Compare(), sides([1.0] * 10, [1.0] * 10))
    assert not got.failed and got.comparison is not None
    assert got.comparison.p_value == 1.0
    assert "equal to old pods' 1" in got.message


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (Sides(None, ()), "the target has no ReplicaSet yet"),
        (Sides("new1", ()), "no old ReplicaSet has replicas (the rollout finished"),
        (Sides("new1", ("old1",), (), (1.0,) * 10), "no series with pod_template_hash=new1"),
        (Sides("new1", ("old1", "old2"), (1.0,) * 10, ()), "pod_template_hash in old1, old2"),
        (
            Sides("new1", ("old1",), (1.0,) * 4, (1.0,) * 12),
            "only 4 new-pod samples over 5m, under minSamples 10 per side",
        ),
    ],
)
def test_no_comparison_says_which(given: Sides, words: str) -> None:
    got = judge_comparison(Compare(), given)
    assert not got.failed and got.comparison is None
    assert words in got.missing


@pytest.mark.parametrize("kind", ["StatefulSet", "DaemonSet"])
def test_a_missing_side_is_worded_in_the_kinds_terms(kind: str) -> None:
    """A StatefulSet's or DaemonSet's sides are controller revisions, not ReplicaSets."""
    compare = Compare(by="controller_revision_hash")
    no_new = judge_comparison(compare, Sides(None, ()), kind=kind)
    assert no_new.missing == f"no comparison: the {kind} has no controller revision yet"
    no_old = judge_comparison(compare, Sides("rev2", ()), kind=kind)
    assert no_old.missing.startswith(
        f"no comparison: no pods of the {kind} run an older controller revision (the rollout "
        "finished or has not begun)"
    )
    assert "ReplicaSet" not in no_new.missing + no_old.missing


def test_split_sides_pools_series_by_the_by_label() -> None:
    series = [
        ({"pod_template_hash": "new1", "pod": "a"}, (1.0, float("nan"), 2.0)),
        ({"pod_template_hash": "new1", "pod": "b"}, (3.0,)),
        ({"pod_template_hash": "old1"}, (4.0,)),
        ({"pod_template_hash": "gone"}, (9.0,)),
        ({}, (9.0,)),
    ]
    got = split_sides(Compare(), series, "new1", ("old1",))
    assert (got.new_values, got.old_values) == ((1.0, 2.0, 3.0), (4.0,))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=10, max_size=40
    ),
    worse=st.sampled_from(["increase", "decrease"]),
)
def test_identical_sides_never_fail(values: list[float], worse: str) -> None:
    got = judge_comparison(Compare(worse=worse), sides(values, values))
    assert not got.failed
    assert got.comparison is not None and got.comparison.effect == 0


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=0.001, max_value=1e3, allow_nan=False),
        min_size=10,
        max_size=40,
        unique=True,
    ),
    factor=st.floats(min_value=10, max_value=100),
)
def test_a_huge_shift_always_fails(values: list[float], factor: float) -> None:
    # Every new sample above every old one, 10x or more: p is tiny and the effect huge.
    new = [max(values) * factor + v for v in values]
    got = judge_comparison(Compare(max_effect=Effect(percent=50)), sides(new, values))
    assert got.failed


# -- judge, status, decide -----------------------------------------------------------------


def measured(sides_: Sides | None) -> Measurement:
    return Measurement(
        metric="latency-vs-old",
        value=0.4,
        text="0.4",
        series=2,
        labels=(("pod_template_hash", "new1"),),
        reading=Reading(sides=sides_),
    )


def test_judge_fills_the_comparison_and_the_status_round_trips() -> None:
    rng = random.Random(3)
    got = judge(metric(), measured(sides(lognormal(rng, 12, 1.6), lognormal(rng, 12))))
    result = got.result
    assert result.verdict == Verdict.FAIL and result.comparison is not None
    assert result.series == () and result.max_value is None and result.value == "0.4"
    assert got.why.startswith("latency-vs-old: new pods' median ")
    status = AnalysisStatus(metric_results=(result,))
    raw = check_status(status)
    assert set(raw["metricResults"][0]["comparison"]) == {
        "newMedian",
        "oldMedian",
        "effect",
        "pValue",
        "newSamples",
        "oldSamples",
        "newHash",
        "oldHashes",
    }
    assert AnalysisStatus.from_dict(raw) == status


def test_no_comparison_is_inconclusive_and_never_counted() -> None:
    world = World(spec=parse_spec({"target": {"name": "checkout"}, "metrics": [SPEC_EXAMPLE]}))
    rng = random.Random(4)
    regressed = sides(lognormal(rng, 12, 2.0), lognormal(rng, 12))
    first = world.evaluate(replace(measured(regressed), metric="latency-vs-old"))
    assert first.status.failures == 1 and first.status.last_verdict == Verdict.FAIL
    healthy = first.status.condition(ConditionType.HEALTHY)
    assert healthy is not None and "new pods' median" in healthy.message
    done = world.evaluate(measured(Sides("new1", ())))
    assert done.status.failures == 1
    assert done.status.last_verdict == Verdict.INCONCLUSIVE
    assert world.cond(ConditionType.HEALTHY) == ("Unknown", Reason.NO_COMPARISON)
    assert done.status.metric_results[0].comparison is None
    check_status(done.status)


def test_without_an_instant_value_the_sides_still_decide() -> None:
    # A series that ended still has samples over lookback; a missing ReplicaSet says so.
    gone = replace(measured(Sides(None, ())), value=None, text=None, series=0)
    got = judge(metric(), gone)
    assert (got.result.verdict, got.reason) == (Verdict.INCONCLUSIVE, Reason.NO_COMPARISON)
    assert got.result.value is None and "no ReplicaSet" in got.result.message
    rng = random.Random(5)
    regressed = sides(lognormal(rng, 12, 2.0), lognormal(rng, 12))
    assert judge(metric(), replace(measured(regressed), value=None)).result.verdict == "Fail"
