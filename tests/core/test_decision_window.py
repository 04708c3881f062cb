"""docs/resource.md in the decision core: failureWindow counting, and nothing else changed.

Properties over random histories (hypothesis):

- with ``failureWindow`` absent, ``decide`` answers exactly as it did before §3.1 (a frozen
  copy of that ``decide`` is the oracle), bit for bit: status, pause, events, history; except
  where the oracle paused after an evaluation whose own verdict was not Fail (a count at the
  limit read back beside an Inconclusive or a Pass, e.g. a target back after failures counted
  while it was missing): a pause now needs the evaluation's own Fail
  (docs/status.md#what-the-operator-trusts-in-its-status), so there nothing is paused and the
  rest of the answer is the oracle's;
- with it, ``failures`` is the number of Fails in ``status.window`` and never more than the
  Fail verdicts among the last ``failureWindow`` decisive evaluations; an Inconclusive or an
  error changes neither; no decision unpauses; a pause needs ``failures >= failureLimit``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import ConditionStatus, ConditionType, EventReason, Reason, Verdict
from sentinel_core.decision import Decision, decide, resume
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds.threshold import Reading
from sentinel_core.status import AnalysisStatus
from sentinel_core.workload_kinds import TargetState
from tests.core import reference_decision
from tests.core.test_decision import RAW_SPEC, World, no_data, spec_with, value
from tests.core.test_decision_properties import METRICS, measure
from tests.core.test_status_api import check_status

kind = st.sampled_from(
    ("pass", "fail", "fail", "nodata", "unavailable", "invalid", "lowtraffic", "nobaseline")
)
# The window test's p99-latency also has a guard and a baseline (docs/resource.md), so that every
# kind of Inconclusive (NoData, InsufficientData, NoBaseline) is exercised.
GUARDED = {
    "name": "p99-latency",
    "query": "q",
    "maxValue": 0.25,
    "maxIncrease": {"percent": 50},
    "baseline": {"offset": "1h"},
    "minSamples": {"query": "n", "min": 100},
}


def guarded(metric: str, kind: str) -> Measurement:
    """Return a measurement of ``kind``; p99-latency's carries its guard and baseline."""
    if metric != "p99-latency" or kind in ("unavailable", "invalid"):
        plain = kind if kind in ("pass", "fail", "nodata", "unavailable", "invalid") else "pass"
        return measure(metric, plain)
    base = {
        "reading": Reading(samples=500.0, samples_text="500", baseline=0.2, baseline_text="0.2")
    }
    if kind == "lowtraffic":
        return replace(value(metric, 0.9), reading=Reading(samples=3.0, samples_text="3"))
    if kind == "nobaseline":
        # Within maxValue, enough traffic, but the baseline 1h ago has no data.
        return replace(value(metric, 0.2), reading=Reading(samples=500.0, samples_text="500"))
    if kind == "nodata":
        return replace(no_data(metric), **base)
    return replace(value(metric, 0.1 if kind == "pass" else 0.9), **base)


