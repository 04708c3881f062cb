"""The stable vocabulary of a RolloutAnalysis's status: condition types, reasons, events,
verdicts and the annotations written on a paused Deployment.

These strings are an API (docs/status.md): scripts, alerts and dashboards match on them, so they
live in this one module and ``tests/operator/test_status_api.py`` pins the complete set. Messages
may change between versions; nothing in here may. The decision core, the status types, the REST API
and the admin import from here and never spell the strings themselves.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType


class ConditionType(StrEnum):
    """The three conditions every RolloutAnalysis status carries."""

    READY = "Ready"
    HEALTHY = "Healthy"
    ROLLOUT_PAUSED = "RolloutPaused"


class ConditionStatus(StrEnum):
    """``metav1.Condition.status``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Reason(StrEnum):
    """Every condition reason of docs/status.md's table."""

    # Ready
    EVALUATING = "Evaluating"
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    TARGET_NOT_FOUND = "TargetNotFound"
    INVALID_QUERY = "InvalidQuery"
    INVALID_SPEC = "InvalidSpec"
    # A metric names a provider the operator does not configure, or one its namespace may not
    # use (docs/operations.md#metric-providers).
    UNKNOWN_PROVIDER = "UnknownProvider"
    PROVIDER_NOT_ALLOWED = "ProviderNotAllowed"
    # The analysis's templates could not be resolved (docs/templates.md): a template it names
    # does not exist, an argument has no value, or the result is invalid.
    TEMPLATE_NOT_FOUND = "TemplateNotFound"
    MISSING_ARGUMENT = "MissingArgument"
    INVALID_TEMPLATE = "InvalidTemplate"
    # Healthy
    WITHIN_THRESHOLDS = "WithinThresholds"
    THRESHOLD_EXCEEDED = "ThresholdExceeded"
    NO_DATA = "NoData"
    # A minSamples guard under its minimum: too little traffic to judge (docs/resource.md).
    INSUFFICIENT_DATA = "InsufficientData"
    # maxIncrease with no baseline to compare with: none has data, or no rollout seen yet.
    NO_BASELINE = "NoBaseline"
    # compare with nothing to compare: no old pods, a side without series or samples
    # (docs/resource.md#new-pods-against-old-pods).
    NO_COMPARISON = "NoComparison"
    NOT_EVALUATED = "NotEvaluated"
    # RolloutPaused
    FAILURE_LIMIT_REACHED = "FailureLimitReached"
    NOT_PAUSED = "NotPaused"
    RESUMED_BY_USER = "ResumedByUser"
    # The pause record on the target disagrees with it (a person changed the target since, or
    # the record is half-deleted or garbled): nothing is restored
    # (docs/status.md#when-a-pause-record-is-not-trusted).
    UNTRUSTED_PAUSE_RECORD = "UntrustedPauseRecord"


# Which reasons each condition may carry with each status: docs/status.md's table, as data.
REASONS: MappingProxyType[ConditionType, MappingProxyType[ConditionStatus, frozenset[Reason]]] = (
    MappingProxyType(
        {
            ConditionType.READY: MappingProxyType(
                {
                    ConditionStatus.TRUE: frozenset({Reason.EVALUATING}),
                    ConditionStatus.FALSE: frozenset(
                        {
                            Reason.METRICS_UNAVAILABLE,
                            Reason.TARGET_NOT_FOUND,
                            Reason.INVALID_QUERY,
                            Reason.INVALID_SPEC,
                            Reason.UNKNOWN_PROVIDER,
                            Reason.PROVIDER_NOT_ALLOWED,
                            Reason.TEMPLATE_NOT_FOUND,
                            Reason.MISSING_ARGUMENT,
                            Reason.INVALID_TEMPLATE,
                        }
                    ),
                    ConditionStatus.UNKNOWN: frozenset(),
                }
            ),
            ConditionType.HEALTHY: MappingProxyType(
                {
                    ConditionStatus.TRUE: frozenset({Reason.WITHIN_THRESHOLDS}),
                    ConditionStatus.FALSE: frozenset({Reason.THRESHOLD_EXCEEDED}),
                    ConditionStatus.UNKNOWN: frozenset(
                        {
                            Reason.NO_DATA,
                            Reason.INSUFFICIENT_DATA,
                            Reason.NO_BASELINE,
                            Reason.NO_COMPARISON,
                            Reason.NOT_EVALUATED,
                        }
                    ),
                }
            ),
            ConditionType.ROLLOUT_PAUSED: MappingProxyType(
                {
                    ConditionStatus.TRUE: frozenset({Reason.FAILURE_LIMIT_REACHED}),
                    ConditionStatus.FALSE: frozenset(
                        {Reason.NOT_PAUSED, Reason.RESUMED_BY_USER, Reason.UNTRUSTED_PAUSE_RECORD}
                    ),
                    ConditionStatus.UNKNOWN: frozenset(),
                }
            ),
        }
    )
)


