"""Sequential metrics in the pure core around the e-process: spec, what is read, decide, status.

docs/analysis.md ("Sequential judgment"): the ``sequential`` field and ``falsePauseRate`` parse
with the CRD's rules; the one range query is built from the selectors; the steps to read tile
time from the status's ``through``; ``decide`` continues the evidence from the status, never
counts a step twice, and starts afresh on a new rollout, a spec edit or a resume.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from sentinel_core.conditions import ConditionStatus, ConditionType, Outcome, Reason, Verdict
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.metric_kinds.sequential import (
    LOOKBACK_SECONDS,
    MAX_READ_SECONDS,
    PART_LABEL,
    Counted,
    Plan,
    Reading,
    Sequential,
    Side,
    Step,
    boundary_pattern,
    instant,
    lacks_boundary,
    plan,
    samples_queries,
    step_counts,
    steps_of,
)
from sentinel_core.spec import InvalidSpecError, parse_spec
from sentinel_core.status import AnalysisStatus, Rollout
from testkit.paths import CRD_PATH
from tests.core.test_decision import World
from tests.core.test_status_api import check_status

ERRORS = {
    "name": "errors-vs-old",
    "sequential": {
        "bad": 'http_requests_total{app="checkout", code=~"5.."}',
        "total": 'http_requests_total{app="checkout"}',
        "maxIncrease": {"percent": 10},
    },
}
SLOW = {
    "name": "slow-vs-old",
    "sequential": {
        "histogram": 'http_request_duration_seconds{app="checkout"}',
        "slowerThan": 0.25,
        "maxIncrease": {"percent": 10},
    },
}
T0 = datetime(2026, 12, 3, 10, 2, tzinfo=UTC)


def spec(*metrics: dict[str, Any], **fields: Any) -> Any:
    return parse_spec({"target": {"name": "checkout"}, "metrics": list(metrics), **fields})


def errors(*metrics: dict[str, Any], **fields: Any) -> dict[str, list[str]]:
    with pytest.raises(InvalidSpecError) as invalid:
        parse_spec(
            {"target": {"name": "checkout"}, "metrics": list(metrics), **fields}, strict=True
        )
    return invalid.value.by_field()


# -- the spec --------------------------------------------------------------------------------


def test_the_spec_examples_parse_and_round_trip_with_the_defaults_written_out() -> None:
    parsed = spec(ERRORS, SLOW, falsePauseRate=0.01)
    assert parsed.budget == 0.01 and parsed.sequential_metrics == 2
    errors_metric, slow = parsed.metrics
    assert errors_metric.sequential == Sequential(
        bad=ERRORS["sequential"]["bad"], total=ERRORS["sequential"]["total"], percent=10
    )
    assert slow.sequential is not None and slow.sequential.max_increase == pytest.approx(0.1)
    written = parsed.to_dict()
    assert written["falsePauseRate"] == 0.01
    assert written["metrics"][0] == {
        "name": "errors-vs-old",
        "sequential": {**ERRORS["sequential"], "minEvents": 100, "by": "pod_template_hash"},
    }
    assert parse_spec(written, strict=True) == parsed
    # Without falsePauseRate the default budget applies and nothing is written.
    assert spec(ERRORS).budget == 0.05 and "falsePauseRate" not in spec(ERRORS).to_dict()


@pytest.mark.parametrize(
    ("item", "fields", "expected"),
    [
        ({"name": "m"}, {}, {"spec.metrics[0].query", "spec.metrics[0].maxValue"}),
        ({**ERRORS, "query": "up"}, {}, {"spec.metrics[0].sequential"}),
        ({**ERRORS, "maxValue": 1}, {}, {"spec.metrics[0].sequential"}),
        (
            {**ERRORS, "compare": {}, "minSamples": {"query": "up", "min": 1}},
            {},
            {"spec.metrics[0].sequential"},
        ),
        ({"name": "m", "sequential": {"bad": "a"}}, {}, {"spec.metrics[0].sequential"}),
        (
            {"name": "m", "sequential": {"bad": "a", "total": "b", "slowerThan": 1}},
            {},
            {"spec.metrics[0].sequential"},
        ),
        (
            {"name": "m", "sequential": {"histogram": "h", "slowerThan": "fast"}},
            {},
            {"spec.metrics[0].sequential.slowerThan"},
        ),
        (
            {"name": "m", "sequential": {"bad": "rate(a[1m])", "total": "b"}},
            {},
            {"spec.metrics[0].sequential.bad"},
        ),
        (
            {"name": "m", "sequential": {"bad": "a", "total": "b", "maxIncrease": {}}},
            {},
            {"spec.metrics[0].sequential.maxIncrease.percent"},
        ),
        (
            {"name": "m", "sequential": {"bad": "a", "total": "b", "minEvents": 0}},
            {},
            {"spec.metrics[0].sequential.minEvents"},
        ),
        (
            {"name": "m", "sequential": {"bad": "a", "total": "b", "by": "pod-template-hash"}},
            {},
            {"spec.metrics[0].sequential.by"},
        ),
        (ERRORS, {"falsePauseRate": 0}, {"spec.falsePauseRate"}),
        (ERRORS, {"falsePauseRate": 0.25}, {"spec.falsePauseRate"}),
    ],
)
def test_each_broken_rule_is_named_by_its_path(
    item: dict[str, Any], fields: dict[str, Any], expected: set[str]
) -> None:
    assert set(errors(item, **fields)) == expected


# -- what is read ----------------------------------------------------------------------------


def test_the_samples_queries_read_each_parts_raw_samples_back_to_before_the_first_step() -> None:
    counters = spec(ERRORS).metrics[0].sequential
    assert counters is not None
    planned = Plan(first=T0 + timedelta(seconds=30), count=4, step_seconds=30)
    window = f"{round((4 * 30 + LOOKBACK_SECONDS) * 1000)}ms"
    assert samples_queries(counters, planned) == {
        "bad": f'http_requests_total{{app="checkout", code=~"5.."}}[{window}]',
        "total": f'http_requests_total{{app="checkout"}}[{window}]',
    }
    histogram = spec(SLOW).metrics[0].sequential
    assert histogram is not None
    one = Plan(first=T0 + timedelta(seconds=5), count=1, step_seconds=5)
    assert samples_queries(histogram, one) == {
        "total": 'http_request_duration_seconds_count{app="checkout"}[305000ms]',
        "good": 'http_request_duration_seconds_bucket{app="checkout", le=~"0\\\\.25"}[305000ms]',
    }
    # Go clients write 1, Python's 1.0: both are matched.
    assert boundary_pattern(1.0) == "1|1\\\\.0"


def test_the_plan_tiles_time_from_through_in_whole_steps_and_leaves_the_last_to_settle() -> None:
    through = instant(T0)
    assert plan(through, T0 + timedelta(seconds=9), 5) is None
    assert plan(through, T0 + timedelta(seconds=14), 5).count == 1  # type: ignore[union-attr]
    got = plan(through, T0 + timedelta(seconds=26), 5)
    assert got == Plan(first=T0 + timedelta(seconds=5), count=4, step_seconds=5)
    assert got.last == T0 + timedelta(seconds=20) and got.start == T0
    # A long backlog is read in parts of at most MAX_READ_SECONDS, each starting where the
    # counted steps end.
    long = plan(through, T0 + timedelta(days=2), 30)
    assert long is not None and long.count == MAX_READ_SECONDS // 30
    assert plan(through, T0 + timedelta(days=2), 3600).count == 1  # type: ignore[union-attr]


# The boundaries of three 5 s steps after T0, in seconds.
START = T0.timestamp()
PLANNED = Plan(first=T0 + timedelta(seconds=5), count=3, step_seconds=5)


def test_a_steps_count_is_the_counters_difference_over_it_with_resets_from_zero() -> None:
    samples = [
        (START - 20, 90.0),  # before the lookback's boundary sample: only a base
        (START, 100.0),  # the boundary sample: the base of step 0
        (START + 2, 104.0),
        (START + 5, 110.0),  # on step 0's end: step 0's, and the base of step 1
        (START + 7, 3.0),  # a reset: counts 3 (from zero)
        (START + 9, 8.0),
        (START + 14.999, 9.0),
        (START + 15, 12.0),
        (START + 15.001, 50.0),  # after the plan: left to the next read
    ]
    assert step_counts(samples, PLANNED) == {0: 10.0, 1: 8.0, 2: 4.0}
    # A series' first sample in the read is only a base, also within the steps: a series seen
    # again after a long outage must not count its whole life.
    assert step_counts([(START + 6, 4000.0), (START + 12, 4009.0)], PLANNED) == {2: 9.0}
    # Nothing is extrapolated: one sample per step still counts only what it saw.
    assert step_counts([(START - 1, 0.0), (START + 12, 7.0)], PLANNED) == {2: 7.0}


def test_consecutive_reads_share_their_boundary_sample_so_each_event_counts_once() -> None:
    samples = [
        (START + t, float(v)) for t, v in [(-3, 1), (1, 2), (4, 5), (8, 5), (11, 9), (15, 20)]
    ]
    whole = sum(step_counts(samples, PLANNED).values())
    first = Plan(first=PLANNED.first, count=1, step_seconds=5)
    rest = Plan(first=PLANNED.first + timedelta(seconds=5), count=2, step_seconds=5)
    parts = sum(step_counts(samples, first).values()) + sum(step_counts(samples, rest).values())
    assert whole == parts == 19.0


def test_the_steps_are_the_sides_counts_per_pod_and_step() -> None:
    seq = spec(ERRORS).metrics[0].sequential
    assert seq is not None
    # Raw samples at each boundary, from START (the base) to the third step's end.
    at = [START + 5 * i for i in range(4)]

    def series(part: str, hash_: str, pod: str, values: list[float]) -> Any:
        labels = {PART_LABEL: part, "pod_template_hash": hash_, "pod": pod}
        return labels, [(t, v) for t, v in zip(at, values, strict=False)]

    answer = [
        series("total", "new1", "n-a", [0, 100, 200, 300]),
        series("bad", "new1", "n-a", [0, 3, 7, 12]),
        series("total", "old1", "o-a", [10, 60, 110, 160]),
        series("total", "old1", "o-b", [0, 50, 110]),
        series("bad", "old1", "o-b", [0, 0, 1]),
        series("total", "other", "x", [0, 1000, 2000, 3000]),
    ]
    steps = steps_of(seq, answer, plan=PLANNED, new_hash="new1", old_hashes=["old1"])
    assert [s.end for s in steps] == [
        "2026-12-03T10:02:05Z",
        "2026-12-03T10:02:10Z",
        "2026-12-03T10:02:15Z",
    ]
    assert steps[0] == Step(
        Side(3, 100, ((3, 100),), ("n-a",)),
        Side(0, 100, ((0, 50), (0, 50)), ("o-a", "o-b")),
        "2026-12-03T10:02:05Z",
    )
    # Each pod keeps its name, so its counts can be followed across steps (persistent spread).
    assert steps[1].old == Side(1, 110, ((0, 50), (1, 60)), ("o-a", "o-b"))
    # A pod without a sample in a step counts 0 there; a hash of neither side is left out.
    assert (steps[2].new.total, steps[2].old.total, steps[2].old.pods) == (100, 50, ((0, 50),))


def test_a_histograms_bad_events_are_its_count_less_the_boundarys_bucket() -> None:
    seq = spec(SLOW).metrics[0].sequential
    assert seq is not None
    planned = Plan(first=T0 + timedelta(seconds=5), count=1, step_seconds=5)
    t = T0.timestamp()
    answer = [
        ({PART_LABEL: "total", "pod_template_hash": "n", "pod": "p"}, [(t, 0.0), (t + 5, 200.0)]),
        ({PART_LABEL: "good", "pod_template_hash": "n", "pod": "p"}, [(t, 0.0), (t + 5, 150.0)]),
    ]
    (step,) = steps_of(seq, answer, plan=planned, new_hash="n", old_hashes=["o"])
    assert (step.new.bad, step.new.total) == (50, 200)
    assert not lacks_boundary(seq, answer)
    assert lacks_boundary(seq, answer[:1])


# -- decide: the evidence continues from the status ------------------------------------------


def _step(end: datetime, new: tuple[float, float], old: tuple[float, float]) -> Step:
    return Step(Side(*new), Side(*old), instant(end))


class Story:
    """A World with one sequential metric and a rollout from old1 to new1 started at T0."""

    def __init__(self, *metrics: dict[str, Any], **fields: Any) -> None:
        self.world = World(spec=spec(*(metrics or (ERRORS,)), **fields), now=T0)
        self.rollout = Rollout(template_hash="t1", started_at=T0)
        self.world.status = AnalysisStatus(rollout=self.rollout)

    def evaluate(
        self, steps: list[Step], new_hash: str = "new1", old: tuple[str, ...] = ("old1",)
    ) -> Any:
        reading = Reading(new_hash, old, tuple(steps))
        measured = Measurement(metric="errors-vs-old", reading=reading)
        return self.world.decide_with((measured,), self.rollout)

    def result(self) -> Any:
        (result,) = self.world.status.metric_results
        return result


def bad_steps(start: int, count: int, new_bad: float = 20, old_bad: float = 10) -> list[Step]:
    return [
        _step(T0 + timedelta(seconds=30 * (start + i)), (new_bad, 1000), (old_bad, 1000))
        for i in range(count)
    ]


def test_the_evidence_grows_step_by_step_until_it_reaches_m_over_alpha_and_fails() -> None:
    story = Story()
    first = story.evaluate(bad_steps(1, 1))
    result = story.result()
    assert result.sequential is not None and result.sequential.steps == 1
    assert result.sequential.through == "2026-12-03T10:02:30Z"
    assert result.sequential.needed == 20.0 and result.limit == 20.0
    assert first.status.last_verdict == Verdict.PASS
    assert result.message.endswith("no evidence of harm so far")
    check_status(first.status)
    evidence = result.sequential.evidence
    story.evaluate(bad_steps(2, 1))
    assert story.result().sequential.evidence > evidence
    for start in range(3, 40):
        decision = story.evaluate(bad_steps(start, 1))
        if decision.status.last_verdict == Verdict.FAIL:
            break
    result = story.result()
    assert result.verdict == Verdict.FAIL
    assert result.sequential.evidence >= 20
    assert result.message.startswith("new pods' error rate is 2 \u00d7 the old pods' (")
    assert "evidence" in result.message and "of 20 needed" in result.message
    assert "worse than maxIncrease 10 % allows" in result.message
    healthy = decision.status.condition(ConditionType.HEALTHY)
    assert healthy is not None and "errors-vs-old: new pods' error rate" in healthy.message
    # Sums without a pod label: the bound is conditional, and the sentence the admin shows and
    # the pause's notification carries (the condition's message) says so.
    conditional = "(false-pause bound conditional: the series have no pod label"
    assert conditional in result.message and conditional in healthy.message
    assert result.sequential.guarantee[0] == "Conditional"
    raw = check_status(decision.status)["metricResults"][0]["sequential"]
    assert set(raw) >= {"evidence", "needed", "ratio", "newBad", "newTotal", "oldBad"}
    assert set(raw) >= {"oldTotal", "since", "through"}


def test_a_fail_stays_for_its_key_when_the_evidence_dips_under_the_bar() -> None:
    story = Story()
    start = 1
    while story.evaluate(bad_steps(start, 1)).status.last_verdict != Verdict.FAIL:
        start += 1
        assert start < 40, story.result().message
    reached = story.result().sequential
    assert reached.reached_at == reached.through
    # Steps where the new pods do as well as the old: the evidence falls under the bar again,
    # and the metric stays Fail, saying when it reached it.
    for index in range(start + 1, start + 40):
        decision = story.evaluate(bad_steps(index, 1, new_bad=10, old_bad=10))
        result = story.result()
        assert result.verdict == Verdict.FAIL, (index, result.message)
        if result.sequential.evidence < 20:
            break
    assert result.sequential.evidence < 20, result.message
    assert result.sequential.reached_at == reached.reached_at
    clock = reached.through[11:16]
    assert result.message.endswith(
        f"of 20 needed (false-pause bound conditional: the series have no pod label, so pods "
        f"whose error rates differ are not seen and the bound assumes every request fails "
        f"independently): it reached 20 at {clock}, worse than maxIncrease 10 % allows"
    ), result.message
    assert decision.status.last_verdict == Verdict.FAIL
    raw = check_status(decision.status)["metricResults"][0]["sequential"]
    assert raw["reachedAt"] == reached.through
    # A new rollout starts afresh, and with it the verdict.
    story.rollout = Rollout(template_hash="t2", started_at=T0 + timedelta(hours=1))
    story.evaluate(bad_steps(index + 1, 1, new_bad=10, old_bad=10), new_hash="new2", old=("new1",))
    assert story.result().sequential.reached_at is None
    assert story.result().verdict != Verdict.FAIL


def test_a_step_read_again_is_never_counted_twice() -> None:
    story = Story()
    story.evaluate(bad_steps(1, 3))
    once = story.result().sequential
    # The same steps again (a re-read after a failover) and one new one.
    story.evaluate(bad_steps(1, 4))
    again = story.result().sequential
    assert again.steps == once.steps + 1 == 4
    assert again.new_total == 4000 and again.old_bad == 40
    assert again.through == "2026-12-03T10:04:00Z"


def test_each_evaluation_keeps_both_sides_counts_of_the_steps_it_counted() -> None:
    story = Story()
    decision = story.evaluate(bad_steps(1, 2, new_bad=30, old_bad=10))
    counted = story.result().counted
    assert counted is not None
    assert (counted.new_bad, counted.new_total, counted.old_bad, counted.old_total) == (
        60,
        2000,
        20,
        2000,
    )
    assert counted.steps == 2 and counted.through == "2026-12-03T10:03:00Z"
    assert (counted.new_rate, counted.old_rate) == (0.03, 0.01)
    (entry,) = decision.history.metric_results
    assert entry.counted == counted
    # Not in the resource's status: it keeps the sums since the rollout began.
    assert "counted" not in str(check_status(decision.status)["metricResults"][0])
    # A re-read (a failover) counts only the step not counted before; none counted: None.
    story.evaluate(bad_steps(1, 3, new_bad=5, old_bad=10))
    again = story.result().counted
    assert again is not None and (again.steps, again.new_bad, again.old_bad) == (1, 5, 10)
    story.evaluate(bad_steps(1, 3))
    assert story.result().counted is None
    assert Counted.from_dict(again.to_dict()) == again
    assert Counted.from_dict({**again.to_dict(), "newBad": -1}) is None


def test_the_budget_is_split_among_the_sequential_metrics() -> None:
    other = {**ERRORS, "name": "other"}
    story = Story(ERRORS, other, falsePauseRate=0.01)
    reading = Reading("new1", ("old1",), tuple(bad_steps(1, 1)))
    story.world.decide_with(
        (
            Measurement(metric="errors-vs-old", reading=reading),
            Measurement(metric="other", reading=reading),
        ),
        story.rollout,
    )
    assert {r.sequential.needed for r in story.world.status.metric_results} == {200.0}


def test_a_new_rollout_a_spec_edit_and_a_resume_start_afresh() -> None:
    story = Story()
    story.evaluate(bad_steps(1, 3))
    assert story.result().sequential.steps == 3
    # A new rollout: another new hash, counted from when it began.
    story.rollout = Rollout(template_hash="t2", started_at=T0 + timedelta(seconds=20))
    story.evaluate(bad_steps(4, 2), new_hash="new2", old=("new1",))
    fresh = story.result().sequential
    assert fresh.key == "new2/1" and fresh.since == "2026-12-03T10:02:20Z" and fresh.steps == 2
    # A spec edit: from the edit on (now), the steps that ended before it are not counted.
    story.world.edit(spec(replace_percent(ERRORS, 20)))
    # The clock past the last step counted (10:02:30): a state whose through is ahead of the
    # evaluation's clock is one the operator cannot have written, and is discarded.
    story.world.now = T0 + timedelta(seconds=150)
    now = story.world.now
    story.evaluate(bad_steps(1, 2), new_hash="new2", old=("new1",))
    edited = story.result().sequential
    assert edited.key == "new2/2" and edited.since == instant(now) and edited.steps == 0
    assert edited.evidence == 1.0
    # kubectl rollout resume of a target this analysis paused: afresh from the resume.
    story.world.target = replace(story.world.target, paused=True, paused_by=("shop/checkout",))
    paused = story.world.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused is not None
    forced = replace(paused, status=ConditionStatus.TRUE, reason=Reason.FAILURE_LIMIT_REACHED)
    story.world.status = story.world.status.with_conditions(forced)
    story.world.kubectl_resume()
    later = T0 + timedelta(seconds=600)
    story.world.now = later
    story.evaluate(bad_steps(10, 5), new_hash="new2", old=("new1",))
    assert story.world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "ResumedByUser")
    resumed = story.result().sequential
    assert resumed.since == instant(later) and resumed.steps == 0


def replace_percent(item: dict[str, Any], percent: float) -> dict[str, Any]:
    return {**item, "sequential": {**item["sequential"], "maxIncrease": {"percent": percent}}}


def test_nothing_to_compare_is_inconclusive_no_comparison_with_the_reason() -> None:
    story = Story()
    story.evaluate([], old=())
    result = story.result()
    assert (result.verdict, story.world.cond(ConditionType.HEALTHY)) == (
        Verdict.INCONCLUSIVE,
        ("Unknown", "NoComparison"),
    )
    assert "no old ReplicaSet has replicas" in result.message
    story.evaluate([_step(T0 + timedelta(seconds=30), (0, 50), (0, 50))])
    assert "under minEvents 100" in story.result().message
    none = story.world.decide_with(
        (Measurement(metric="errors-vs-old", reading=Reading(None, ())),), story.rollout
    )
    assert "the target has no ReplicaSet yet" in none.status.metric_results[0].message


@pytest.mark.parametrize("kind", ["StatefulSet", "DaemonSet"])
def test_a_missing_side_of_another_kind_names_its_controller_revisions(kind: str) -> None:
    story = Story(ERRORS, target={"kind": kind, "name": "db"})
    story.evaluate([], new_hash="db-7d9f", old=())
    assert story.world.cond(ConditionType.HEALTHY) == ("Unknown", "NoComparison")
    assert f"no pods of the {kind} run an older controller revision" in story.result().message
    none = story.world.decide_with(
        (Measurement(metric="errors-vs-old", reading=Reading(None, ())),), story.rollout
    )
    message = none.status.metric_results[0].message
    assert message == f"no comparison: the {kind} has no controller revision yet"


def test_an_unavailable_read_keeps_the_state_for_the_next_evaluation() -> None:
    story = Story()
    story.evaluate(bad_steps(1, 2))
    before = story.result().sequential
    outage = Measurement(
        metric="errors-vs-old", error=MeasurementError.UNAVAILABLE, message="HTTP 502"
    )
    decision = story.world.decide_with((outage,), story.rollout)
    assert decision.transient and story.result().sequential == before
    # The steps of the outage are read when Prometheus answers again.
    story.evaluate(bad_steps(1, 6))
    assert story.result().sequential.steps == 6


def test_steps_read_in_an_attempt_that_ended_in_error_are_not_counted_in_its_history() -> None:
    story = Story(ERRORS, {"name": "p99", "query": "up", "maxValue": 1})
    down = Measurement(metric="p99", error=MeasurementError.UNAVAILABLE, message="HTTP 502")
    read = Measurement(
        metric="errors-vs-old", reading=Reading("new1", ("old1",), tuple(bad_steps(1, 2)))
    )
    decision = story.world.decide_with((read, down), story.rollout)
    assert decision.history.outcome == Outcome.ERROR
    (sequential,) = [r for r in decision.history.metric_results if r.name == "errors-vs-old"]
    # The status did not move through: the next attempt counts these steps, and its history.
    assert sequential.counted is None
    up = Measurement(metric="p99", value=0.5, text="0.5")
    decision = story.world.decide_with((read, up), story.rollout)
    (sequential,) = [r for r in decision.history.metric_results if r.name == "errors-vs-old"]
    assert sequential.counted is not None and sequential.counted.steps == 2


def test_every_sequential_status_field_is_in_the_crd_and_documented() -> None:
    crd = yaml.safe_load(CRD_PATH.read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    item = status["properties"]["metricResults"]["items"]["properties"]["sequential"]
    docs = (CRD_PATH.parents[1] / "docs" / "status.md").read_text()
    story = Story()
    written = story.evaluate(bad_steps(1, 1)).status.to_dict()["metricResults"][0]
    # reachedAt is written once the evidence reached the bar, and not before.
    assert set(written["sequential"]) == set(item["properties"]) - {"reachedAt"}
    for start in range(2, 40):
        written = story.evaluate(bad_steps(start, 1)).status.to_dict()["metricResults"][0]
        if written["verdict"] == "Fail":
            break
    assert set(written["sequential"]) == set(item["properties"])
    for name in item["properties"]:
        assert f"`{name}`" in docs, f"docs/status.md: `{name}`"