step = st.one_of(
    st.tuples(st.just("eval"), kind, kind),
    st.tuples(st.just("eval"), kind, kind),
    st.tuples(st.just("eval"), kind, kind),
    st.tuples(st.just("kubectl_resume")),
    st.tuples(st.just("ui_resume")),
    st.tuples(st.just("edit"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("delete_target")),
    st.tuples(st.just("recreate_target")),
)


def _plain(decision: Any) -> dict[str, Any]:
    """Return a decision as plain data, so the reference's own classes compare with ours."""
    history = dataclasses.asdict(decision.history)
    history["metric_results"] = tuple(r.to_dict() for r in decision.history.metric_results)
    return {
        "status": decision.status.to_dict(),
        "status_object": decision.status,
        "pause": decision.pause,
        "events": [tuple(e) for e in decision.events],
        "history": history,
        "transient": decision.transient,
        "interval": decision.interval_seconds,
    }


def _run(world: World, steps: list[tuple[Any, ...]], check: Any, *, guard: bool = False) -> None:
    for action in steps:
        name = action[0]
        if name == "eval":
            pick = guarded if guard else _unguarded
            measurements = tuple(pick(m, k) for m, k in zip(METRICS, action[1:], strict=True))
            observation = world.observe(measurements)
            decision = decide(observation)
            check(world, observation, decision)
            was_paused = world.target.paused
            world.apply(decision)
            # No decision unpauses: a paused target is still paused once it is carried out.
            assert world.target.paused or not was_paused
        elif name == "edit":
            window = world.spec.failure_window if not isinstance(world.spec, Exception) else None
            changes: dict[str, Any] = {"failureLimit": action[1], "dryRun": action[2]}
            if guard:
                changes["metrics"] = world.spec.to_dict()["metrics"]
            if window is not None:
                changes["failureWindow"] = max(window, action[1])
            world.edit(spec_with(**changes))
        elif name == "kubectl_resume":
            world.kubectl_resume()
        elif name == "ui_resume":
            world.status = resume(world.status, now=world.now).status
            world.kubectl_resume()
        elif name == "delete_target":
            world.target = TargetState(exists=False)
        elif name == "recreate_target" and not world.target.exists:
            world.target = TargetState(exists=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(step, min_size=1, max_size=40))
def test_without_failure_window_decide_is_unchanged_bit_for_bit(
    steps: list[tuple[Any, ...]],
) -> None:
    def check(world: World, observation: Any, decision: Decision) -> None:
        old_observation = reference_decision.Observation(
            **{
                f.name: getattr(observation, f.name)
                for f in dataclasses.fields(reference_decision.Observation)
            }
        )
        reference = reference_decision.decide(old_observation)
        if reference.pause is not None and str(reference.history.outcome) != "Fail":
            assert decision.pause is None
            assert not decision.status.is_true(ConditionType.ROLLOUT_PAUSED)
            assert EventReason.ROLLOUT_PAUSED not in {e.reason for e in decision.events}
            unpaused = {"status", "status_object", "pause", "events", "history"}
            ours, theirs = _plain(decision), _plain(reference)
            assert {k: ours[k] for k in ours.keys() - unpaused} == {
                k: theirs[k] for k in theirs.keys() - unpaused
            }
            assert decision.status.failures == reference.status.failures
            assert decision.status.last_verdict == reference.status.last_verdict
            assert decision.status.metric_results == reference.status.metric_results
            assert ours["history"] == {**theirs["history"], "paused": False}
            return
        assert _plain(decision) == _plain(reference)

    _run(World(), steps, check)


@settings(max_examples=300, deadline=None)
@given(st.lists(step, min_size=1, max_size=40), st.integers(1, 3), st.integers(0, 3))
def test_window_counting_invariants(steps: list[tuple[Any, ...]], limit: int, extra: int) -> None:
    window = limit + extra
    decisive: list[Verdict] = []

    def check(world: World, observation: Any, decision: Decision) -> None:
        before: AnalysisStatus = observation.previous
        status = decision.status
        spec = world.spec
        assert status.window is not None and len(status.window) <= spec.failure_window
        assert set(status.window) <= {Verdict.PASS, Verdict.FAIL}
        assert status.failures == status.window.count(Verdict.FAIL)
        # Never more failures than Fail verdicts among the last N decisive evaluations.
        outcome = decision.history.outcome
        reset = (before.observed_generation not in (None, observation.generation)) or any(
            e.reason == EventReason.ROLLOUT_RESUMED for e in decision.events
        )
        if reset:
            decisive.clear()
        if str(outcome) in ("Pass", "Fail"):
            decisive.append(Verdict(str(outcome)))
        assert status.failures <= decisive[-spec.failure_window :].count(Verdict.FAIL)
        # Inconclusive and errors never count.
        if str(outcome) in ("Inconclusive", "Error") and not reset:
            assert status.failures == before.failures and status.window == (before.window or ())
        if decision.pause is not None:
            assert status.failures >= spec.failure_limit and not spec.dry_run
        assert decision.pause is None or decision.pause.paused_by
        check_status(status)
        assert AnalysisStatus.from_dict(status.to_dict()) == status

    metrics = [GUARDED, RAW_SPEC["metrics"][1]]
    world = World(spec=spec_with(failureLimit=limit, failureWindow=window, metrics=metrics))
    _run(world, steps, check, guard=True)


def _unguarded(metric: str, kind: str) -> Measurement:
    plain = {"lowtraffic": "fail", "nobaseline": "nodata"}
    return measure(metric, plain.get(kind, kind))


def _flap(world: World, pattern: str) -> list[Decision]:
    decisions = []
    for letter in pattern:
        latency = 0.1 if letter == "P" else 0.5
        decisions.append(world.evaluate(*_values(latency)))
    return decisions


def _values(latency: float) -> tuple[Measurement, ...]:
    return (value("p99-latency", latency), value("error-rate", 0.0))


def test_flapping_pauses_with_a_window_and_never_without() -> None:
    windowed = World(spec=spec_with(failureLimit=2, failureWindow=4))
    decisions = _flap(windowed, "PFPF")
    assert [d.pause is not None for d in decisions] == [False, False, False, True]
    assert windowed.status.window == (Verdict.PASS, Verdict.FAIL, Verdict.PASS, Verdict.FAIL)
    assert windowed.status.failures == 2
    paused = windowed.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused is not None and paused.reason == Reason.FAILURE_LIMIT_REACHED
    assert "2 failed of the last 4 decisive evaluations reached failureLimit 2" in paused.message
    assert "p99-latency is 0.5, above maxValue 0.25" in paused.message

    plain = World(spec=spec_with(failureLimit=2))
    assert not any(d.pause for d in _flap(plain, "PFPFPFPFPF"))
    assert plain.status.window is None


def test_the_window_slides_and_inconclusive_is_skipped() -> None:
    world = World(spec=spec_with(failureLimit=3, failureWindow=3))
    _flap(world, "FP")
    world.evaluate(no_data("p99-latency"), value("error-rate", 0.0))
    assert world.status.window == (Verdict.FAIL, Verdict.PASS)
    _flap(world, "PP")
    assert world.status.window == (Verdict.PASS, Verdict.PASS, Verdict.PASS)
    assert world.status.failures == 0
    not_paused = world.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert not_paused is not None
    assert not_paused.message == "0 of 3 failed evaluations among the last 3 decisive ones"


def test_a_spec_edit_and_a_resume_clear_the_window() -> None:
    world = World(spec=spec_with(failureLimit=2, failureWindow=5))
    _flap(world, "FF")
    assert world.target.paused and world.status.failures == 2
    done = resume(world.status, now=world.now)
    assert done.status.window == () and done.status.failures == 0
    world.status = done.status
    world.kubectl_resume()
    _flap(world, "F")
    assert world.status.window == (Verdict.FAIL,)
    world.edit(spec_with(failureLimit=2, failureWindow=4))
    _flap(world, "P")
    assert world.status.window == (Verdict.PASS,)
    # Dropping failureWindow drops the window from the status.
    world.edit(spec_with(failureLimit=2))
    _flap(world, "F")
    assert world.status.window is None and "window" not in world.status.to_dict()
    healthy = world.status.condition(ConditionType.HEALTHY)
    assert healthy is not None and healthy.status == ConditionStatus.FALSE
    assert replace(world.status).failures == 1
