"""What the operator reads back from its status is checked like input (sentinel_core.status_check).

docs/status.md#what-the-operator-trusts-in-its-status: each forged shape below is one whoever
may write ``rolloutanalyses/status`` can write; ``decide`` discards it, recomputes it, says so
in one Warning Event ``StatusDiscarded`` (once, not per attempt) and never pauses on it. Each
forged shape's test fails on the decision before the check: it froze, crashed, wrote an Infinity
every status write refuses, or paused. The last tests drive the decision over long random histories,
sequential steps read as the operator reads them, and find nothing discarded in any status the
operator wrote: the checks hold for everything it writes.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import ConditionStatus, ConditionType, EventReason, Reason, Verdict
from sentinel_core.decision import Decision, decide, resume
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.metric_kinds.sequential import (
    Reading,
    Side,
    State,
    Step,
    basis_of,
    instant,
    plan,
)
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus, Rollout
from sentinel_core.status_check import MAX_CLOCK_SKEW, check, state_problem, trusted
from sentinel_core.workload_kinds import TargetState
from tests.core.test_decision import World, failing, no_data, passing, spec_with
from tests.core.test_decision_properties import METRICS, measure
from tests.core.test_decision_properties import step as history_step
from tests.core.test_sequential_read import ERRORS, T0, Story, bad_steps, spec
from tests.core.test_status_api import check_status

DAY = timedelta(days=1)


def discarded(decision: Decision) -> list[str]:
    """Return the StatusDiscarded events' messages (each one a Warning)."""
    found = [e for e in decision.events if e.reason == EventReason.STATUS_DISCARDED]
    assert all(e.type == "Warning" for e in found)
    return [e.message for e in found]


def forge(world: World, **fields: Any) -> None:
    """Write ``fields`` into the status as a status patch would (JSON, through the API)."""
    raw = json.loads(json.dumps(world.status.to_dict()))
    raw.update(fields)
    world.status = AnalysisStatus.from_dict(raw)


def forge_state(world: World, **fields: Any) -> None:
    """Write ``fields`` into the first metric result's sequential state."""
    raw = json.loads(json.dumps(world.status.to_dict()))
    raw["metricResults"][0]["sequential"].update(fields)
    world.status = AnalysisStatus.from_dict(raw)


def written(decision: Decision) -> dict[str, Any]:
    """Return the status as written: valid for the CRD, and plain JSON (no Infinity, no NaN)."""
    raw = check_status(decision.status)
    json.dumps(raw, allow_nan=False)
    return raw


def counting() -> Story:
    """A sequential metric that counted three steps of a rollout begun at T0 (10:02)."""
    story = Story()
    story.world.now = T0 + timedelta(seconds=100)
    story.evaluate(bad_steps(1, 3))
    state = story.result().sequential
    assert state.steps == 3 and state.through == "2026-12-03T10:03:30Z"
    return story


def state(story: Story) -> State:
    result = story.result().sequential
    assert result is not None
    return result


# -- the sequential state ---------------------------------------------------------------------


def test_a_through_in_the_future_is_discarded_and_the_evidence_counted_afresh() -> None:
    story = counting()
    # Forged: through a day ahead, with evidence far beyond what is needed. Before the check
    # no step was ever read again (the evidence froze) and the metric failed forever.
    future = instant(story.world.now + DAY)
    forge_state(story.world, through=future, logRatios=[9.0] * 24, newBad=1000.0)
    decision = story.evaluate(bad_steps(1, 4, new_bad=10, old_bad=10))
    (message,) = discarded(decision)
    assert f"metricResults[errors-vs-old].sequential has through {future} in the future" in (
        message
    )
    assert message.endswith("the evidence starts afresh from the rollout")
    after = state(story)
    # Afresh from the rollout's start, the steps read again: four of them, equal rates.
    assert after.since == instant(T0) and after.steps == 4
    assert after.through == "2026-12-03T10:04:00Z" and after.new_bad == 40
    assert story.result().verdict == Verdict.PASS
    written(decision)
    # Once: the status written holds nothing to discard.
    again = story.evaluate(bad_steps(1, 5, new_bad=10, old_bad=10))
    assert discarded(again) == [] and state(story).steps == 5


