"""The sabotage list, as far as the pure decision core decides them.

Each test runs a sequence of reconcile attempts through ``decide`` (and ``next_delay`` for the
requeue cadence) and asserts conditions, events, history outcomes and that nothing was paused
that should not be. The end-to-end versions with real Prometheus and devcluster live with the
reconciler's tests.
"""

from __future__ import annotations

import random

import pytest

from sentinel_core.backoff import next_delay
from sentinel_core.conditions import ConditionType, EventReason, Outcome, Reason, Verdict
from sentinel_core.decision import Decision
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.workload_kinds import TargetState
from tests.core.test_decision import (
    KEY,
    World,
    failing,
    no_data,
    outage,
    passing,
    reasons,
    spec_with,
    value,
)

TRANSIENT_FAILURES = [
    "HTTP 502 Bad Gateway",  # 1
    "connection refused",  # 2: Prometheus stopped
    "timed out after 5.0 s",  # 3: slower than the timeout
    "unparseable body: HTML instead of JSON",  # 4
    "unparseable body: truncated JSON",  # 4
    'Prometheus answered "status":"error" (errorType unavailable)',  # 4
]


def run_outage(world: World, message: str, seconds: float) -> list[Decision]:
    """Drive reconciles through an outage of ``seconds``, requeued as the dispatcher would."""
    rng = random.Random(7)
    decisions: list[Decision] = []
    elapsed, attempt = 0.0, 0
    interval = 5.0
    while elapsed < seconds:
        decision = world.evaluate(*outage(message))
        decisions.append(decision)
        assert decision.transient
        attempt += 1
        elapsed += next_delay(attempt, interval, rng)
    return decisions


@pytest.mark.parametrize("message", TRANSIENT_FAILURES)
def test_items_1_to_4_transient_prometheus_failures(message: str) -> None:
    world = World(spec=spec_with(interval="5s"))
    world.evaluate(*failing())
    world.evaluate(*failing())
    decisions = run_outage(world, message, seconds=600)

    # Fewer queries than the healthy cadence (one per 5 s interval would be 120 in 10 min).
    assert len(decisions) < 600 / 5 / 4
    assert world.cond(ConditionType.READY) == ("False", "MetricsUnavailable")
    assert world.status.failures == 2
    assert all(d.pause is None for d in decisions)
    assert all(d.history.outcome == Outcome.ERROR for d in decisions)
    assert all(d.history.error_reason == Reason.METRICS_UNAVAILABLE for d in decisions)
    assert message in decisions[0].history.error_message
    # One event for the whole outage, not one per attempt.
    assert [r for d in decisions for r in reasons(d)] == [EventReason.METRICS_UNAVAILABLE]
    assert world.cond(ConditionType.HEALTHY) == ("False", "ThresholdExceeded")

    recovered = world.evaluate(*passing())
    assert reasons(recovered) == [EventReason.METRICS_RECOVERED]
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    assert not recovered.transient
    assert world.status.failures == 0


def test_item_1_outage_never_turns_counted_failures_into_a_pause() -> None:
    world = World()
    world.evaluate(*failing())
    world.evaluate(*failing())
    decisions = [world.evaluate(*outage()) for _ in range(20)]
    assert all(d.pause is None for d in decisions)
    # The first answer after the outage is the third consecutive Fail: now it pauses.
    assert world.evaluate(*failing()).pause is not None


def test_item_5_invalid_promql_fixed_by_editing_the_spec() -> None:
    bad = Measurement(
        "p99-latency",
        error=MeasurementError.INVALID_QUERY,
        message="bad_data: parse error at char 12",
    )
    world = World()
    first = world.evaluate(bad, value("error-rate", 0.0))
    later = [world.evaluate(bad, value("error-rate", 0.0)) for _ in range(3)]
    assert world.cond(ConditionType.READY) == ("False", "InvalidQuery")
    assert reasons(first) == [EventReason.INVALID_QUERY]
    assert all(d.events == () for d in later)
    assert all(not d.transient for d in [first, *later])
    assert all(d.pause is None for d in [first, *later])
    assert world.status.failures == 0
    world.edit(spec_with(failureLimit=3))
    world.evaluate(*passing())
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    assert world.cond(ConditionType.HEALTHY) == ("True", "WithinThresholds")


