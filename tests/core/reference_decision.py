"""A frozen copy of the decision (then sentinel_core/decision.py) before relative thresholds.

Copied at commit 5cd7e19, before maxIncrease, baseline and minSamples (docs/resource.md).

The oracle of tests/core/test_decision_window.py: on specs without failureWindow, maxIncrease
and minSamples, today's ``decide`` must answer exactly as this one did. Never edit it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from sentinel_core.conditions import (
    EVENT_TYPES,
    ConditionStatus,
    ConditionType,
    ErrorReason,
    EventReason,
    EventType,
    Outcome,
    Reason,
    Verdict,
)
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.spec import (
    DEFAULT_INTERVAL_SECONDS,
    AnalysisSpec,
    InvalidSpecError,
    MetricSpec,
)
from sentinel_core.status import AnalysisStatus, Condition, MetricResult, transition
from sentinel_core.values import format_value, utc_seconds
from sentinel_core.workload_kinds import PauseTarget, TargetState

# Annotation values and condition messages stay readable; the full detail is in the history.
_MAX_MESSAGE = 1024


@dataclass(frozen=True)
class Observation:
    """Everything ``decide`` may look at, gathered by the reconciler for one attempt."""

    namespace: str
    name: str
    # ``metadata.generation`` of the analysis as read.
    generation: int
    # The parsed spec, or why it could not be parsed.
    spec: AnalysisSpec | InvalidSpecError
    previous: AnalysisStatus
    target: TargetState
    # One per spec metric; empty when the spec is invalid.
    measurements: tuple[Measurement, ...]
    now: datetime

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Event(NamedTuple):
    """An event to record on the RolloutAnalysis."""

    type: EventType
    reason: EventReason
    message: str


@dataclass(frozen=True)
class HistoryEntry:
    """What the history row of this attempt records (the status gives failures after it)."""

    outcome: Outcome
    # Why the attempt is an Error: MetricsUnavailable, InvalidQuery or InvalidSpec from the
    # decision, KubernetesUnavailable or KubernetesForbidden from ``interrupted``.
    error_reason: Reason | ErrorReason | None = None
    error_message: str = ""
    # The metrics that got an answer, judged; empty when nothing did.
    metric_results: tuple[MetricResult, ...] = ()
    paused: bool = False


@dataclass(frozen=True)
class Decision:
    status: AnalysisStatus
    pause: PauseTarget | None
    # Only on transitions; at most one of each reason.
    events: tuple[Event, ...]
    history: HistoryEntry
    # Prometheus could not be asked: retry with backoff instead of requeueing at the interval.
    transient: bool
    interval_seconds: float


@dataclass(frozen=True)
class Resumption:
    """The status after a person resumed the target from the UI or API, and the event."""

    status: AnalysisStatus
    events: tuple[Event, ...]


def decide(obs: Observation) -> Decision:
    """Return the new status and the actions for one reconcile attempt (docs/operator.md)."""
    now = utc_seconds(obs.now)
    prev = obs.previous
    seen = prev.observed_generation
    spec_changed = seen is not None and seen != obs.generation
    # A spec edit starts the count afresh before anything else is counted.
    failures = 0 if spec_changed else prev.failures
    conds = _Conditions(prev, now, obs.generation)
    if isinstance(obs.spec, InvalidSpecError):
        return _decide_invalid_spec(obs.spec, conds, failures)
    spec = obs.spec
    pairs = _pair(spec, obs.measurements)
    unavailable = [m for _, m in pairs if m.error == MeasurementError.UNAVAILABLE]
    rejected = [m for _, m in pairs if m.error == MeasurementError.INVALID_QUERY]
    judged = tuple(_judge(metric, m) for metric, m in pairs if m.error is None)
    events: list[Event] = []

    # A person resumed the target (kubectl rollout resume): acknowledge it, count afresh.
    paused = prev.condition(ConditionType.ROLLOUT_PAUSED)
    paused_at = prev.paused_at
    target = obs.target
    resumed = prev.is_true(ConditionType.ROLLOUT_PAUSED) and target.exists and not target.paused
    if resumed:
        failures, paused_at = 0, None
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            _FALSE,
            Reason.RESUMED_BY_USER,
            f"{_target(spec)} was resumed by a person; the failure count starts again",
        )
        events.append(_event(EventReason.ROLLOUT_RESUMED, paused.message))

    verdict = None if unavailable or rejected else _verdict(judged)
    if verdict == Verdict.FAIL:
        failures += 1
    elif verdict == Verdict.PASS:
        failures = 0

    ready = _ready(obs, spec, conds, unavailable, rejected)
    events.extend(_ready_events(prev.condition(ConditionType.READY), ready, spec_changed))
    healthy = _healthy(prev, conds, verdict, judged, unavailable, rejected)

    # Pause only right after an evaluation that got answers, never in the attempt that saw a
    # resume (the person gets one interval before the next failure may pause again).
    pause: PauseTarget | None = None
    ours = obs.key in target.paused_by
    limit_reached = verdict is not None and failures >= spec.failure_limit
    if limit_reached and not spec.dry_run and target.exists and not resumed:
        already = target.paused and ours
        if not (already and prev.is_true(ConditionType.ROLLOUT_PAUSED)):
            detail = (
                f"{failures} consecutive failed evaluations reached failureLimit "
                f"{spec.failure_limit}: {healthy.message}"
            )
            if not already:
                pause = PauseTarget(
                    namespace=obs.namespace,
                    name=spec.target.name,
                    paused_by=target.paused_by if ours else (*target.paused_by, obs.key),
                    paused_at=now,
                    reason=_clip(f"{obs.key}: {detail}"),
                )
            paused_at = now
            paused = conds.set(
                ConditionType.ROLLOUT_PAUSED,
                _TRUE,
                Reason.FAILURE_LIMIT_REACHED,
                f"paused {_target(spec)}: {detail}",
            )
            events.append(_event(EventReason.ROLLOUT_PAUSED, paused.message))
    elif paused is None or (paused.status != _TRUE and paused.reason != Reason.RESUMED_BY_USER):
        # ResumedByUser stays until the next pause, so the resume remains visible.
        note = " (dryRun: never pauses)" if spec.dry_run else ""
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            _FALSE,
            Reason.NOT_PAUSED,
            f"{failures} of {spec.failure_limit} consecutive failed evaluations{note}",
        )

    status = replace(prev, observed_generation=obs.generation, failures=failures)
    status = replace(status, paused_at=paused_at).with_conditions(ready, healthy, paused)
    if verdict is not None:
        status = replace(
            status, last_verdict=verdict, metric_results=judged, last_evaluation_time=now
        )
        history = HistoryEntry(Outcome(verdict.value), None, "", judged, pause is not None)
    elif unavailable:
        message = _errors(unavailable)
        history = HistoryEntry(Outcome.ERROR, Reason.METRICS_UNAVAILABLE, message, judged)
    else:
        history = HistoryEntry(Outcome.ERROR, Reason.INVALID_QUERY, _errors(rejected), judged)
    return Decision(
        status=status,
        pause=pause,
        events=tuple(events),
        history=history,
        transient=bool(unavailable),
        interval_seconds=spec.interval_seconds,
    )


def resume(
    previous: AnalysisStatus, *, now: datetime, actor: str | None = None, via: str = "the UI"
) -> Resumption:
    """Return the status after a person resumed the target from the UI or API.

    The caller unpauses the Deployment itself; this resets ``failures``, clears ``pausedAt`` and
    sets ``RolloutPaused=False/ResumedByUser``, with a ``RolloutResumed`` event when this analysis
    had paused the target. ``via`` names the channel for the message ("the UI", "the REST API").
    """
    conds = _Conditions(previous, utc_seconds(now), previous.observed_generation)
    who = f"{actor} through {via}" if actor else f"a person through {via}"
    paused = conds.set(
        ConditionType.ROLLOUT_PAUSED,
        _FALSE,
        Reason.RESUMED_BY_USER,
        f"resumed by {who}; the failure count starts again",
    )
    status = replace(previous, failures=0, paused_at=None).with_conditions(paused)
    events: tuple[Event, ...] = ()
    if previous.is_true(ConditionType.ROLLOUT_PAUSED):
        events = (_event(EventReason.ROLLOUT_RESUMED, paused.message),)
    return Resumption(status=status, events=events)


def interrupted(
    spec: AnalysisSpec | None,
    measurements: tuple[Measurement, ...],
    *,
    reason: ErrorReason,
    message: str,
) -> HistoryEntry:
    """Return the history entry of an attempt the Kubernetes API cut short.

    Metrics measured before the failure are judged as ``decide`` judges them and kept: the
    values are real, only the act failed. Nothing is counted: the status was not written.
    """
    by_name = {m.metric: m for m in measurements}
    judged = tuple(
        _judge(metric, by_name[metric.name])
        for metric in (spec.metrics if spec is not None else ())
        if metric.name in by_name and by_name[metric.name].error is None
    )
    return HistoryEntry(
        outcome=Outcome.ERROR, error_reason=reason, error_message=message, metric_results=judged
    )


_TRUE, _FALSE, _UNKNOWN = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


@dataclass(frozen=True)
class _Conditions:
    """Sets conditions relative to the previous status, keeping metav1 transition semantics."""

    previous: AnalysisStatus
    now: datetime
    generation: int | None

    def set(
        self, type_: ConditionType, status: ConditionStatus, reason: Reason, message: str
    ) -> Condition:
        return transition(
            self.previous.condition(type_),
            type=type_,
            status=status,
            reason=reason,
            message=_clip(message),
            now=self.now,
            generation=self.generation,
        )


def _ready(
    obs: Observation,
    spec: AnalysisSpec,
    conds: _Conditions,
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # The first problem that stops the analysis from working fully: no answers at all, then a
    # rejected query, then a missing target (whose metrics are still evaluated).
    missing = f"{_target(spec)} not found in namespace {obs.namespace}"
    ready = ConditionType.READY
    if unavailable:
        also = "" if obs.target.exists else f"; also {missing}"
        message = f"Prometheus did not answer: {_errors(unavailable)}{also}"
        return conds.set(ready, _FALSE, Reason.METRICS_UNAVAILABLE, message)
    if rejected:
        message = f"Prometheus rejected the query: {_errors(rejected)}"
        return conds.set(ready, _FALSE, Reason.INVALID_QUERY, message)
    if not obs.target.exists:
        message = f"{missing}; metrics are still evaluated, nothing is paused until it exists"
        return conds.set(ready, _FALSE, Reason.TARGET_NOT_FOUND, message)
    message = f"evaluating {_count(len(spec.metrics), 'metric')} every {spec.interval}"
    return conds.set(ready, _TRUE, Reason.EVALUATING, message)


def _healthy(
    prev: AnalysisStatus,
    conds: _Conditions,
    verdict: Verdict | None,
    judged: tuple[MetricResult, ...],
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # Judged from this evaluation; kept as it was through an outage; unknown for a bad query.
    healthy = ConditionType.HEALTHY
    if verdict == Verdict.FAIL:
        parts = [
            f"{r.name} is {r.value}, above maxValue {format_value(r.max_value or 0.0)}"
            + (f" ({r.message})" if r.message else "")
            for r in judged
            if r.verdict == Verdict.FAIL
        ]
        return conds.set(healthy, _FALSE, Reason.THRESHOLD_EXCEEDED, "; ".join(parts))
    if verdict == Verdict.INCONCLUSIVE:
        names = ", ".join(r.name for r in judged if r.verdict == Verdict.INCONCLUSIVE)
        message = f"no data for {names} (empty result or NaN)"
        return conds.set(healthy, _UNKNOWN, Reason.NO_DATA, message)
    if verdict == Verdict.PASS:
        message = f"{_count(len(judged), 'metric')} within maxValue"
        return conds.set(healthy, _TRUE, Reason.WITHIN_THRESHOLDS, message)
    before = prev.condition(healthy)
    if unavailable and before is not None:
        return before
    if unavailable:
        message = "no evaluation has got answers from Prometheus yet"
    else:
        names = ", ".join(m.metric for m in rejected)
        message = f"not evaluated: Prometheus rejected the query of {names}"
    return conds.set(healthy, _UNKNOWN, Reason.NOT_EVALUATED, message)


def _decide_invalid_spec(error: InvalidSpecError, conds: _Conditions, failures: int) -> Decision:
    prev = conds.previous
    message = "spec is invalid: " + "; ".join(str(e) for e in error.errors)
    not_evaluated = "not evaluated: the spec is invalid"
    updated = [
        conds.set(ConditionType.READY, _FALSE, Reason.INVALID_SPEC, message),
        conds.set(ConditionType.HEALTHY, _UNKNOWN, Reason.NOT_EVALUATED, not_evaluated),
    ]
    # The target named by an invalid spec cannot be trusted, so RolloutPaused stays as it was.
    if prev.condition(ConditionType.ROLLOUT_PAUSED) is None:
        updated.append(
            conds.set(ConditionType.ROLLOUT_PAUSED, _FALSE, Reason.NOT_PAUSED, not_evaluated)
        )
    status = replace(prev, observed_generation=conds.generation, failures=failures)
    return Decision(
        status=status.with_conditions(*updated),
        pause=None,
        events=(),
        history=HistoryEntry(Outcome.ERROR, Reason.INVALID_SPEC, _clip(message)),
        transient=False,
        interval_seconds=DEFAULT_INTERVAL_SECONDS,
    )


def _pair(
    spec: AnalysisSpec, measurements: tuple[Measurement, ...]
) -> list[tuple[MetricSpec, Measurement]]:
    by_name = {m.metric: m for m in measurements}
    names = [metric.name for metric in spec.metrics]
    if len(by_name) != len(measurements) or set(by_name) != set(names):
        raise ValueError(
            "decide() needs exactly one measurement per spec metric; got "
            f"{sorted(m.metric for m in measurements)} for metrics {names}."
        )
    return [(metric, by_name[metric.name]) for metric in spec.metrics]


def _judge(metric: MetricSpec, m: Measurement) -> MetricResult:
    series = f"worst of {m.series} series" if m.series > 1 else ""
    # NaN is no data (docs/operator.md); the client already maps it to None, this guards the
    # contract.
    if m.value is None or math.isnan(m.value):
        return MetricResult(
            name=metric.name,
            verdict=Verdict.INCONCLUSIVE,
            max_value=metric.max_value,
            message=m.message or "no data: empty result or NaN",
        )
    return MetricResult(
        name=metric.name,
        verdict=Verdict.FAIL if m.value > metric.max_value else Verdict.PASS,
        value=m.text if m.text is not None else format_value(m.value),
        max_value=metric.max_value,
        message=m.message or series,
    )


def _verdict(results: tuple[MetricResult, ...]) -> Verdict:
    verdicts = {r.verdict for r in results}
    if Verdict.FAIL in verdicts:
        return Verdict.FAIL
    if Verdict.INCONCLUSIVE in verdicts:
        return Verdict.INCONCLUSIVE
    return Verdict.PASS


def _ready_events(before: Condition | None, after: Condition, spec_changed: bool) -> list[Event]:
    was = before.reason if before is not None else None
    events: list[Event] = []
    if was == Reason.METRICS_UNAVAILABLE and after.reason != Reason.METRICS_UNAVAILABLE:
        events.append(_event(EventReason.METRICS_RECOVERED, "Prometheus answers again"))
    # A spec edit that still leaves the query broken or the target missing is worth a new event.
    renewed = was != after.reason or (
        spec_changed and after.reason in (Reason.INVALID_QUERY, Reason.TARGET_NOT_FOUND)
    )
    if renewed and after.reason in (
        Reason.METRICS_UNAVAILABLE,
        Reason.INVALID_QUERY,
        Reason.TARGET_NOT_FOUND,
    ):
        events.append(_event(EventReason(str(after.reason)), after.message))
    return events


def _event(reason: EventReason, message: str) -> Event:
    return Event(EVENT_TYPES[reason], reason, _clip(message))


def _errors(measurements: list[Measurement]) -> str:
    return "; ".join(f"{m.metric}: {m.message or m.error}" for m in measurements)


def _target(spec: AnalysisSpec) -> str:
    return f"{spec.target.kind} {spec.target.name}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