def test_a_ratio_that_overflows_is_discarded_and_the_status_is_written() -> None:
    story = counting()
    # newBad 1e308 over newTotal 1e-300: the ratio was Infinity, which no status write takes.
    forge_state(story.world, newBad=1e308, newTotal=1e-300)
    decision = story.evaluate(bad_steps(1, 4))
    (message,) = discarded(decision)
    assert "counts more than 1e+15 events" in message
    raw = written(decision)
    ratio = raw["metricResults"][0]["sequential"]["ratio"]
    assert ratio == pytest.approx(2.0) and state(story).new_total == 4000


def test_a_ratio_that_divides_by_zero_is_discarded_instead_of_crashing() -> None:
    story = counting()
    # oldBad 1e-300 over oldTotal 1e300 underflowed to 0: ZeroDivisionError in every attempt.
    forge_state(story.world, oldBad=1e-300, oldTotal=1e300)
    decision = story.evaluate(bad_steps(1, 4))
    assert len(discarded(decision)) == 1
    written(decision)
    # Within the counts' bound, the division alone is caught.
    forged = replace(state(story), old_bad=1e-300, old_total=1e15)
    assert state_problem(forged, interval=30, generation=1, now=T0 + DAY) == (
        "has counts whose ratio is not a finite number"
    )


def test_more_bad_events_than_events_is_discarded() -> None:
    story = counting()
    forge_state(story.world, oldBad=5000.0)
    (message,) = discarded(story.evaluate(bad_steps(1, 4)))
    assert "counts more bad events than events on a side" in message


def test_evidence_its_counts_cannot_give_is_discarded_and_never_fails() -> None:
    story = counting()
    # Evidence e^40 beside 60 bad events of the new pods at 2 x the old rate: 60 bad events
    # move a grid point's log ratio by at most 60 x log(10 x 1.1 / 1.1) at the top one, and the
    # first grid point's by 60 x log(10) / 24 = 5.76.
    forge_state(story.world, logRatios=[40.0] * 24)
    decision = story.evaluate(bad_steps(1, 4, new_bad=10, old_bad=10))
    (message,) = discarded(decision)
    assert "holds evidence its counts cannot give (60 and 30 bad events)" in message
    assert decision.pause is None and story.result().verdict == Verdict.PASS
    # No bad event at all carries no evidence either way.
    quiet = replace(state(story), new_bad=0.0, old_bad=0.0, log_ratios=(0.5,) * 24)
    assert "cannot give" in state_problem(quiet, interval=30, generation=1, now=T0 + DAY)


def test_a_through_moved_back_would_count_steps_twice_and_is_discarded() -> None:
    story = counting()
    # through back to the first step's end with steps kept: the next read would count steps 2
    # and 3 a second time (the evidence doubled from data already counted).
    forge_state(story.world, through="2026-12-03T10:02:30Z")
    decision = story.evaluate(bad_steps(1, 4))
    (message,) = discarded(decision)
    assert (
        "counts 3 steps of 30 s between since 2026-12-03T10:02:00Z and through 2026-12-03T10:02:30Z"
    ) in message
    assert state(story).steps == 4 and state(story).new_bad == 80


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"since": "yesterday"}, "has since or through that is not a time"),
        ({"since": "2026-12-03T10:05:00Z"}, "ends (through 2026-12-03T10:03:30Z) before it"),
        ({"steps": 0}, "has counted no step but holds counts, evidence or time"),
        ({"logRatios": []}, "has counted steps but holds no evidence"),
        (
            {"podSpread": {"pods": [{"pod": "a", "bad": 1e6, "total": 1e6}], "widening": 1.0}},
            "holds old pods' sums above the old side's counts",
        ),
        # A Fail that stays is written only at the end of a counted step.
        ({"reachedAt": "2026-12-03T10:01:00Z"}, "has reachedAt 2026-12-03T10:01:00Z outside"),
        ({"reachedAt": "2026-12-03T11:00:00Z"}, "has reachedAt 2026-12-03T11:00:00Z outside"),
        ({"reachedAt": "soon"}, "has reachedAt soon outside its counted steps"),
    ],
)
def test_inconsistent_states_are_discarded(fields: dict[str, Any], problem: str) -> None:
    story = counting()
    forge_state(story.world, **fields)
    (message,) = discarded(story.evaluate(bad_steps(1, 4)))
    assert problem in message


