"""Notification intents: which transitions of a decision deserve a message (docs/notifications.md).

``decision.decide`` and ``decision.resume`` call ``intents`` / ``resumed`` with the status before
and after, and put what they return in ``Decision.notifications`` / ``Resumption.notifications``.
Everything here is pure: the outage threshold, the configured channel names and the time of the
previous attempt come in through ``NotifyContext``, filled by the reconciler.

One intent per transition, never one per evaluation: every intent is derived from a condition
whose ``lastTransitionTime`` changed in this decision (``MetricsUnavailable`` from the one
attempt whose time first crosses the outage threshold). Its ``key`` is built from the event and
that ``lastTransitionTime`` (the adapter adds the analysis uid and the channel), so replaying
the same decision (a 409 on the status write, a restarted operator deciding from the same
previous status) yields the same key, and the delivery table's unique key makes it a no-op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from sentinel_core.conditions import ConditionStatus, ConditionType, Reason
from sentinel_core.status import AnalysisStatus, Condition

DEFAULT_OUTAGE_AFTER_SECONDS = 300.0
# docs/resource.md: at most 10 channel names in spec.notify.
MAX_CHANNELS = 10


class NotifyEvent(StrEnum):
    """What a message is about; also the names in a channel's ``events`` list."""

    PAUSED = "Paused"
    FAILING = "Failing"
    RECOVERED = "Recovered"
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    RESUMED = "Resumed"


# A channel without ``events`` gets these; Failing is opt-in (it fires on every first failure).
DEFAULT_EVENTS = frozenset(
    {
        NotifyEvent.PAUSED,
        NotifyEvent.RESUMED,
        NotifyEvent.RECOVERED,
        NotifyEvent.METRICS_UNAVAILABLE,
    }
)


@dataclass(frozen=True)
class NotifyContext:
    """What the intents depend on besides the two statuses."""

    # The configured channel names; None when notifications are not configured (no check).
    channels: frozenset[str] | None = None
    outage_after_seconds: float = DEFAULT_OUTAGE_AFTER_SECONDS
    # When the previous decided attempt started (the newest history row that wrote its status);
    # None if there was none. Says whether the outage threshold was crossed before this attempt,
    # and so whether MetricsUnavailable went out (Recovered answers only that).
    previous_attempt: datetime | None = None


NO_CONTEXT = NotifyContext()


@dataclass(frozen=True)
class Intent:
    """One message to send, to the analysis's channels and the default ones."""

    event: NotifyEvent
    # Deterministic: the event and the transition's time (``Paused@2026-12-02T10:00:30Z``).
    # The adapter prefixes the analysis uid and appends the channel name.
    key: str
    message: str
    # The transition's time (the condition's lastTransitionTime).
    at: datetime


def intents(
    previous: AnalysisStatus,
    status: AnalysisStatus,
    *,
    now: datetime,
    context: NotifyContext,
) -> tuple[Intent, ...]:
    """Return the intents of one decision that moved ``previous`` to ``status``."""
    found: list[Intent] = []
    paused = _changed(previous, status, ConditionType.ROLLOUT_PAUSED)
    if paused is not None and paused.status == ConditionStatus.TRUE:
        found.append(_intent(NotifyEvent.PAUSED, paused))
    if paused is not None and paused.reason == Reason.RESUMED_BY_USER and _was_paused(previous):
        # The operator only sees the target running again: kubectl or another client did it.
        who = "resumed outside Rollout Sentinel (kubectl rollout resume, a patch or another client)"
        found.append(
            _intent(NotifyEvent.RESUMED, replace(paused, message=f"{who}: {paused.message}"))
        )
    healthy = _changed(previous, status, ConditionType.HEALTHY)
    if healthy is not None and healthy.reason == Reason.THRESHOLD_EXCEEDED:
        found.append(_intent(NotifyEvent.FAILING, healthy))
    found.extend(_outage(previous, status, now, context))
    return tuple(found)


def resumed(previous: AnalysisStatus, status: AnalysisStatus) -> tuple[Intent, ...]:
    """Return the Resumed intent of a person's resume from the UI or API, if it was paused."""
    paused = _changed(previous, status, ConditionType.ROLLOUT_PAUSED)
    if paused is None or not _was_paused(previous):
        return ()
    return (_intent(NotifyEvent.RESUMED, paused),)


def unknown_channels(names: Sequence[str], context: NotifyContext) -> tuple[str, ...]:
    """Return the names in ``spec.notify`` that no configured channel has, in spec order."""
    if context.channels is None:
        return ()
    return tuple(n for n in names if n not in context.channels)


def with_unknown_channels(ready: Condition, names: Sequence[str], ctx: NotifyContext) -> Condition:
    """Return ``ready`` with its message naming unknown channels; status and time unchanged.

    An unknown name must not stop evaluation (docs/notifications.md), so it is a note, not a reason.
    """
    unknown = unknown_channels(names, ctx)
    if not unknown:
        return ready
    note = f"unknown notification channel{'s' if len(unknown) > 1 else ''} in spec.notify: "
    return replace(ready, message=f"{ready.message}; {note}{', '.join(unknown)}")


def _outage(
    previous: AnalysisStatus,
    status: AnalysisStatus,
    now: datetime,
    context: NotifyContext,
) -> list[Intent]:
    before = previous.condition(ConditionType.READY)
    after = status.condition(ConditionType.READY)
    if after is None:
        return []
    after_s = context.outage_after_seconds
    if after.reason == Reason.METRICS_UNAVAILABLE:
        began = after.last_transition_time
        crossed = (now - began).total_seconds() >= after_s
        earlier = context.previous_attempt
        # Only the first attempt past the threshold: the one before it was still under it.
        already = earlier is not None and (earlier - began).total_seconds() >= after_s
        if crossed and not already:
            return [_intent(NotifyEvent.METRICS_UNAVAILABLE, after)]
        return []
    if before is not None and before.reason == Reason.METRICS_UNAVAILABLE:
        # Recovered answers a MetricsUnavailable message: only after an outage that sent one,
        # i.e. whose last attempt (the previous one) was already past the threshold. An outage
        # that lasted the threshold between two attempts (a backoff) sent nothing: say nothing.
        lasted = (now - before.last_transition_time).total_seconds()
        earlier = context.previous_attempt
        announced = (
            earlier is not None
            and (earlier - before.last_transition_time).total_seconds() >= after_s
        )
        if announced:
            message = f"Prometheus answers again after {_duration(lasted)}; {after.message}"
            recovered = replace(after, message=message)
            return [_intent(NotifyEvent.RECOVERED, recovered)]
    return []


def _changed(
    previous: AnalysisStatus, status: AnalysisStatus, type_: ConditionType
) -> Condition | None:
    """Return the condition of ``status`` if it made a transition in this decision."""
    after = status.condition(type_)
    if after is None:
        return None
    before = previous.condition(type_)
    if before is not None and before.last_transition_time == after.last_transition_time:
        return None
    return after


def _was_paused(previous: AnalysisStatus) -> bool:
    return previous.is_true(ConditionType.ROLLOUT_PAUSED)


def _intent(event: NotifyEvent, cond: Condition) -> Intent:
    at = cond.last_transition_time
    return Intent(event, f"{event.value}@{at.strftime('%Y-%m-%dT%H:%M:%SZ')}", cond.message, at)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