class ErrorReason(StrEnum):
    """Why an attempt the Kubernetes API cut short is an ``Error`` row in the history.

    History-only reasons, never a condition reason: the status was not written.
    """

    KUBERNETES_UNAVAILABLE = "KubernetesUnavailable"
    KUBERNETES_FORBIDDEN = "KubernetesForbidden"


class EventType(StrEnum):
    """``core/v1 Event.type``."""

    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(StrEnum):
    """Reasons of the events emitted on a RolloutAnalysis, on transitions only."""

    ROLLOUT_PAUSED = "RolloutPaused"
    ROLLOUT_RESUMED = "RolloutResumed"
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    METRICS_RECOVERED = "MetricsRecovered"
    TARGET_NOT_FOUND = "TargetNotFound"
    INVALID_QUERY = "InvalidQuery"
    UNKNOWN_PROVIDER = "UnknownProvider"
    PROVIDER_NOT_ALLOWED = "ProviderNotAllowed"
    # A new pod template seen on the target: the start of beforeRollout's baseline.
    ROLLOUT_DETECTED = "RolloutDetected"
    # The pause record on the target cannot be trusted: nothing of it will be restored.
    UNTRUSTED_PAUSE_RECORD = "UntrustedPauseRecord"
    # The spec was pointed at another target (kubectl) while this analysis held its old one:
    # that pause stays, and this names it (docs/status.md#pausing-each-kind).
    PAUSE_LEFT_BEHIND = "PauseLeftBehind"
    # Parts of the status read back that the operator cannot have written were discarded and
    # recomputed (docs/status.md#what-the-operator-trusts-in-its-status).
    STATUS_DISCARDED = "StatusDiscarded"
    # A pause recorded before paused-before existed, adopted once on upgrade
    # (docs/operator.md#upgrading).
    PAUSE_ADOPTED = "PauseAdopted"


EVENT_TYPES: MappingProxyType[EventReason, EventType] = MappingProxyType(
    {
        EventReason.ROLLOUT_PAUSED: EventType.WARNING,
        EventReason.ROLLOUT_RESUMED: EventType.NORMAL,
        EventReason.METRICS_UNAVAILABLE: EventType.WARNING,
        EventReason.METRICS_RECOVERED: EventType.NORMAL,
        EventReason.TARGET_NOT_FOUND: EventType.WARNING,
        EventReason.INVALID_QUERY: EventType.WARNING,
        EventReason.UNKNOWN_PROVIDER: EventType.WARNING,
        EventReason.PROVIDER_NOT_ALLOWED: EventType.WARNING,
        EventReason.ROLLOUT_DETECTED: EventType.NORMAL,
        EventReason.UNTRUSTED_PAUSE_RECORD: EventType.WARNING,
        EventReason.PAUSE_LEFT_BEHIND: EventType.WARNING,
        EventReason.STATUS_DISCARDED: EventType.WARNING,
        EventReason.PAUSE_ADOPTED: EventType.NORMAL,
    }
)


class Verdict(StrEnum):
    """The judgement of one evaluation that got data (``status.lastVerdict``)."""

    PASS = "Pass"
    FAIL = "Fail"
    INCONCLUSIVE = "Inconclusive"


class Outcome(StrEnum):
    """What one evaluation attempt produced, as recorded in the history."""

    PASS = "Pass"
    FAIL = "Fail"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"


class Annotation(StrEnum):
    """Annotations the operator writes on a target it pauses (docs/status.md#pausing-each-kind).

    Together they are the pause record, parsed strictly by ``sentinel_core.pause_record``.
    """

    # Comma list of ``namespace/name`` of every analysis that tripped, in the order they did.
    PAUSED_BY = "sentinel.example.com/paused-by"
    # "true" or "false": whether the target was already held (a Deployment paused, a
    # StatefulSet or DaemonSet on OnDelete) when the first holder paused it; the last holder's
    # release leaves it so.
    PAUSED_BEFORE = "sentinel.example.com/paused-before"
    # RFC 3339 time of the latest pause.
    PAUSED_AT = "sentinel.example.com/paused-at"
    # Human-readable reason of the latest pause.
    PAUSE_REASON = "sentinel.example.com/pause-reason"
    # A StatefulSet's pause (docs/status.md#pausing-each-kind): the partition the pause set, and
    # the one it had before, restored on release.
    PAUSED_PARTITION = "sentinel.example.com/paused-partition"
    PARTITION_BEFORE = "sentinel.example.com/partition-before"
    # A DaemonSet's pause: its updateStrategy before the switch to OnDelete (JSON), restored on
    # release.
    UPDATE_STRATEGY_BEFORE = "sentinel.example.com/update-strategy-before"