def test_a_discarded_state_is_not_kept_when_nothing_is_read() -> None:
    story = counting()
    forge_state(story.world, newBad=1e308, newTotal=1e-300)
    # No ReplicaSet: nothing is read and the state read back used to be written back as it was.
    measured = Measurement(metric="errors-vs-old", reading=Reading(None, ()))
    decision = story.world.decide_with((measured,), story.rollout)
    assert len(discarded(decision)) == 1
    assert story.result().sequential is None
    written(decision)


def test_more_metric_results_than_a_spec_may_have_are_dropped() -> None:
    world = World()
    world.evaluate(*passing())
    result = world.status.to_dict()["metricResults"][0]
    forge(world, metricResults=[{**result, "name": f"m{i}"} for i in range(21)])
    decision = world.evaluate(*unavailable_all())
    (message,) = discarded(decision)
    assert "metricResults holds 21 results, more than the 20 metrics a spec may have" in message
    assert decision.status.metric_results == ()


# -- failures and window ----------------------------------------------------------------------


def test_a_forged_count_beside_a_pass_is_counted_again_from_zero() -> None:
    world = World()
    world.evaluate(*passing())
    forge(world, failures=5)
    # An Inconclusive evaluation: the forged 5 >= failureLimit 3 used to pause.
    decision = world.evaluate(*(no_data(m) for m in METRICS))
    (message,) = discarded(decision)
    assert "failures 5 follows lastVerdict Pass: only a Fail counts and a Pass resets" in message
    assert decision.pause is None and decision.status.failures == 0
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "NotPaused")


def test_a_count_the_operator_could_have_written_never_pauses_without_a_fail() -> None:
    world = World()
    world.evaluate(*(no_data(m) for m in METRICS))
    # failures 5 beside lastVerdict Inconclusive: nothing in the status tells it from a real
    # count, so it stands; but only an evaluation whose own verdict is Fail pauses.
    forge(world, failures=5)
    for _ in range(3):
        decision = world.evaluate(*(no_data(m) for m in METRICS))
        assert discarded(decision) == [] and decision.pause is None
    assert not world.target.paused and decision.status.failures == 5
    decision = world.evaluate(*passing())
    assert decision.pause is None and decision.status.failures == 0
    # Real failures pause after failureLimit of them.
    for _ in range(2):
        assert world.evaluate(*failing()).pause is None
    assert world.evaluate(*failing()).pause is not None


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"failures": 2}, "failures 2 was counted by no evaluation"),
        ({"failures": 2, "lastVerdict": "Fail"}, "which the metric results do not give"),
        ({"failures": 2, "observedGeneration": 9}, "observedGeneration 9 is ahead of"),
    ],
)
def test_counts_no_evaluation_gave_are_discarded(fields: dict[str, Any], problem: str) -> None:
    world = World()
    if "lastVerdict" in fields:
        world.evaluate(*passing())
    forge(world, **fields)
    decision = world.evaluate(*(no_data(m) for m in METRICS))
    (message,) = discarded(decision)
    assert problem in message
    assert decision.status.failures == 0 and decision.pause is None


WINDOWED = {"failureWindow": 5, "failureLimit": 3}


@pytest.mark.parametrize(
    ("window", "problem"),
    [
        (["Fail"] * 5, "does not end with lastVerdict Pass"),
        (["Pass"] * 6 + ["Fail"] * 3, "holds more than failureWindow 5 verdicts"),
    ],
)
def test_a_window_the_operator_cannot_have_written_is_emptied(
    window: list[str], problem: str
) -> None:
    world = World(spec=spec_with(**WINDOWED))
    world.evaluate(*passing())
    forge(world, window=window, failures=window.count("Fail"))
    # A Fail: it used to make four or more Fails in the window, and pause.
    decision = world.evaluate(*failing())
    (message,) = discarded(decision)
    assert problem in message
    assert decision.pause is None
    assert decision.status.window == (Verdict.FAIL,) and decision.status.failures == 1


def test_a_count_that_disagrees_with_a_valid_window_is_recounted_from_it() -> None:
    world = World(spec=spec_with(**WINDOWED))
    world.evaluate(*passing())
    world.evaluate(*failing())
    forge(world, failures=4)
    decision = world.evaluate(*(no_data(m) for m in METRICS))
    (message,) = discarded(decision)
    assert "failures 4 is not the 1 Fail of window [Pass, Fail]" in message
    assert decision.status.failures == 1 and decision.pause is None


# -- times ------------------------------------------------------------------------------------


