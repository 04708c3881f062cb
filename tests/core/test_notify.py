"""Notification intents of the pure core (docs/notifications.md): one per transition, never one per
evaluation, with a key that a replayed decision reproduces."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import ConditionType, Reason
from sentinel_core.decision import Decision, Observation, decide, resume
from sentinel_core.measurement import Measurement
from sentinel_core.notify import NotifyContext, NotifyEvent
from sentinel_core.spec import InvalidSpecError, parse_spec
from tests.core.test_decision import SPEC, World, spec_with, unavailable, value

OUTAGE = 90.0


def evaluate(world: World, context: NotifyContext, *ms: Measurement) -> Decision:
    obs: Observation = replace(world.observe(ms), notify_context=context)
    decision = decide(obs)
    # Replaying the same observation (a 409, a restarted operator) gives the same intents.
    assert decide(obs).notifications == decision.notifications
    world.apply(decision)
    return decision


def fail() -> tuple[Measurement, ...]:
    return value("p99-latency", 1.0), value("error-rate", 0.0)


def ok() -> tuple[Measurement, ...]:
    return value("p99-latency", 0.1), value("error-rate", 0.0)


def down() -> tuple[Measurement, ...]:
    return unavailable("p99-latency"), unavailable("error-rate")


def events(decision: Decision) -> list[str]:
    return [i.event.value for i in decision.notifications]


def test_pause_is_one_intent_and_later_failures_none() -> None:
    world = World()
    ctx = NotifyContext()
    seen = [events(evaluate(world, ctx, *fail())) for _ in range(6)]
    assert seen == [["Failing"], [], ["Paused"], [], [], []]
    paused = world.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused is not None
    world2 = World()
    keys = [i.key for _ in range(3) for i in evaluate(world2, ctx, *fail()).notifications]
    assert keys[-1] == f"Paused@{paused.last_transition_time:%Y-%m-%dT%H:%M:%SZ}"


def test_kubectl_resume_and_ui_resume_are_one_resumed_each() -> None:
    world = World()
    ctx = NotifyContext()
    for _ in range(3):
        evaluate(world, ctx, *fail())
    world.kubectl_resume()
    d = evaluate(world, ctx, *ok())
    assert events(d) == ["Resumed"]
    assert "kubectl" in d.notifications[0].message
    assert events(evaluate(world, ctx, *ok())) == []

    other = World()
    for _ in range(3):
        evaluate(other, ctx, *fail())
    done = resume(other.status, now=other.now, actor="alice", via="the REST API")
    assert [i.event for i in done.notifications] == [NotifyEvent.RESUMED]
    assert "alice through the REST API" in done.notifications[0].message
    # Resuming what is not paused says nothing.
    assert resume(done.status, now=other.now, actor="alice").notifications == ()


def test_outage_is_announced_once_after_the_threshold_and_recovery_once() -> None:
    world = World()
    evaluate(world, NotifyContext(outage_after_seconds=OUTAGE), *ok())
    sent: list[str] = []
    previous: datetime | None = None
    for _ in range(8):  # 30 s apart: 0, 30, 60, 90 (crossed), 120, ...
        ctx = NotifyContext(outage_after_seconds=OUTAGE, previous_attempt=previous)
        previous = world.now
        sent += events(evaluate(world, ctx, *down()))
    assert sent == ["MetricsUnavailable"]
    ctx = NotifyContext(outage_after_seconds=OUTAGE, previous_attempt=previous)
    d = evaluate(world, ctx, *ok())
    assert events(d) == ["Recovered"]
    assert "answers again" in d.notifications[0].message


def test_an_outage_that_sent_no_metrics_unavailable_sends_no_recovered() -> None:
    # Found by the soak (docs/reliability.md): the outage lasted past the threshold, but its
    # only attempts were before it (a backoff), so no MetricsUnavailable went out; the
    # recovery must not answer a message nobody got.
    world = World()
    evaluate(world, NotifyContext(outage_after_seconds=OUTAGE), *ok())
    previous = world.now
    assert events(evaluate(world, NotifyContext(outage_after_seconds=OUTAGE), *down())) == []
    # 30 s later, the recovery 150 s later: the outage lasted 120 s > 90 s, unannounced.
    world.now += timedelta(seconds=90)
    ctx = NotifyContext(outage_after_seconds=OUTAGE, previous_attempt=previous)
    assert events(evaluate(world, ctx, *ok())) == []


def test_a_short_outage_says_nothing() -> None:
    world = World()
    ctx = NotifyContext(outage_after_seconds=OUTAGE)
    evaluate(world, ctx, *ok())
    assert events(evaluate(world, ctx, *down())) == []
    assert events(evaluate(world, ctx, *ok())) == []


def test_unknown_channels_are_named_in_ready_and_evaluation_goes_on() -> None:
    world = World(spec=spec_with(notify=["payments-slack", "nope"]))
    d = evaluate(world, NotifyContext(channels=frozenset({"payments-slack"})), *ok())
    ready = d.status.condition(ConditionType.READY)
    assert ready is not None and ready.reason == Reason.EVALUATING
    assert ready.message.endswith("unknown notification channel in spec.notify: nope")
    assert d.history.outcome.value == "Pass"
    # Without a configuration nothing is checked.
    quiet = World(spec=spec_with(notify=["x"]))
    d = evaluate(quiet, NotifyContext(), *ok())
    assert "unknown" not in (d.status.condition(ConditionType.READY) or ready).message


def test_spec_notify_rules() -> None:
    base = SPEC.to_dict()
    assert parse_spec({**base, "notify": ["a", "b-2"]}).notify == ("a", "b-2")
    assert "notify" not in SPEC.to_dict()
    assert parse_spec({**base, "notify": ["a"]}).to_dict()["notify"] == ["a"]
    bad = {**base, "notify": ["Bad_Name", "a", "a", *[f"c{i}" for i in range(9)]]}
    try:
        parse_spec(bad, strict=True)
    except InvalidSpecError as exc:
        fields = exc.by_field()
    else:
        raise AssertionError("accepted")
    assert fields["spec.notify"] == ["must have at most 10 items"]
    assert "DNS-1123" in fields["spec.notify[0]"][0]
    assert "duplicate" in fields["spec.notify[2]"][0]
    try:
        parse_spec({**base, "notify": "a"})
    except InvalidSpecError as exc:
        assert exc.by_field() == {"spec.notify": ["must be a list of channel names"]}


# -- property: at most one intent per transition, never one per evaluation ------------------

kind = st.sampled_from(("pass", "fail", "fail", "unavailable", "kubectl_resume", "ui_resume"))
gap = st.sampled_from((5, 30, 60, 120))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(kind, gap), min_size=1, max_size=60))
def test_at_most_one_intent_per_transition(steps: list[tuple[str, int]]) -> None:
    world = World()
    keys: Counter[str] = Counter()
    previous: datetime | None = None
    outages: Counter[datetime] = Counter()
    announced = False
    for action, seconds in steps:
        world.now += timedelta(seconds=seconds)
        if action == "kubectl_resume":
            world.kubectl_resume()
            continue
        if action == "ui_resume":
            done = resume(world.status, now=world.now, actor="bob")
            keys.update(i.key for i in done.notifications)
            world.status = done.status
            world.kubectl_resume()
            continue
        ctx = NotifyContext(outage_after_seconds=OUTAGE, previous_attempt=previous)
        previous = world.now
        measured = {"unavailable": down, "fail": fail}.get(action, ok)()
        before = world.status
        d = evaluate(world, ctx, *measured)
        # Every intent stands for a condition that changed in this very decision, except
        # MetricsUnavailable, which stands for one outage (its Ready transition).
        assert len({i.event for i in d.notifications}) == len(d.notifications)
        for intent in d.notifications:
            if intent.event == NotifyEvent.RECOVERED:
                # Recovered answers a MetricsUnavailable that went out, never a silent outage.
                assert announced, steps
                announced = False
            if intent.event == NotifyEvent.METRICS_UNAVAILABLE:
                outages[intent.at] += 1
                announced = True
                continue
            assert intent.at == utc(world.now - timedelta(seconds=30)), intent
        if before == world.status:
            assert {i.event for i in d.notifications} <= {NotifyEvent.METRICS_UNAVAILABLE}
        keys.update(i.key for i in d.notifications)
    assert all(n == 1 for n in keys.values()), keys
    assert all(n == 1 for n in outages.values()), outages


def utc(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def test_invalid_spec_sends_nothing() -> None:
    world = World(spec=InvalidSpecError([]))
    assert evaluate(world, NotifyContext()).notifications == ()
