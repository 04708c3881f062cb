"""The pure decision core: from what was observed, decide the new status and what to do.

``decide(Observation) -> Decision`` is the whole of docs/operator.md's judgement in one function. It
reads the spec, the previous status, the target Deployment's state and the fresh measurements,
and returns the new status, the actions (pause the target, events) and the requeue kind. It does
no I/O and reads no clock: the reconciler measures, calls ``decide``, carries the decision out
and requeues; the REST API calls ``resume`` when a person resumes from the UI or API.

Carry out ``Decision.pause`` before writing ``Decision.status``: if the pause fails the status is
not written and the next reconcile decides again from fresh state, whereas a status saying
``RolloutPaused=True`` over a target that was never paused would read as a person's resume.
``decide`` is deterministic, so on a 409 the reconciler re-applies the same ``status`` to the
re-read resource without measuring or counting again (``_conflict.reapplied``: a person's resume
made in between keeps its fields).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from sentinel_core import notify
from sentinel_core.conditions import (
    EVENT_TYPES,
    ConditionType,
    ErrorReason,
    EventReason,
    EventType,
    Outcome,
    Reason,
    Verdict,
)
from sentinel_core.decision._judge import judge
from sentinel_core.decision._rules import (
    FALSE,
    TRUE,
    UNKNOWN,
    Conditions,
    clip,
    errors_text,
    healthy_condition,
    ready_condition,
    rejection,
    target_text,
)
from sentinel_core.decision._window import count, describe
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.measurement import PROVIDER_ERRORS, Measurement, MeasurementError
from sentinel_core.metric_kinds import Situation
from sentinel_core.pause_record import RecordState
from sentinel_core.spec import (
    DEFAULT_INTERVAL_SECONDS,
    AnalysisSpec,
    InvalidSpecError,
    MetricSpec,
)
from sentinel_core.status import AnalysisStatus, Condition, MetricResult, Rollout
from sentinel_core.status_check import check
from sentinel_core.templates import TemplateSpecError
from sentinel_core.values import format_time, utc_seconds
from sentinel_core.workload_kinds import PauseTarget, TargetState, is_new


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
    # The target's rollout as the reconciler detected it this attempt (rollout.next_rollout);
    # None keeps the previous status.rollout.
    rollout: Rollout | None = None
    # Channel names, outage threshold and previous attempt for the intents (docs/notifications.md).
    notify_context: notify.NotifyContext = notify.NO_CONTEXT
    # Targets other than spec.target that a trusted pause record says this analysis still
    # holds ("Deployment checkout"), read right after a spec edit of an analysis that claimed a
    # pause: the spec was pointed elsewhere with the pause left behind.
    left_behind: tuple[str, ...] = ()

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
    # Messages to send: one per transition (sentinel_core.notify).
    notifications: tuple[notify.Intent, ...] = ()


@dataclass(frozen=True)
class Resumption:
    """The status after a person resumed the target from the UI or API, and the event."""

    status: AnalysisStatus
    events: tuple[Event, ...]
    notifications: tuple[notify.Intent, ...] = ()


# Measurements decided like a rejected query: reported, nothing counted, no backoff.
_REFUSED = frozenset({MeasurementError.INVALID_QUERY, *PROVIDER_ERRORS})
# RolloutPaused reasons kept until the next pause.
_KEPT_REASONS = (Reason.RESUMED_BY_USER, Reason.UNTRUSTED_PAUSE_RECORD)
# Ready reasons worth a new event after a spec edit that leaves them in place.
_RENEWED = (
    Reason.INVALID_QUERY,
    Reason.TARGET_NOT_FOUND,
    Reason.UNKNOWN_PROVIDER,
    Reason.PROVIDER_NOT_ALLOWED,
)


def decide(obs: Observation) -> Decision:
    """Return the new status and the actions for one reconcile attempt (docs/operator.md)."""
    now = utc_seconds(obs.now)
    # What the operator cannot have written is discarded before anything reads it; the status
    # written below holds none of it, so the event comes once.
    checked = check(
        obs.previous,
        spec=obs.spec if isinstance(obs.spec, AnalysisSpec) else None,
        generation=obs.generation,
        now=now,
    )
    obs = replace(obs, previous=checked.status)
    prev = obs.previous
    discarded = _discarded_events(checked.discarded)
    seen = prev.observed_generation
    spec_changed = seen is not None and seen != obs.generation
    # A spec edit starts the count afresh before anything else is counted.
    failures = 0 if spec_changed else prev.failures
    conds = Conditions(prev, now, obs.generation)
    if isinstance(obs.spec, InvalidSpecError):
        decision = _decide_invalid_spec(obs.spec, conds, failures)
        return replace(decision, events=(*discarded, *decision.events))
    spec = obs.spec
    pairs = _pair(spec, obs.measurements)
    unavailable = [m for _, m in pairs if m.error == MeasurementError.UNAVAILABLE]
    rejected = [m for _, m in pairs if m.error in _REFUSED]
    rollout = obs.rollout if obs.rollout is not None else prev.rollout
    target = obs.target
    # A person resumed the target (kubectl rollout resume): acknowledge it, count afresh (the
    # sequential evidence too, from now on).
    claimed = prev.is_true(ConditionType.ROLLOUT_PAUSED)
    # Or the pause record this analysis relied on no longer agrees with the target: a person
    # changed it, or it was garbled or removed. The pause is no longer this analysis's; it says
    # so and counts afresh, as after a resume (docs/status.md#when-a-pause-record-is-not-trusted).
    distrust = "" if obs.left_behind else _distrust(obs, claimed)
    resumed = not obs.left_behind and not distrust and claimed and target.exists
    resumed = resumed and not target.paused
    let_go = resumed or bool(distrust)
    judgements = tuple(
        judge(
            metric,
            m,
            rollout,
            situation=_situation(obs, spec, rollout, let_go),
            kind=spec.target.kind,
        )
        for metric, m in pairs
        if m.error is None
    )
    judged = tuple(j.result for j in judgements)
    events: list[Event] = list(discarded)
    if is_new(prev.rollout, obs.rollout):
        events.append(_event(EventReason.ROLLOUT_DETECTED, _rollout_message(spec, rollout)))

    paused = prev.condition(ConditionType.ROLLOUT_PAUSED)
    paused_at = prev.paused_at
    if resumed:
        paused_at = None
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            FALSE,
            Reason.RESUMED_BY_USER,
            f"{target_text(spec)} was resumed by a person; the failure count starts again",
        )
        events.append(_event(EventReason.ROLLOUT_RESUMED, paused.message))
    elif obs.left_behind:
        # Never auto-resumed: the old target stays held, and the person hears where.
        paused_at = None
        held = ", ".join(obs.left_behind)
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            FALSE,
            Reason.NOT_PAUSED,
            f"the spec now names {target_text(spec)}, but this analysis still holds {held} "
            "paused: nothing was released; resume it by hand or point the analysis back",
        )
        events.append(_event(EventReason.PAUSE_LEFT_BEHIND, paused.message))
    elif distrust:
        paused_at = None
        was = paused.reason if paused is not None else None
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            FALSE,
            Reason.UNTRUSTED_PAUSE_RECORD,
            f"the pause record on {target_text(spec)} cannot be trusted ({distrust}): nothing "
            "of it will be restored, and the failure count starts again; check the target and "
            "set it back by hand if it should roll",
        )
        if was != Reason.UNTRUSTED_PAUSE_RECORD:
            events.append(_event(EventReason.UNTRUSTED_PAUSE_RECORD, paused.message))

    verdict = None if unavailable or rejected else _verdict(judged)
    # A spec edit or a resume starts the count (and the window) afresh.
    window = spec.failure_window
    counted = count(window, failures, prev.window, verdict, reset=spec_changed or let_go)
    failures = counted.failures

    ready = ready_condition(obs.namespace, obs.target.exists, spec, conds, unavailable, rejected)
    ready = notify.with_unknown_channels(ready, spec.notify, obs.notify_context)
    events.extend(_ready_events(prev.condition(ConditionType.READY), ready, spec_changed))
    healthy = healthy_condition(prev, conds, verdict, judgements, unavailable, rejected)

    # Pause only right after an evaluation whose own verdict is Fail, never in the attempt that
    # saw a resume (the person gets one interval before the next failure may pause again). A
    # count read back from the status alone never pauses: whoever may write the status could
    # have written it (docs/status.md#what-the-operator-trusts-in-its-status).
    pause: PauseTarget | None = None
    ours = obs.key in target.paused_by
    limit_reached = verdict == Verdict.FAIL and failures >= spec.failure_limit
    if limit_reached and not spec.dry_run and target.exists and not let_go:
        already = target.paused and ours
        if not (already and prev.is_true(ConditionType.ROLLOUT_PAUSED)):
            how = (
                f"{failures} consecutive failed evaluations"
                if window is None
                else f"{failures} failed of the last {len(counted.window or ())} decisive "
                "evaluations"
            )
            detail = f"{how} reached failureLimit {spec.failure_limit}: {healthy.message}"
            if not already:
                pause = PauseTarget(
                    namespace=obs.namespace,
                    name=spec.target.name,
                    paused_by=target.paused_by if ours else (*target.paused_by, obs.key),
                    paused_at=now,
                    reason=clip(f"{obs.key}: {detail}"),
                    kind=spec.target.kind,
                )
            paused_at = now
            paused = conds.set(
                ConditionType.ROLLOUT_PAUSED,
                TRUE,
                Reason.FAILURE_LIMIT_REACHED,
                f"paused {target_text(spec)}: {detail}",
            )
            events.append(_event(EventReason.ROLLOUT_PAUSED, paused.message))
    elif not obs.left_behind and (
        paused is None or (paused.status != TRUE and paused.reason not in _KEPT_REASONS)
    ):
        # ResumedByUser and UntrustedPauseRecord stay until the next pause, so that what
        # happened remains visible.
        note = " (dryRun: never pauses)" if spec.dry_run else ""
        paused = conds.set(
            ConditionType.ROLLOUT_PAUSED,
            FALSE,
            Reason.NOT_PAUSED,
            describe(window, failures, spec.failure_limit) + note,
        )

    status = replace(prev, observed_generation=obs.generation, failures=failures)
    status = replace(status, window=counted.window, rollout=rollout, paused_at=paused_at)
    status = status.with_conditions(ready, healthy, paused)
    if verdict is not None:
        status = replace(
            status, last_verdict=verdict, metric_results=judged, last_evaluation_time=now
        )
        history = HistoryEntry(Outcome(verdict.value), None, "", judged, pause is not None)
    else:
        # The status keeps its metric results, so evidence read in steps stays where it was and
        # the next attempt counts these steps again: they were not counted here.
        uncounted = tuple(replace(result, counted=None) for result in judged)
        if unavailable:
            message = errors_text(unavailable)
            history = HistoryEntry(Outcome.ERROR, Reason.METRICS_UNAVAILABLE, message, uncounted)
        else:
            reason = rejection(rejected)[0]
            history = HistoryEntry(Outcome.ERROR, reason, errors_text(rejected), uncounted)
    return Decision(
        status=status,
        pause=pause,
        events=tuple(events),
        history=history,
        transient=bool(unavailable),
        interval_seconds=spec.interval_seconds,
        notifications=notify.intents(prev, status, now=now, context=obs.notify_context),
    )


def resume(
    previous: AnalysisStatus, *, now: datetime, actor: str | None = None, via: str = "the UI"
) -> Resumption:
    """Return the status after a person resumed the target from the UI or API.

    The caller unpauses the Deployment itself; this resets ``failures``, clears ``pausedAt`` and
    sets ``RolloutPaused=False/ResumedByUser``, with a ``RolloutResumed`` event when this analysis
    had paused the target. ``via`` names the channel for the message ("the UI", "the REST API").
    """
    conds = Conditions(previous, utc_seconds(now), previous.observed_generation)
    who = f"{actor} through {via}" if actor else f"a person through {via}"
    paused = conds.set(
        ConditionType.ROLLOUT_PAUSED,
        FALSE,
        Reason.RESUMED_BY_USER,
        f"resumed by {who}; the failure count starts again",
    )
    # A resume clears the failure window too (docs/resource.md); without one there is none to clear.
    window = () if previous.window is not None else None
    status = replace(previous, failures=0, paused_at=None, window=window).with_conditions(paused)
    events: tuple[Event, ...] = ()
    if previous.is_true(ConditionType.ROLLOUT_PAUSED):
        events = (_event(EventReason.ROLLOUT_RESUMED, paused.message),)
    return Resumption(status, events, notify.resumed(previous, status))


def interrupted(
    spec: AnalysisSpec | None,
    measurements: tuple[Measurement, ...],
    *,
    reason: ErrorReason,
    message: str,
    rollout: Rollout | None = None,
) -> HistoryEntry:
    """Return the history entry of an attempt the Kubernetes API cut short.

    Metrics measured before the failure are judged as ``decide`` judges them and kept: the
    values are real, only the act failed. Nothing is counted: the status was not written.
    """
    by_name = {m.metric: m for m in measurements}
    kind = spec.target.kind if spec is not None else DEPLOYMENT
    judged = tuple(
        judge(metric, by_name[metric.name], rollout, kind=kind).result
        for metric in (spec.metrics if spec is not None else ())
        if metric.name in by_name and by_name[metric.name].error is None
    )
    return HistoryEntry(
        outcome=Outcome.ERROR, error_reason=reason, error_message=message, metric_results=judged
    )


def _decide_invalid_spec(error: InvalidSpecError, conds: Conditions, failures: int) -> Decision:
    prev = conds.previous
    message = "spec is invalid: " + "; ".join(str(e) for e in error.errors)
    not_evaluated = "not evaluated: the spec is invalid"
    reason = Reason.INVALID_SPEC
    if isinstance(error, TemplateSpecError):
        # Its templates could not be resolved (docs/templates.md#errors): their own reason.
        reason, message = error.reason, error.message
        not_evaluated = "not evaluated: the templates could not be resolved"
    updated = [
        conds.set(ConditionType.READY, FALSE, reason, message),
        conds.set(ConditionType.HEALTHY, UNKNOWN, Reason.NOT_EVALUATED, not_evaluated),
    ]
    # The target named by an invalid spec cannot be trusted, so RolloutPaused stays as it was.
    if prev.condition(ConditionType.ROLLOUT_PAUSED) is None:
        updated.append(
            conds.set(ConditionType.ROLLOUT_PAUSED, FALSE, Reason.NOT_PAUSED, not_evaluated)
        )
    status = replace(prev, observed_generation=conds.generation, failures=failures)
    return Decision(
        status=status.with_conditions(*updated),
        pause=None,
        events=(),
        history=HistoryEntry(Outcome.ERROR, reason, clip(message)),
        transient=False,
        interval_seconds=DEFAULT_INTERVAL_SECONDS,
    )


def _distrust(obs: Observation, claimed: bool) -> str:
    """Return why this analysis's pause record on the target is not to be trusted; "" if it is.

    Only an analysis that claims the pause, or that the record names, is concerned: a record
    that cannot be trusted, or (claimed) none at all on a target still held. Whoever else holds
    the target then, the record says nothing this analysis could rely on.
    """
    target = obs.target
    if not target.exists:
        return ""
    if target.untrusted and (claimed or obs.key in target.record.named):
        return target.untrusted
    removed = target.record.state == RecordState.NONE and obs.key not in target.paused_by
    if claimed and target.paused and removed:
        return "the pause record was removed from the target"
    return ""


def _situation(
    obs: Observation, spec: AnalysisSpec, rollout: Rollout | None, resumed: bool
) -> Situation:
    """Return the evaluation as the metric kinds see it (docs/architecture.md)."""
    return Situation(
        status=obs.previous,
        spec=spec,
        generation=obs.generation,
        rollout=rollout,
        now=obs.now,
        resumed_now=resumed,
        target_kind=spec.target.kind,
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
    renewed = was != after.reason or (spec_changed and after.reason in _RENEWED)
    if renewed and after.reason in (Reason.METRICS_UNAVAILABLE, *_RENEWED):
        events.append(_event(EventReason(str(after.reason)), after.message))
    return events


def _discarded_events(discarded: tuple[str, ...]) -> tuple[Event, ...]:
    if not discarded:
        return ()
    message = (
        "discarded from the status what the operator cannot have written, and recomputed it: "
        + "; ".join(discarded)
    )
    return (_event(EventReason.STATUS_DISCARDED, message),)


def _rollout_message(spec: AnalysisSpec, rollout: Rollout | None) -> str:
    assert rollout is not None and rollout.started_at is not None
    # A StatefulSet's or DaemonSet's key is the controller revision its new pods are labelled
    # with (docs/status.md#rollouts-statusrollout).
    what = "pod template" if spec.target.kind == DEPLOYMENT else "controller revision"
    return (
        f"new {what} {rollout.template_hash} on {target_text(spec)}, rollout started at "
        f"{format_time(rollout.started_at)}: beforeRollout baselines are taken from then"
    )


def _event(reason: EventReason, message: str) -> Event:
    return Event(EVENT_TYPES[reason], reason, clip(message))