def test_times_in_the_future_are_dropped_or_moved_to_now() -> None:
    world = World()
    world.evaluate(*passing())
    ahead = world.now + DAY
    stamp = ahead.strftime("%Y-%m-%dT%H:%M:%SZ")
    raw = world.status.to_dict()
    conditions = [
        {**c, "lastTransitionTime": stamp} if c["type"] == "Ready" else c for c in raw["conditions"]
    ]
    forge(
        world,
        lastEvaluationTime=stamp,
        pausedAt=stamp,
        rollout={"templateHash": "abc", "startedAt": stamp},
        conditions=conditions,
    )
    now = world.now
    decision = world.evaluate(*(unavailable_all()))
    (message,) = discarded(decision)
    for part in (
        f"lastEvaluationTime {stamp} is in the future",
        f"pausedAt {stamp} is in the future",
        f"rollout.startedAt {stamp} is in the future: the rollout is read from the target again",
        f"the Ready condition's lastTransitionTime {stamp} is in the future",
    ):
        assert part in message
    status = decision.status
    assert status.last_evaluation_time is None and status.paused_at is None
    assert status.rollout is None
    ready = status.condition(ConditionType.READY)
    assert ready is not None and ready.last_transition_time == now


def unavailable_all() -> tuple[Measurement, ...]:
    return tuple(
        Measurement(metric=m, error=MeasurementError.UNAVAILABLE, message="HTTP 502")
        for m in METRICS
    )


def test_a_resume_in_the_future_no_longer_freezes_the_evidence() -> None:
    story = counting()
    # RolloutPaused=False/ResumedByUser dated a day ahead: every evaluation took it for a resume
    # after the evidence began and started afresh, so no evidence ever accumulated.
    paused = story.world.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused is not None
    forged = replace(
        paused,
        status=ConditionStatus.FALSE,
        reason=Reason.RESUMED_BY_USER,
        last_transition_time=story.world.now + DAY,
    )
    story.world.status = story.world.status.with_conditions(forged)
    resumed_at = story.world.now
    decision = story.evaluate(bad_steps(1, 4))
    assert "RolloutPaused condition's lastTransitionTime" in discarded(decision)[0]
    # Taken as a resume now: afresh from now, then counting on.
    assert state(story).since == instant(resumed_at) and state(story).steps == 0
    story.world.now = resumed_at + timedelta(seconds=120)
    # What the operator reads then: the whole steps after the resume, ended by now less 10 s.
    story.evaluate(
        [
            Step(Side(20, 1000), Side(10, 1000), instant(resumed_at + timedelta(seconds=30 * k)))
            for k in (1, 2, 3)
        ]
    )
    assert state(story).since == instant(resumed_at) and state(story).steps == 3


def test_a_clock_a_little_ahead_is_another_replica_not_a_forgery() -> None:
    world = World()
    world.evaluate(*passing())
    behind = world.now - MAX_CLOCK_SKEW + timedelta(seconds=1)
    result = check(world.status, spec=spec_with(), generation=1, now=behind)
    assert result.discarded == () and result.status == world.status


def test_trusted_is_what_decide_goes_on_from() -> None:
    story = counting()
    forge_state(story.world, through=instant(story.world.now + DAY))
    status = story.world.status
    now = story.world.now
    kept = trusted(status, spec=story.world.spec, generation=1, now=now)
    assert kept.metric_results[0].sequential is None
    basis = basis_of(kept, "errors-vs-old", generation=1, rollout=story.rollout, now=now)
    assert basis.state("new1").through == instant(T0)


# -- no false alarm: the checks hold for everything the operator writes ----------------------


def _quiet(status: AnalysisStatus, world: World, spec_: AnalysisSpec | None) -> None:
    for later in (world.now, world.now + timedelta(seconds=1)):
        result = check(status, spec=spec_, generation=world.generation, now=later)
        assert result.discarded == (), result.discarded


