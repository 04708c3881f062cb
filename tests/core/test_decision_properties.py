"""Property tests of the decision core over random histories of evaluations, spec edits,
resumes, pauses by others and a target that comes and goes.

Invariants checked after every single decision:

- ``failures`` equals the number of Fail verdicts since the last Pass, spec change or resume
  (so it can never exceed it);
- a pause is decided only when ``failures >= failureLimit``, never with ``dryRun``, never for a
  missing target or an attempt without answers;
- no decision ever unpauses: a paused target stays paused;
- ``lastTransitionTime`` changes exactly when a condition's status changes;
- events are emitted only on the transitions they name, with their fixed types;
- the status always fits the CRD's status schema and docs/status.md's table, and round-trips.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import (
    EVENT_TYPES,
    ConditionStatus,
    ConditionType,
    EventReason,
    Outcome,
    Reason,
)
from sentinel_core.decision import Decision, resume
from sentinel_core.measurement import Measurement
from sentinel_core.spec import InvalidSpecError
from sentinel_core.status import AnalysisStatus
from sentinel_core.workload_kinds import TargetState, pause_patch
from tests.core.test_decision import (
    KEY,
    World,
    invalid,
    no_data,
    spec_with,
    unavailable,
    value,
)
from tests.core.test_status_api import check_status

METRICS = ("p99-latency", "error-rate")
MAX = {"p99-latency": 0.25, "error-rate": 0.01}
KINDS = ("pass", "fail", "nodata", "unavailable", "invalid")


def measure(metric: str, kind: str) -> Measurement:
    if kind == "pass":
        return value(metric, MAX[metric] / 2)
    if kind == "fail":
        return value(metric, MAX[metric] * 3, series=2)
    if kind == "nodata":
        return no_data(metric)
    if kind == "unavailable":
        return unavailable(metric)
    return invalid(metric)


# Failures weigh more and evaluations come most often, so that limits are reached, targets
# paused and resumed within a few dozen steps.
kind = st.sampled_from((*KINDS, "fail", "fail", "fail", "pass"))
evaluation = st.tuples(st.just("eval"), kind, kind)
step = st.one_of(
    evaluation,
    evaluation,
    evaluation,
    evaluation,
    st.tuples(st.just("kubectl_resume")),
    st.tuples(st.just("edit"), st.integers(1, 4), st.booleans()),
    st.tuples(
        st.sampled_from(
            [
                "invalid_spec",
                "ui_resume",
                "delete_target",
                "recreate_target",
                "other_pause",
                "manual_pause",
            ]
        )
    ),
)


class Model:
    """What the rules say ``failures`` must be, tracked independently of ``decide``."""

    def __init__(self) -> None:
        self.fails = 0
        self.seen_generation: int | None = None


def check_decision(world: World, before: AnalysisStatus, target: TargetState, d: Decision) -> None:
    now = world.now - timedelta(seconds=30)  # World.apply already advanced the clock
    status = d.status
    spec = world.spec

    # Pausing.
    if d.pause is not None:
        assert not isinstance(spec, InvalidSpecError)
        assert status.failures >= spec.failure_limit
        assert not spec.dry_run
        assert target.exists
        assert d.history.outcome != Outcome.ERROR
        assert d.history.paused
        assert pause_patch(d.pause, {})["spec"] == {"paused": True}
        assert KEY in d.pause.paused_by
        assert set(target.paused_by) <= set(d.pause.paused_by)
        assert status.is_true(ConditionType.ROLLOUT_PAUSED)
    else:
        assert not d.history.paused

    # Never unpause: a paused target is still paused once the decision is carried out.
    if target.paused:
        assert world.target.paused

    # lastTransitionTime follows status changes, and only those.
    for condition in status.conditions:
        old = before.condition(condition.type)
        if old is not None and old.status == condition.status:
            assert condition.last_transition_time == old.last_transition_time
        else:
            assert condition.last_transition_time == now

    # Events only on the transitions they name.
    assert len({e.reason for e in d.events}) == len(d.events)
    for event in d.events:
        assert event.type == EVENT_TYPES[event.reason]
    reasons = {e.reason for e in d.events}
    ready_before = before.condition(ConditionType.READY)
    ready_after = status.condition(ConditionType.READY)
    assert ready_after is not None
    was = ready_before.reason if ready_before is not None else None
    if EventReason.ROLLOUT_PAUSED in reasons:
        assert status.is_true(ConditionType.ROLLOUT_PAUSED)
        assert d.pause is not None or not before.is_true(ConditionType.ROLLOUT_PAUSED)
    if EventReason.ROLLOUT_RESUMED in reasons:
        assert before.is_true(ConditionType.ROLLOUT_PAUSED)
        paused = status.condition(ConditionType.ROLLOUT_PAUSED)
        assert paused is not None
        assert (paused.status, paused.reason) == (ConditionStatus.FALSE, Reason.RESUMED_BY_USER)
    if EventReason.METRICS_UNAVAILABLE in reasons:
        assert ready_after.reason == Reason.METRICS_UNAVAILABLE != was
    if (EventReason.METRICS_RECOVERED in reasons) != (
        was == Reason.METRICS_UNAVAILABLE and ready_after.reason != Reason.METRICS_UNAVAILABLE
    ):
        # Recovery is announced only once Prometheus answers (not for an invalid spec).
        assert isinstance(spec, InvalidSpecError)
    for reason in (EventReason.TARGET_NOT_FOUND, EventReason.INVALID_QUERY):
        if reason in reasons:
            assert ready_after.reason == reason

    # The status is always a valid, complete, round-tripping CRD status.
    raw = check_status(status)
    assert AnalysisStatus.from_dict(raw) == status
    assert {c.type for c in status.conditions} == {str(t) for t in ConditionType}
    assert status.observed_generation == world.generation
    assert (status.paused_at is not None) == status.is_true(ConditionType.ROLLOUT_PAUSED)


@settings(max_examples=400, deadline=None)
@given(st.lists(step, min_size=1, max_size=50))
def test_invariants_hold_over_any_history(steps: list[tuple[object, ...]]) -> None:
    world = World()
    model = Model()
    for action in steps:
        name = action[0]
        if name == "eval":
            before, target = world.status, world.target
            spec_changed = model.seen_generation not in (None, world.generation)
            if spec_changed:
                model.fails = 0
            measurements = (
                ()
                if isinstance(world.spec, InvalidSpecError)
                else tuple(measure(m, k) for m, k in zip(METRICS, action[1:], strict=True))
            )
            # A person resumed what this analysis paused (an invalid spec names no target).
            resumed = (
                before.is_true(ConditionType.ROLLOUT_PAUSED)
                and target.exists
                and not target.paused
                and not isinstance(world.spec, InvalidSpecError)
            )
            decision = world.evaluate(*measurements)
            model.seen_generation = world.generation
            announced = any(e.reason == EventReason.ROLLOUT_RESUMED for e in decision.events)
            assert announced == resumed
            if resumed:
                model.fails = 0
                assert decision.pause is None
            if decision.history.outcome == Outcome.FAIL:
                model.fails += 1
            elif decision.history.outcome == Outcome.PASS:
                model.fails = 0
            check_decision(world, before, target, decision)
            assert decision.status.failures == model.fails
        elif name == "edit":
            world.edit(spec_with(failureLimit=action[1], dryRun=action[2]))
        elif name == "invalid_spec":
            world.edit(InvalidSpecError([]))
        elif name == "kubectl_resume":
            world.kubectl_resume()
        elif name == "ui_resume":
            done = resume(world.status, now=world.now)
            if world.status.is_true(ConditionType.ROLLOUT_PAUSED):
                assert [e.reason for e in done.events] == [EventReason.ROLLOUT_RESUMED]
            world.status = done.status
            world.kubectl_resume()
            model.fails = 0
            assert done.status.failures == 0
        elif name == "delete_target":
            world.target = TargetState(exists=False)
        elif name == "recreate_target":
            if not world.target.exists:
                world.target = TargetState(exists=True)
        elif name == "other_pause":
            if world.target.exists:
                others = (*world.target.paused_by, "shop/other")
                world.target = replace(world.target, paused=True, paused_by=others)
        elif name == "manual_pause" and world.target.exists:
            world.target = replace(world.target, paused=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(kind, kind), min_size=1, max_size=30), st.integers(1, 4))
def test_pauses_exactly_when_the_consecutive_fail_run_reaches_the_limit(
    evaluations: list[tuple[str, str]], limit: int
) -> None:
    world = World(spec=spec_with(failureLimit=limit))
    run, paused = 0, False
    for kinds in evaluations:
        decision = world.evaluate(*(measure(m, k) for m, k in zip(METRICS, kinds, strict=True)))
        if decision.history.outcome == Outcome.FAIL:
            run += 1
        elif decision.history.outcome == Outcome.PASS:
            run = 0
        should_pause = not paused and run >= limit and decision.history.outcome != Outcome.ERROR
        assert (decision.pause is not None) == should_pause
        paused = paused or should_pause
