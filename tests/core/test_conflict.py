"""``decision.reapplied``: what a status write carries after a 409 (docs/operator.md#conflicts)."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import ConditionType, EventReason, Reason
from sentinel_core.decision import after_conflict, reapplied, resume
from sentinel_core.decision._conflict import RESUME_FIELDS
from sentinel_core.notify import NotifyEvent
from sentinel_core.status import AnalysisStatus
from tests.core.test_decision import World, failing, passing, spec_with


def _failing_twice(**spec: object) -> World:
    world = World(spec=spec_with(**{"failureLimit": 3, **spec}))
    world.evaluate(*failing())
    world.evaluate(*failing())
    return world


def test_without_a_resume_in_between_the_decided_status_is_written() -> None:
    world = _failing_twice()
    read = world.status
    decision = world.evaluate(*failing())
    # Another writer changed the resource (a label, an annotation): the status read is unchanged.
    assert reapplied(decision.status, read=read, fresh=read, paused=False) == decision.status


def test_a_resume_in_between_keeps_its_count_and_its_condition() -> None:
    world = _failing_twice(failureLimit=5)
    read = world.status
    decision = world.evaluate(*failing())
    assert decision.status.failures == 3 and decision.pause is None
    fresh = resume(read, now=world.now, actor="alice").status

    written = reapplied(decision.status, read=read, fresh=fresh, paused=False)

    assert written.failures == 0
    paused = written.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused == fresh.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused is not None and paused.reason == Reason.RESUMED_BY_USER
    # The evaluation's own results stay the decision's.
    assert written.last_verdict == decision.status.last_verdict
    assert written.metric_results == decision.status.metric_results
    assert written.last_evaluation_time == decision.status.last_evaluation_time
    for type_ in (ConditionType.READY, ConditionType.HEALTHY):
        assert written.condition(type_) == decision.status.condition(type_)


def test_a_resume_in_between_empties_the_failure_window() -> None:
    world = _failing_twice(failureWindow=4, failureLimit=4)
    read = world.status
    decision = world.evaluate(*failing())
    assert decision.status.window is not None and len(decision.status.window) == 3
    fresh = resume(read, now=world.now).status
    written = reapplied(decision.status, read=read, fresh=fresh, paused=False)
    assert (written.failures, written.window) == (0, ())


def test_a_second_resume_that_leaves_the_condition_as_it_was_still_wins() -> None:
    world = _failing_twice(failureLimit=5)
    world.status = resume(world.status, now=world.now, actor="alice").status
    world.evaluate(*failing())
    read = world.status
    assert read.failures == 1
    decision = world.evaluate(*failing())
    # The same person again: the condition is unchanged (status, reason, message, time).
    fresh = resume(read, now=world.now + timedelta(seconds=1), actor="alice").status
    assert fresh.condition(ConditionType.ROLLOUT_PAUSED) == read.condition(
        ConditionType.ROLLOUT_PAUSED
    )
    assert reapplied(decision.status, read=read, fresh=fresh, paused=False).failures == 0


def test_an_old_resume_that_was_read_already_does_not_undo_the_count() -> None:
    world = _failing_twice(failureLimit=5)
    world.status = resume(world.status, now=world.now, actor="alice").status
    world.evaluate(*failing())
    read = world.status
    decision = world.evaluate(*failing())
    # Someone wrote in between without touching the status (ResumedByUser stays, as read).
    assert reapplied(decision.status, read=read, fresh=read, paused=False) == decision.status
    assert decision.status.failures == 2


def test_a_decision_that_paused_keeps_its_status_over_a_resume() -> None:
    world = _failing_twice()
    read = world.status
    decision = world.evaluate(*failing())
    assert decision.pause is not None
    fresh = resume(read, now=world.now).status
    # The Deployment was patched paused before this write: the status must say so.
    assert reapplied(decision.status, read=read, fresh=fresh, paused=True) == decision.status


def test_a_pass_after_a_resume_is_not_mistaken_for_one() -> None:
    world = _failing_twice()
    read = world.status
    decision = world.evaluate(*passing())
    fresh = world.status  # a second evaluation wrote the same Pass meanwhile
    assert reapplied(decision.status, read=read, fresh=fresh, paused=False) == decision.status


@settings(max_examples=60, deadline=None)
@given(
    verdicts=st.lists(st.sampled_from(["pass", "fail"]), max_size=8),
    window=st.one_of(st.none(), st.integers(1, 5)),
)
def test_resume_changes_no_field_that_reapplied_does_not_take_from_the_fresh_copy(
    verdicts: list[str], window: int | None
) -> None:
    """If ``resume`` ever resets another field, ``reapplied`` must keep that one too."""
    spec = (
        spec_with(failureLimit=99)
        if window is None
        else spec_with(failureLimit=1, failureWindow=window)
    )
    world = World(spec=spec)
    for verdict in verdicts:
        world.evaluate(*(failing() if verdict == "fail" else passing()))
    before = world.status
    after = resume(before, now=world.now).status
    changed = {
        f.name for f in fields(AnalysisStatus) if getattr(before, f.name) != getattr(after, f.name)
    }
    assert changed <= {*RESUME_FIELDS, "conditions"}
    others = [c for c in after.conditions if c.type != ConditionType.ROLLOUT_PAUSED]
    assert others == [c for c in before.conditions if c.type != ConditionType.ROLLOUT_PAUSED]
    assert replace(after, conditions=before.conditions) == replace(
        before, **{name: getattr(after, name) for name in RESUME_FIELDS}
    )


def test_a_resume_seen_by_both_is_announced_once() -> None:
    # The UI's resume releases the target and writes its status; the operator, reading the
    # released target first, took it for a kubectl resume and met the UI's write as a 409.
    world = _failing_twice(failureLimit=2)
    assert world.status.is_true(ConditionType.ROLLOUT_PAUSED)
    read = world.status
    world.kubectl_resume()
    decision = world.evaluate(*failing())
    assert [e.reason for e in decision.events] == [EventReason.ROLLOUT_RESUMED]
    assert [i.event for i in decision.notifications] == [NotifyEvent.RESUMED]
    fresh = resume(read, now=world.now, actor="alice", via="the web UI").status

    after = after_conflict(decision, read=read, fresh=fresh)

    assert after.status == reapplied(decision.status, read=read, fresh=fresh, paused=False)
    assert after.events == () and after.notifications == ()
    assert after.history == decision.history and after.pause is None


def test_after_a_conflict_without_a_resume_every_action_stays() -> None:
    world = _failing_twice(failureLimit=5)
    read = world.status
    decision = world.evaluate(*failing())
    assert decision.notifications or decision.events or decision.status != read
    # Another writer changed the resource (a label, an annotation): the status read is unchanged.
    assert after_conflict(decision, read=read, fresh=read) == decision


def test_a_decision_that_paused_keeps_its_events_over_a_resume() -> None:
    world = _failing_twice(failureLimit=3)
    read = world.status
    decision = world.evaluate(*failing())
    assert decision.pause is not None and decision.events
    fresh = resume(read, now=world.now).status

    assert after_conflict(decision, read=read, fresh=fresh) == decision