@settings(max_examples=300, deadline=None)
@given(st.lists(history_step, min_size=1, max_size=50), st.sampled_from([None, 3, 5]))
def test_no_status_the_operator_writes_is_discarded(steps: list[Any], window: int | None) -> None:
    fields = {"failureWindow": window} if window is not None else {}
    world = World(spec=spec_with(**fields))
    for action in steps:
        name = action[0]
        if name == "eval":
            valid = isinstance(world.spec, AnalysisSpec)
            measurements = (
                tuple(measure(m, k) for m, k in zip(METRICS, action[1:], strict=True))
                if valid
                else ()
            )
            decision = world.evaluate(*measurements)
            assert discarded(decision) == []
            _quiet(decision.status, world, world.spec if valid else None)
        elif name == "edit":
            limit = action[1]
            changes: dict[str, Any] = {"failureLimit": limit, "dryRun": action[2]}
            if window is not None:
                changes["failureWindow"] = max(window, limit)
            world.edit(spec_with(**changes))
        elif name == "ui_resume":
            world.status = resume(world.status, now=world.now).status
            world.kubectl_resume()
        elif name == "kubectl_resume":
            world.kubectl_resume()
        elif name == "delete_target":
            world.target = TargetState(exists=False)
        elif name == "recreate_target" and not world.target.exists:
            world.target = TargetState(exists=True)
        elif name == "manual_pause" and world.target.exists:
            world.target = replace(world.target, paused=True)


@pytest.mark.parametrize("seed", range(12))
def test_no_sequential_state_the_operator_writes_is_discarded(seed: int) -> None:
    """Steps read as the operator reads them, over resumes, edits, new rollouts and outages."""
    rng = random.Random(seed)
    interval = rng.choice(["30s", "7500ms", "1m", "5s"])
    histogram = rng.random() < 0.5
    world = World(spec=spec(ERRORS, interval=interval), now=T0)
    rollout = Rollout(template_hash="t1", started_at=T0 - timedelta(seconds=rng.randint(0, 900)))
    new_hash, olds = "n1", ("o1",)
    for _ in range(80):
        world.now += timedelta(seconds=rng.choice([1, 5, 7.5, 30, 31, 60, 600]))
        world.now = world.now.replace(microsecond=0)
        action = rng.random()
        if action < 0.03:
            world.edit(spec(ERRORS, interval=rng.choice(["30s", "10s"])))
        elif action < 0.06:
            rollout = Rollout(template_hash=f"t{rng.random()}", started_at=world.now)
            new_hash, olds = f"n{rng.random()}", (new_hash,)
        elif action < 0.09 and world.status.is_true(ConditionType.ROLLOUT_PAUSED):
            world.kubectl_resume()
        spec_ = world.spec
        assert isinstance(spec_, AnalysisSpec)
        basis = basis_of(
            trusted(world.status, spec=spec_, generation=world.generation, now=world.now),
            "errors-vs-old",
            generation=world.generation,
            rollout=rollout,
            now=world.now,
        )
        planned = plan(basis.state(new_hash).through, world.now, spec_.interval_seconds)
        steps = []
        if planned is not None:
            for index in range(planned.count):
                end = planned.first + timedelta(seconds=planned.step_seconds * index)
                steps.append(Step(_side(rng, histogram), _side(rng, histogram), instant(end)))
        if rng.random() < 0.1:
            measured = Measurement(
                metric="errors-vs-old", error=MeasurementError.UNAVAILABLE, message="502"
            )
        else:
            measured = Measurement(
                metric="errors-vs-old", reading=Reading(new_hash, olds, tuple(steps))
            )
        decision = decide(replace(world.observe((measured,)), rollout=rollout, now=world.now))
        assert discarded(decision) == []
        world.status = decision.status
        if decision.pause is not None:
            world.target = TargetState(True, True, decision.pause.paused_by)
        _quiet(decision.status, world, spec_)


def _side(rng: random.Random, histogram: bool) -> Side:
    pods = []
    for _ in range(rng.randint(0, 3)):
        total = rng.choice([0.0, rng.uniform(0, 5000), float(rng.randint(0, 5000))])
        bad = rng.uniform(0, total * rng.choice([0.001, 0.05, 0.5]))
        if histogram:
            # A histogram's bad events: its count less a bucket, as floats.
            bad = max(total - (total - bad) * 1.0000000001, 0.0)
        pods.append((min(bad, total), total))
    return Side(sum(b for b, _ in pods), sum(t for _, t in pods), tuple(pods))


def test_the_checked_status_is_the_one_read_when_nothing_is_wrong() -> None:
    story = counting()
    now = story.world.now
    result = check(story.world.status, spec=story.world.spec, generation=1, now=now)
    assert result == type(result)(story.world.status, ())
    assert isinstance(now, datetime)