@pytest.mark.parametrize(
    "empty",
    [no_data("p99-latency"), Measurement("p99-latency", message="NaN")],
    ids=["empty-vector", "nan"],
)
def test_item_6_empty_result_or_nan_is_inconclusive_and_never_pauses(empty: Measurement) -> None:
    world = World(spec=spec_with(failureLimit=1))
    decisions = [world.evaluate(empty, value("error-rate", 0.0)) for _ in range(5)]
    assert world.status.last_verdict == Verdict.INCONCLUSIVE
    assert world.cond(ConditionType.HEALTHY) == ("Unknown", "NoData")
    assert all(d.pause is None for d in decisions)
    assert all(d.history.outcome == Outcome.INCONCLUSIVE for d in decisions)
    assert world.status.failures == 0


def test_item_7_target_deleted_mid_analysis_then_recreated() -> None:
    world = World()
    world.evaluate(*failing())
    world.target = TargetState(exists=False)
    gone = [world.evaluate(*failing()) for _ in range(4)]
    assert world.cond(ConditionType.READY) == ("False", "TargetNotFound")
    assert [reasons(d) for d in gone] == [[EventReason.TARGET_NOT_FOUND], [], [], []]
    assert all(d.pause is None for d in gone)
    assert all(d.history.outcome == Outcome.FAIL for d in gone)
    assert world.status.failures == 5
    world.target = TargetState(exists=True)
    back = world.evaluate(*passing())
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    assert back.pause is None
    assert back.events == ()


def test_item_8_two_analyses_on_one_deployment() -> None:
    fast = World(name="checkout", spec=spec_with(failureLimit=2))
    slow = World(name="checkout-slo", spec=spec_with(failureLimit=4))
    decisions: dict[str, list[Decision]] = {"fast": [], "slow": []}
    shared = TargetState(exists=True)
    for _ in range(5):
        for label, world in (("fast", fast), ("slow", slow)):
            world.target = shared
            decision = world.evaluate(*failing())
            shared = world.target
            decisions[label].append(decision)
    fast_pauses = [d.pause for d in decisions["fast"] if d.pause]
    slow_pauses = [d.pause for d in decisions["slow"] if d.pause]
    assert [p.paused_by for p in fast_pauses] == [(KEY,)]
    assert [p.paused_by for p in slow_pauses] == [(KEY, "shop/checkout-slo")]
    assert shared.paused and shared.paused_by == (KEY, "shop/checkout-slo")
    # A person resumes: both see it, neither unpauses or re-pauses at once; they cannot fight.
    shared = TargetState(True, False, shared.paused_by)
    for world in (fast, slow):
        world.target = shared
        decision = world.evaluate(*passing())
        assert decision.pause is None
        assert reasons(decision) == [EventReason.ROLLOUT_RESUMED]
        assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "ResumedByUser")


def test_item_9_regression_pauses_after_exactly_failure_limit() -> None:
    world = World()
    outcomes = [world.evaluate(*failing()) for _ in range(3)]
    assert [d.pause is not None for d in outcomes] == [False, False, True]
    assert [d.status.failures for d in outcomes] == [1, 2, 3]
    assert [reasons(d) for d in outcomes] == [[], [], [EventReason.ROLLOUT_PAUSED]]
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")


def test_item_9_a_pass_in_between_resets_the_count() -> None:
    world = World()
    sequence = [failing(), failing(), passing(), failing(), failing()]
    assert all(world.evaluate(*m).pause is None for m in sequence)
    assert world.status.failures == 2


def test_item_9_dry_run_never_pauses() -> None:
    world = World(spec=spec_with(dryRun=True, failureLimit=1))
    assert all(world.evaluate(*failing()).pause is None for _ in range(6))
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "NotPaused")
    assert not world.target.paused


def test_item_14_spec_edited_resets_counters_and_observed_generation_follows() -> None:
    world = World()
    world.evaluate(*failing())
    world.evaluate(*failing())
    world.edit(spec_with(failureLimit=3, interval="1m"))
    decision = world.evaluate(*failing())
    assert decision.status.failures == 1
    assert decision.status.observed_generation == 2
    assert decision.pause is None
    assert decision.interval_seconds == 60.0
    assert {c.observed_generation for c in decision.status.conditions} == {2}
    world.evaluate(*failing())
    assert world.evaluate(*failing()).pause is not None
