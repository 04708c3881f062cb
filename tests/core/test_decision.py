"""Example tests of the pure decision core: every rule of docs/operator.md, one scenario at a time.

``World`` plays the reconciler around ``decide``: it feeds measurements, keeps the status and
carries out pauses on a simulated target, so a test reads like a sequence of evaluations.
The end-to-end versions (real Prometheus, devcluster) belong to the reconciler's tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from sentinel_core.conditions import (
    Annotation,
    ConditionStatus,
    ConditionType,
    EventReason,
    EventType,
    Outcome,
    Reason,
    Verdict,
)
from sentinel_core.decision import (
    Decision,
    Observation,
    decide,
    resume,
)
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.spec import AnalysisSpec, InvalidSpecError, parse_spec
from sentinel_core.status import AnalysisStatus, Rollout
from sentinel_core.values import format_value
from sentinel_core.workload_kinds import TargetState, parse_paused_by, pause_patch

NOW = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
KEY = "shop/checkout"
LATENCY_QUERY = 'histogram_quantile(0.99, rate(http_request_duration_seconds_bucket{app="x"}[5m]))'
RAW_SPEC = {
    "target": {"kind": "Deployment", "name": "checkout"},
    "metrics": [
        {"name": "p99-latency", "query": LATENCY_QUERY, "maxValue": 0.25},
        {"name": "error-rate", "query": "sum(rate(errors_total[1m]))", "maxValue": 0.01},
    ],
    "interval": "30s",
    "failureLimit": 3,
}
SPEC = parse_spec(RAW_SPEC)


def spec_with(**changes: object) -> AnalysisSpec:
    return parse_spec({**RAW_SPEC, **changes})


def value(metric: str, number: float, series: int = 1) -> Measurement:
    return Measurement(metric=metric, value=number, text=format_value(number), series=series)


def no_data(metric: str) -> Measurement:
    return Measurement(metric=metric, message="empty result")


def unavailable(metric: str, message: str = "HTTP 502 Bad Gateway") -> Measurement:
    return Measurement(metric=metric, error=MeasurementError.UNAVAILABLE, message=message)


def invalid(metric: str) -> Measurement:
    message = 'bad_data: 1:14: parse error: unexpected "}"'
    return Measurement(metric=metric, error=MeasurementError.INVALID_QUERY, message=message)


def passing() -> tuple[Measurement, ...]:
    return (value("p99-latency", 0.1), value("error-rate", 0.0))


def failing(latency: float = 0.412) -> tuple[Measurement, ...]:
    return (value("p99-latency", latency, series=3), value("error-rate", 0.0))


def outage(message: str = "HTTP 502 Bad Gateway") -> tuple[Measurement, ...]:
    return (unavailable("p99-latency", message), unavailable("error-rate", message))


@dataclass
class World:
    """One analysis, its target and the clock, advanced one reconcile at a time."""

    spec: AnalysisSpec | InvalidSpecError = SPEC
    generation: int = 1
    status: AnalysisStatus = field(default_factory=AnalysisStatus)
    target: TargetState = field(default_factory=lambda: TargetState(exists=True))
    now: datetime = NOW
    name: str = "checkout"

    def evaluate(self, *measurements: Measurement) -> Decision:
        decision = decide(self.observe(measurements))
        self.apply(decision)
        return decision

    def decide_with(
        self, measurements: tuple[Measurement, ...], rollout: Rollout | None = None
    ) -> Decision:
        """Evaluate with the rollout the reconciler detected (docs/resource.md)."""
        decision = decide(replace(self.observe(measurements), rollout=rollout))
        self.apply(decision)
        return decision

    def observe(self, measurements: tuple[Measurement, ...]) -> Observation:
        return Observation(
            namespace="shop",
            name=self.name,
            generation=self.generation,
            spec=self.spec,
            previous=self.status,
            target=self.target,
            measurements=measurements,
            now=self.now,
        )

    def apply(self, decision: Decision) -> None:
        self.status = decision.status
        if decision.pause is not None and self.target.exists:
            self.target = TargetState(True, True, decision.pause.paused_by)
        self.now += timedelta(seconds=30)

    def edit(self, spec: AnalysisSpec | InvalidSpecError) -> None:
        self.spec = spec
        self.generation += 1

    def kubectl_resume(self) -> None:
        # `kubectl rollout resume` flips spec.paused and leaves the annotations alone.
        self.target = replace(self.target, paused=False)

    def cond(self, type_: ConditionType) -> tuple[str, str]:
        condition = self.status.condition(type_)
        assert condition is not None
        return condition.status, condition.reason


def reasons(decision: Decision) -> list[str]:
    return [event.reason for event in decision.events]


def condition(status: AnalysisStatus, type_: ConditionType) -> tuple[str, str, str]:
    found = status.condition(type_)
    assert found is not None
    return found.status, found.reason, found.message


# --- verdict ------------------------------------------------------------------------------


def test_all_metrics_within_max_value_pass() -> None:
    world = World()
    decision = world.evaluate(*passing())
    status = decision.status
    assert status.last_verdict == Verdict.PASS
    assert status.failures == 0
    assert status.observed_generation == 1
    assert status.last_evaluation_time == NOW
    assert [(r.name, r.value, r.max_value, r.verdict) for r in status.metric_results] == [
        ("p99-latency", "0.1", 0.25, Verdict.PASS),
        ("error-rate", "0", 0.01, Verdict.PASS),
    ]
    assert condition(status, ConditionType.READY)[:2] == ("True", "Evaluating")
    assert condition(status, ConditionType.HEALTHY)[:2] == ("True", "WithinThresholds")
    assert condition(status, ConditionType.ROLLOUT_PAUSED)[:2] == ("False", "NotPaused")
    assert [c.type for c in status.conditions] == ["Ready", "Healthy", "RolloutPaused"]
    assert all(c.last_transition_time == NOW for c in status.conditions)
    assert all(c.observed_generation == 1 for c in status.conditions)
    assert decision.pause is None
    assert decision.events == ()
    assert not decision.transient
    assert decision.interval_seconds == 30.0
    assert decision.history.outcome == Outcome.PASS
    assert decision.history.error_reason is None


def test_any_metric_above_max_value_fails_and_message_names_value_and_series() -> None:
    decision = World().evaluate(*failing(0.412))
    assert decision.status.last_verdict == Verdict.FAIL
    assert decision.status.failures == 1
    status, reason, message = condition(decision.status, ConditionType.HEALTHY)
    assert (status, reason) == ("False", "ThresholdExceeded")
    assert "p99-latency" in message
    assert "0.412" in message
    assert "0.25" in message
    assert "worst of 3 series" in message
    assert "error-rate" not in message
    result = decision.status.metric_results[0]
    assert (result.verdict, result.value, result.message) == (
        Verdict.FAIL,
        "0.412",
        "worst of 3 series",
    )
    assert decision.history.outcome == Outcome.FAIL
    assert [r.verdict for r in decision.history.metric_results] == [Verdict.FAIL, Verdict.PASS]


def test_value_equal_to_max_value_passes() -> None:
    decision = World().evaluate(value("p99-latency", 0.25), value("error-rate", 0.01))
    assert decision.status.last_verdict == Verdict.PASS


def test_value_text_is_prometheus_text_not_reformatted() -> None:
    measurement = Measurement("p99-latency", value=1e-07, text="1e-07", series=1)
    decision = World().evaluate(measurement, value("error-rate", 0.0))
    assert decision.status.metric_results[0].value == "1e-07"


def test_no_data_is_inconclusive_with_healthy_unknown_no_data() -> None:
    world = World()
    world.evaluate(*failing())
    decision = world.evaluate(value("p99-latency", 0.1), no_data("error-rate"))
    assert decision.status.last_verdict == Verdict.INCONCLUSIVE
    assert decision.status.failures == 1  # unchanged
    status, reason, message = condition(decision.status, ConditionType.HEALTHY)
    assert (status, reason) == ("Unknown", "NoData")
    assert "error-rate" in message
    result = decision.status.metric_results[1]
    assert (result.verdict, result.value) == (Verdict.INCONCLUSIVE, None)
    assert decision.history.outcome == Outcome.INCONCLUSIVE
    assert decision.pause is None


def test_a_nan_value_is_no_data() -> None:
    nan = Measurement("p99-latency", value=float("nan"), text="NaN", series=1)
    decision = World().evaluate(nan, value("error-rate", 0.0))
    assert decision.status.last_verdict == Verdict.INCONCLUSIVE
    assert decision.status.metric_results[0].value is None


def test_fail_wins_over_no_data() -> None:
    decision = World().evaluate(value("p99-latency", 9.0), no_data("error-rate"))
    assert decision.status.last_verdict == Verdict.FAIL


# --- counting ----------------------------------------------------------------------------


def test_fail_counts_pass_resets_inconclusive_and_errors_leave_unchanged() -> None:
    world = World(spec=spec_with(failureLimit=100))
    counts = []
    for measurements in [
        failing(),
        failing(),
        (no_data("p99-latency"), value("error-rate", 0.0)),
        outage(),
        (invalid("p99-latency"), value("error-rate", 0.0)),
        failing(),
        passing(),
        failing(),
    ]:
        counts.append(world.evaluate(*measurements).status.failures)
    assert counts == [1, 2, 2, 2, 2, 3, 0, 1]


def test_new_generation_resets_failures_before_counting() -> None:
    world = World()
    world.evaluate(*failing())
    world.evaluate(*failing())
    world.edit(spec_with(failureLimit=4))
    decision = world.evaluate(*failing())
    assert decision.status.failures == 1
    assert decision.status.observed_generation == 2
    assert all(c.observed_generation == 2 for c in decision.status.conditions)


def test_new_generation_resets_failures_even_when_metrics_are_unavailable() -> None:
    world = World()
    world.evaluate(*failing())
    world.evaluate(*failing())
    world.edit(spec_with(interval="1m"))
    decision = world.evaluate(*outage())
    assert decision.status.failures == 0
    assert decision.status.observed_generation == 2


# --- pausing -----------------------------------------------------------------------------


def test_pauses_after_exactly_failure_limit_consecutive_failures() -> None:
    world = World()
    assert world.evaluate(*failing()).pause is None
    assert world.evaluate(*failing()).pause is None
    decision = world.evaluate(*failing())
    pause = decision.pause
    assert pause is not None
    assert (pause.namespace, pause.name) == ("shop", "checkout")
    assert pause.paused_by == (KEY,)
    assert pause.paused_at == NOW + timedelta(seconds=60)
    annotations = pause.annotations()
    assert annotations[Annotation.PAUSED_BY] == KEY
    assert annotations[Annotation.PAUSED_AT] == "2026-11-29T10:01:00Z"
    assert "p99-latency" in annotations[Annotation.PAUSE_REASON]
    assert "3 consecutive failed evaluations" in annotations[Annotation.PAUSE_REASON]
    deployment = {"metadata": {"resourceVersion": "7"}}
    # The record also says the Deployment was running before: the last release unpauses it.
    recorded = {**annotations, Annotation.PAUSED_BEFORE.value: "false"}
    assert pause_patch(pause, deployment) == {
        "metadata": {"annotations": recorded, "resourceVersion": "7"},
        "spec": {"paused": True},
    }
    assert decision.events[0].type == EventType.WARNING
    assert reasons(decision) == [EventReason.ROLLOUT_PAUSED]
    assert decision.status.paused_at == NOW + timedelta(seconds=60)
    status, reason, message = condition(decision.status, ConditionType.ROLLOUT_PAUSED)
    assert (status, reason) == ("True", "FailureLimitReached")
    assert "checkout" in message
    assert decision.history.paused is True
    assert decision.status.to_dict()["pausedAt"] == "2026-11-29T10:01:00Z"


def test_pausing_is_idempotent_while_the_target_stays_paused() -> None:
    world = World()
    for _ in range(3):
        paused = world.evaluate(*failing())
    assert paused.pause is not None
    for expected_failures in (4, 5):
        decision = world.evaluate(*failing())
        assert decision.pause is None
        assert decision.events == ()
        assert decision.status.failures == expected_failures
        assert decision.status.paused_at == paused.status.paused_at
        assert decision.status.condition(ConditionType.ROLLOUT_PAUSED) == (
            paused.status.condition(ConditionType.ROLLOUT_PAUSED)
        )
        assert decision.history.paused is False


def test_a_pass_in_between_resets_the_count() -> None:
    world = World()
    for measurements in [failing(), failing(), passing(), failing(), failing()]:
        assert world.evaluate(*measurements).pause is None
    assert world.evaluate(*failing()).pause is not None


def test_dry_run_never_pauses() -> None:
    world = World(spec=spec_with(dryRun=True))
    for _ in range(10):
        decision = world.evaluate(*failing())
        assert decision.pause is None
        assert EventReason.ROLLOUT_PAUSED not in reasons(decision)
    assert decision.status.failures == 10
    status, reason, message = condition(decision.status, ConditionType.ROLLOUT_PAUSED)
    assert (status, reason) == ("False", "NotPaused")
    assert "dryRun" in message
    assert decision.status.paused_at is None


def test_never_unpauses_when_metrics_recover() -> None:
    world = World()
    for _ in range(3):
        world.evaluate(*failing())
    for _ in range(3):
        decision = world.evaluate(*passing())
        assert decision.pause is None
        assert decision.status.failures == 0
        assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")
    assert world.target.paused


def test_target_paused_by_another_analysis_still_records_this_one() -> None:
    world = World(target=TargetState(exists=True, paused=True, paused_by=("shop/other",)))
    for _ in range(2):
        world.evaluate(*failing())
    decision = world.evaluate(*failing())
    assert decision.pause is not None
    assert decision.pause.paused_by == ("shop/other", KEY)
    assert reasons(decision) == [EventReason.ROLLOUT_PAUSED]
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")


def test_target_paused_by_a_person_gets_this_analysis_recorded() -> None:
    world = World(target=TargetState(exists=True, paused=True))
    for _ in range(3):
        decision = world.evaluate(*failing())
    assert decision.pause is not None
    assert decision.pause.paused_by == (KEY,)


def test_status_lost_after_the_pause_landed_needs_no_second_patch() -> None:
    # Two failures counted (a status the operator wrote: a count alone, without the verdict
    # and the evaluation it follows, is discarded); the reconciler paused the target, then its
    # status write failed for good.
    world = World()
    for _ in range(2):
        world.evaluate(*failing())
    world.target = TargetState(exists=True, paused=True, paused_by=(KEY,))
    now = world.now
    decision = world.evaluate(*failing())
    assert decision.pause is None
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")
    assert decision.status.paused_at == now
    assert reasons(decision) == [EventReason.ROLLOUT_PAUSED]


def test_paused_by_is_not_duplicated_when_pausing_again_after_a_resume() -> None:
    world = World()
    for _ in range(3):
        world.evaluate(*failing())
    world.kubectl_resume()
    world.evaluate(*failing())  # sees the resume
    world.evaluate(*failing())
    decision = world.evaluate(*failing())
    assert decision.pause is not None
    assert decision.pause.paused_by == (KEY,)
    assert parse_paused_by(decision.pause.annotations()[Annotation.PAUSED_BY]) == (KEY,)


def test_failure_limit_one_pauses_on_the_first_failure() -> None:
    decision = World(spec=spec_with(failureLimit=1)).evaluate(*failing())
    assert decision.pause is not None


# --- resume -------------------------------------------------------------------------------


def paused_world(**kwargs: object) -> World:
    world = World(**kwargs)  # type: ignore[arg-type]
    for _ in range(3):
        world.evaluate(*failing())
    assert world.target.paused
    return world


def test_kubectl_resume_is_seen_and_counting_starts_again() -> None:
    world = paused_world()
    world.kubectl_resume()
    decision = world.evaluate(*failing())
    status, reason, _ = condition(decision.status, ConditionType.ROLLOUT_PAUSED)
    assert (status, reason) == ("False", "ResumedByUser")
    assert decision.status.failures == 1  # reset, then this Fail counts
    assert decision.status.paused_at is None
    assert decision.status.to_dict()["pausedAt"] is None
    assert reasons(decision) == [EventReason.ROLLOUT_RESUMED]
    assert decision.events[0].type == EventType.NORMAL
    assert decision.pause is None


def test_resumed_by_user_stays_until_the_next_pause_and_pauses_again_later() -> None:
    world = paused_world()
    world.kubectl_resume()
    world.evaluate(*passing())
    decision = world.evaluate(*passing())
    assert decision.events == ()
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "ResumedByUser")
    world.evaluate(*failing())
    world.evaluate(*failing())
    decision = world.evaluate(*failing())
    assert decision.pause is not None
    assert reasons(decision) == [EventReason.ROLLOUT_PAUSED]
    assert decision.status.paused_at == decision.pause.paused_at


def test_the_attempt_that_sees_a_resume_never_pauses_even_with_limit_one() -> None:
    world = paused_world(spec=spec_with(failureLimit=1))
    world.kubectl_resume()
    decision = world.evaluate(*failing())
    assert decision.pause is None
    assert decision.status.failures == 1
    assert world.evaluate(*failing()).pause is not None


def test_resume_is_seen_during_a_prometheus_outage() -> None:
    world = paused_world()
    world.kubectl_resume()
    decision = world.evaluate(*outage())
    assert decision.status.failures == 0
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("False", "ResumedByUser")
    assert EventReason.ROLLOUT_RESUMED in reasons(decision)


def test_missing_target_is_not_a_resume() -> None:
    world = paused_world()
    world.target = TargetState(exists=False)
    decision = world.evaluate(*failing())
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")
    assert decision.status.failures == 4
    assert EventReason.ROLLOUT_RESUMED not in reasons(decision)


def test_resume_from_ui_resets_failures_and_sets_resumed_by_user() -> None:
    world = paused_world()
    done = resume(world.status, now=world.now, actor="alice", via="the REST API")
    status, reason, message = condition(done.status, ConditionType.ROLLOUT_PAUSED)
    assert (status, reason) == ("False", "ResumedByUser")
    assert "alice" in message
    assert "REST API" in message
    assert done.status.failures == 0
    assert done.status.paused_at is None
    assert [(e.type, e.reason) for e in done.events] == [
        (EventType.NORMAL, EventReason.ROLLOUT_RESUMED)
    ]
    paused_condition = done.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused_condition is not None
    assert paused_condition.last_transition_time == world.now
    # The other conditions are untouched.
    assert done.status.condition(ConditionType.HEALTHY) == world.status.condition(
        ConditionType.HEALTHY
    )
    # The UI unpaused the target; the next reconcile sees nothing new.
    world.status = done.status
    world.kubectl_resume()
    decision = world.evaluate(*failing())
    assert decision.events == ()
    assert decision.status.failures == 1


def test_resume_from_ui_when_not_paused_emits_no_event() -> None:
    world = World()
    world.evaluate(*failing())
    done = resume(world.status, now=world.now)
    assert done.events == ()
    assert done.status.failures == 0
    before = world.status.condition(ConditionType.ROLLOUT_PAUSED)
    after = done.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert before is not None and after is not None
    assert after.last_transition_time == before.last_transition_time


# --- Ready, events ------------------------------------------------------------------------


def test_unavailable_keeps_verdict_failures_and_healthy_and_backs_off() -> None:
    world = World()
    before = world.evaluate(*failing()).status
    decision = world.evaluate(*outage())
    status = decision.status
    assert condition(status, ConditionType.READY)[:2] == ("False", "MetricsUnavailable")
    assert "HTTP 502" in condition(status, ConditionType.READY)[2]
    assert status.failures == 1
    assert status.last_verdict == before.last_verdict
    assert status.metric_results == before.metric_results
    assert status.last_evaluation_time == before.last_evaluation_time
    assert status.condition(ConditionType.HEALTHY) == before.condition(ConditionType.HEALTHY)
    assert decision.transient
    assert decision.pause is None
    assert reasons(decision) == [EventReason.METRICS_UNAVAILABLE]
    assert decision.events[0].type == EventType.WARNING
    assert (decision.history.outcome, decision.history.error_reason) == (
        Outcome.ERROR,
        Reason.METRICS_UNAVAILABLE,
    )
    assert "HTTP 502" in decision.history.error_message
    again = world.evaluate(*outage())
    assert again.events == ()
    ready_before = decision.status.condition(ConditionType.READY)
    ready_again = again.status.condition(ConditionType.READY)
    assert ready_before is not None and ready_again is not None
    assert ready_again.last_transition_time == ready_before.last_transition_time


def test_recovery_emits_metrics_recovered_once() -> None:
    world = World()
    world.evaluate(*passing())
    world.evaluate(*outage())
    decision = world.evaluate(*passing())
    assert reasons(decision) == [EventReason.METRICS_RECOVERED]
    assert decision.events[0].type == EventType.NORMAL
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    ready = decision.status.condition(ConditionType.READY)
    assert ready is not None and ready.last_transition_time == world.now - timedelta(seconds=30)
    assert world.evaluate(*passing()).events == ()


def test_one_unavailable_metric_makes_the_whole_attempt_transient() -> None:
    world = World()
    decision = world.evaluate(value("p99-latency", 9.0), unavailable("error-rate"))
    assert decision.status.failures == 0
    assert decision.status.last_verdict is None
    assert decision.transient
    assert [r.name for r in decision.history.metric_results] == ["p99-latency"]


def test_first_attempt_unavailable_gives_healthy_not_evaluated() -> None:
    decision = World().evaluate(*outage())
    assert condition(decision.status, ConditionType.HEALTHY)[:2] == ("Unknown", "NotEvaluated")
    assert condition(decision.status, ConditionType.ROLLOUT_PAUSED)[:2] == ("False", "NotPaused")
    assert decision.status.last_verdict is None
    assert decision.status.last_evaluation_time is None
    assert reasons(decision) == [EventReason.METRICS_UNAVAILABLE]


def test_invalid_query_is_reported_and_requeued_at_the_interval() -> None:
    world = World()
    world.evaluate(*failing())
    decision = world.evaluate(invalid("p99-latency"), value("error-rate", 0.0))
    status, reason, message = condition(decision.status, ConditionType.READY)
    assert (status, reason) == ("False", "InvalidQuery")
    assert "p99-latency" in message and "parse error" in message
    assert condition(decision.status, ConditionType.HEALTHY)[:2] == ("Unknown", "NotEvaluated")
    assert decision.status.failures == 1
    assert decision.status.last_verdict == Verdict.FAIL  # from the last evaluation with data
    assert not decision.transient
    assert reasons(decision) == [EventReason.INVALID_QUERY]
    assert decision.events[0].type == EventType.WARNING
    assert (decision.history.outcome, decision.history.error_reason) == (
        Outcome.ERROR,
        Reason.INVALID_QUERY,
    )
    assert world.evaluate(invalid("p99-latency"), value("error-rate", 0.0)).events == ()


def test_invalid_query_fixed_by_editing_the_spec() -> None:
    world = World()
    world.evaluate(invalid("p99-latency"), value("error-rate", 0.0))
    world.edit(spec_with(failureLimit=5))
    decision = world.evaluate(*passing())
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    assert decision.status.observed_generation == 2
    assert decision.events == ()


def test_a_spec_edit_that_leaves_the_query_broken_warns_again() -> None:
    world = World()
    world.evaluate(invalid("p99-latency"), value("error-rate", 0.0))
    world.edit(spec_with(failureLimit=5))
    decision = world.evaluate(invalid("p99-latency"), value("error-rate", 0.0))
    assert reasons(decision) == [EventReason.INVALID_QUERY]


def test_unavailable_takes_precedence_over_invalid_query() -> None:
    decision = World().evaluate(invalid("p99-latency"), unavailable("error-rate"))
    assert condition(decision.status, ConditionType.READY)[1] == "MetricsUnavailable"
    assert decision.transient


def test_missing_target_is_reported_but_metrics_are_judged_and_counted() -> None:
    world = World(target=TargetState(exists=False))
    decisions = [world.evaluate(*failing()) for _ in range(4)]
    status, reason, message = condition(world.status, ConditionType.READY)
    assert (status, reason) == ("False", "TargetNotFound")
    assert "checkout" in message and "shop" in message
    assert world.status.failures == 4
    assert world.status.last_verdict == Verdict.FAIL
    assert all(d.pause is None for d in decisions)
    assert all(not d.transient for d in decisions)
    assert [reasons(d) for d in decisions] == [[EventReason.TARGET_NOT_FOUND], [], [], []]
    assert decisions[0].events[0].type == EventType.WARNING
    assert decisions[-1].history.outcome == Outcome.FAIL


def test_target_recreated_recovers_and_pauses_on_the_next_failure() -> None:
    world = World(target=TargetState(exists=False))
    for _ in range(3):
        world.evaluate(*failing())
    world.target = TargetState(exists=True)
    decision = world.evaluate(*failing())
    assert world.cond(ConditionType.READY) == ("True", "Evaluating")
    assert decision.pause is not None


def test_target_recreated_while_metrics_pass_does_not_pause() -> None:
    world = World(target=TargetState(exists=False))
    for _ in range(3):
        world.evaluate(*failing())
    world.target = TargetState(exists=True)
    decision = world.evaluate(*passing())
    assert decision.pause is None
    assert decision.status.failures == 0


def test_outage_with_a_missing_target_names_both() -> None:
    decision = World(target=TargetState(exists=False)).evaluate(*outage())
    _, reason, message = condition(decision.status, ConditionType.READY)
    assert reason == "MetricsUnavailable"
    assert "not found" in message


def test_invalid_spec_reports_field_paths_and_measures_nothing() -> None:
    world = World()
    world.evaluate(*failing())
    world.evaluate(*failing())
    try:
        parse_spec({**RAW_SPEC, "interval": "1s"})
    except InvalidSpecError as exc:
        world.edit(exc)
    decision = world.evaluate()
    status, reason, message = condition(decision.status, ConditionType.READY)
    assert (status, reason) == ("False", "InvalidSpec")
    assert "spec.interval" in message
    assert condition(decision.status, ConditionType.HEALTHY)[:2] == ("Unknown", "NotEvaluated")
    assert decision.status.failures == 0
    assert decision.status.observed_generation == 2
    assert decision.pause is None
    assert decision.events == ()
    assert not decision.transient
    assert decision.interval_seconds == 30.0
    assert (decision.history.outcome, decision.history.error_reason) == (
        Outcome.ERROR,
        Reason.INVALID_SPEC,
    )


def test_invalid_spec_keeps_a_pause_in_place() -> None:
    world = paused_world()
    world.edit(InvalidSpecError([]))
    world.evaluate()
    assert world.cond(ConditionType.ROLLOUT_PAUSED) == ("True", "FailureLimitReached")


def test_messages_never_echo_queries() -> None:
    world = World(target=TargetState(exists=False))
    decisions = [world.evaluate(*m) for m in (failing(), outage(), passing())]
    world.target = TargetState(exists=True)
    decisions += [world.evaluate(*failing()) for _ in range(3)]
    texts = [c.message for d in decisions for c in d.status.conditions]
    texts += [e.message for d in decisions for e in d.events]
    texts += [d.pause.reason for d in decisions if d.pause]
    assert texts
    assert not any(LATENCY_QUERY in text or "errors_total" in text for text in texts)


def test_decide_is_deterministic_for_reapplying_after_a_conflict() -> None:
    world = paused_world()
    observation = world.observe(failing())
    assert decide(observation) == decide(observation)


def test_measurements_must_match_the_spec_metrics() -> None:
    world = World()
    with pytest.raises(ValueError, match="one measurement per spec metric"):
        decide(world.observe((value("p99-latency", 0.1),)))
    with pytest.raises(ValueError, match="one measurement per spec metric"):
        decide(world.observe((*passing(), value("extra", 1.0))))


def test_a_naive_clock_is_refused() -> None:
    world = World(now=datetime(2026, 11, 29, 10, 0, 0))
    with pytest.raises(ValueError, match="naive"):
        world.evaluate(*passing())


def test_subsecond_clock_is_truncated_to_status_precision() -> None:
    world = World(now=NOW + timedelta(microseconds=700_000))
    decision = world.evaluate(*passing())
    assert decision.status.last_evaluation_time == NOW


def test_target_state_from_a_deployment_object() -> None:
    record = {Annotation.PAUSED_BY.value: "shop/a,shop/b", Annotation.PAUSED_BEFORE.value: "false"}
    deployment = {"metadata": {"annotations": record}, "spec": {"paused": True}}
    state = TargetState.from_deployment(deployment)
    assert (state.exists, state.paused, state.paused_by) == (True, True, ("shop/a", "shop/b"))
    # Read strictly (docs/status.md#when-a-pause-record-is-not-trusted): blanks, spaces and a
    # repeated entry are not what a pause writes, so nobody holds the target by that record.
    garbled = {
        "metadata": {
            "annotations": {**record, Annotation.PAUSED_BY.value: "shop/a, shop/b,,shop/a"}
        },
        "spec": {"paused": True},
    }
    state = TargetState.from_deployment(garbled)
    assert (state.paused, state.paused_by) == (True, ())
    assert state.untrusted == "paused-by is not a list of distinct namespace/name entries"
    assert state.record.named == ("shop/a",)
    assert TargetState.from_deployment({"spec": {}}) == TargetState(True, False, ())
    assert TargetState.from_deployment(None) == TargetState(False)


def test_status_of_a_decision_round_trips_through_the_resource() -> None:
    world = paused_world()
    raw = world.status.to_dict()
    assert AnalysisStatus.from_dict(raw) == world.status
    assert isinstance(raw["failures"], int)
    assert ConditionStatus.TRUE == "True"
