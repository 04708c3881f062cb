"""Typed status of a RolloutAnalysis (docs/status.md) and its conversion to and from the resource.

``AnalysisStatus.from_dict`` reads whatever is in ``.status`` of a resource, tolerating missing
or garbage fields (a hand-edited status, an older operator) so the decision core can always
start from something; ``to_dict`` produces exactly the CRD's status schema. The decision core
builds new statuses; the reconciler writes ``to_dict()`` through the status subresource; the
REST API and the admin render it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sentinel_core.conditions import ConditionStatus, ConditionType, Verdict
from sentinel_core.metric_kinds.compare import Comparison
from sentinel_core.metric_kinds.sequential import Counted, State
from sentinel_core.values import format_time, non_negative_integer, parse_time


@dataclass(frozen=True)
class Condition:
    """One ``metav1.Condition``."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: datetime
    observed_generation: int | None = None

    @classmethod
    def from_dict(cls, raw: object) -> Condition | None:
        """Return the condition in ``raw``, or None when it lacks a usable type, status or time."""
        if not isinstance(raw, Mapping):
            return None
        type_ = raw.get("type")
        try:
            status = ConditionStatus(raw.get("status"))
        except ValueError:
            return None
        moment = parse_time(raw.get("lastTransitionTime"))
        if not isinstance(type_, str) or not type_ or moment is None:
            return None
        reason = raw.get("reason")
        message = raw.get("message")
        return cls(
            type=_known(type_, ConditionType),
            status=status,
            reason=reason if isinstance(reason, str) else "",
            message=message if isinstance(message, str) else "",
            last_transition_time=moment,
            observed_generation=non_negative_integer(raw.get("observedGeneration")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": str(self.type),
            "status": str(self.status),
            "reason": str(self.reason),
            "message": self.message,
            "lastTransitionTime": format_time(self.last_transition_time),
        }
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        return out


def transition(
    previous: Condition | None,
    *,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: datetime,
    generation: int | None,
) -> Condition:
    """Return the condition set to ``status``/``reason``/``message``.

    ``lastTransitionTime`` is kept from ``previous`` when the status is unchanged and set to
    ``now`` only when the status changes (metav1 semantics).
    """
    changed = previous is None or previous.status != status
    return Condition(
        type=type,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=now if changed else previous.last_transition_time,
        observed_generation=generation,
    )


@dataclass(frozen=True)
class MetricResult:
    """The judgement of one metric in one evaluation that got answers."""

    name: str
    verdict: Verdict
    # Prometheus's own text of the (worst) sample; None when there was no data.
    value: str | None = None
    max_value: float | None = None
    message: str = ""
    # With maxIncrease: the baseline's value, Prometheus's own text; None without one.
    baseline: str | None = None
    # With minSamples: what the guard query returned, Prometheus's own text.
    samples: str | None = None
    # Labels of the worst series (at most 10, values cut to 100 characters), sorted by name.
    series: tuple[tuple[str, str], ...] = ()
    # With compare: the new pods against the old ones (docs/analysis.md); None without a comparison.
    comparison: Comparison | None = None
    # With sequential: the evidence and the counts it continues from (docs/analysis.md).
    sequential: State | None = None
    # With sequential: both sides' counts over the steps this evaluation counted (None when it
    # counted none). Not part of the resource's status, which keeps the sums since the rollout
    # began: the history row keeps it, for the graph of the two sides' rates.
    counted: Counted | None = field(default=None, compare=False)
    # The lowest bound the value was judged against (maxValue or the baseline's limit). Not
    # part of the resource's status: the operator exports it as sentinel_metric_threshold.
    # Left out of equality, so a status read back from the resource equals the one written.
    limit: float | None = field(default=None, compare=False)

    @classmethod
    def from_dict(cls, raw: object) -> MetricResult | None:
        if not isinstance(raw, Mapping):
            return None
        name = raw.get("name")
        try:
            verdict = Verdict(raw.get("verdict"))
        except ValueError:
            return None
        if not isinstance(name, str) or not name:
            return None
        value = raw.get("value")
        max_value = raw.get("maxValue")
        message = raw.get("message")
        baseline = raw.get("baseline")
        samples = raw.get("samples")
        series = raw.get("series")
        return cls(
            name=name,
            verdict=verdict,
            value=value if isinstance(value, str) else None,
            max_value=(
                float(max_value)
                if isinstance(max_value, int | float) and not isinstance(max_value, bool)
                else None
            ),
            message=message if isinstance(message, str) else "",
            baseline=baseline if isinstance(baseline, str) else None,
            samples=samples if isinstance(samples, str) else None,
            series=tuple(
                sorted(
                    (k, v)
                    for k, v in (series.items() if isinstance(series, Mapping) else ())
                    if isinstance(k, str) and isinstance(v, str)
                )
            ),
            comparison=Comparison.from_dict(raw.get("comparison")),
            sequential=State.from_dict(raw.get("sequential")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.value is not None:
            out["value"] = self.value
        if self.max_value is not None:
            out["maxValue"] = self.max_value
        if self.baseline is not None:
            out["baseline"] = self.baseline
        if self.samples is not None:
            out["samples"] = self.samples
        if self.series:
            out["series"] = dict(self.series)
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_dict()
        if self.sequential is not None:
            out["sequential"] = self.sequential.to_dict()
        out["verdict"] = str(self.verdict)
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class Rollout:
    """``status.rollout``: the target's current rollout as the operator saw it (docs/status.md)."""

    # The rollout's key: a hash of a Deployment's spec.template, or the controller revision a
    # StatefulSet or DaemonSet rolls out (docs/status.md#rollouts-statusrollout).
    template_hash: str
    # When it began: the newest ReplicaSet's or the ControllerRevision's creationTimestamp, else
    # when the operator saw the change.
    started_at: datetime | None = None

    @classmethod
    def from_dict(cls, raw: object) -> Rollout | None:
        if not isinstance(raw, Mapping):
            return None
        template_hash = raw.get("templateHash")
        if not isinstance(template_hash, str) or not template_hash:
            return None
        return cls(template_hash=template_hash, started_at=parse_time(raw.get("startedAt")))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"templateHash": self.template_hash}
        if self.started_at is not None:
            out["startedAt"] = format_time(self.started_at)
        return out


@dataclass(frozen=True)
class AnalysisStatus:
    """``.status`` of a RolloutAnalysis; the empty instance is a resource never reconciled."""

    observed_generation: int | None = None
    # From the last evaluation that got answers; None before the first.
    last_verdict: Verdict | None = None
    failures: int = 0
    last_evaluation_time: datetime | None = None
    metric_results: tuple[MetricResult, ...] = ()
    # When this analysis paused its target; None when it has not (or a person resumed it).
    paused_at: datetime | None = None
    conditions: tuple[Condition, ...] = ()
    # Only with spec.failureWindow: the last decisive verdicts (Pass or Fail), oldest first.
    window: tuple[Verdict, ...] | None = None
    rollout: Rollout | None = None

    @classmethod
    def from_dict(cls, raw: object) -> AnalysisStatus:
        """Return the status in ``raw``; anything missing or malformed reads as never set."""
        if not isinstance(raw, Mapping):
            return cls()
        try:
            verdict: Verdict | None = Verdict(raw.get("lastVerdict"))
        except ValueError:
            verdict = None
        results = raw.get("metricResults")
        conditions = raw.get("conditions")
        parsed_results = [MetricResult.from_dict(r) for r in _list(results)]
        parsed_conditions: dict[str, Condition] = {}
        for item in _list(conditions):
            condition = Condition.from_dict(item)
            # A list-map keyed by type: the first entry of a duplicated type wins.
            if condition is not None and condition.type not in parsed_conditions:
                parsed_conditions[condition.type] = condition
        return cls(
            observed_generation=non_negative_integer(raw.get("observedGeneration")),
            last_verdict=verdict,
            failures=non_negative_integer(raw.get("failures")) or 0,
            last_evaluation_time=parse_time(raw.get("lastEvaluationTime")),
            metric_results=tuple(r for r in parsed_results if r is not None),
            paused_at=parse_time(raw.get("pausedAt")),
            conditions=tuple(parsed_conditions.values()),
            window=_verdicts(raw.get("window")),
            rollout=Rollout.from_dict(raw.get("rollout")),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the status in the CRD's schema: None fields omitted, but ``pausedAt: null``."""
        out: dict[str, Any] = {}
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        if self.last_verdict is not None:
            out["lastVerdict"] = str(self.last_verdict)
        out["failures"] = self.failures
        if self.last_evaluation_time is not None:
            out["lastEvaluationTime"] = format_time(self.last_evaluation_time)
        out["metricResults"] = [r.to_dict() for r in self.metric_results]
        if self.window is not None:
            out["window"] = [str(v) for v in self.window]
        if self.rollout is not None:
            out["rollout"] = self.rollout.to_dict()
        out["pausedAt"] = format_time(self.paused_at) if self.paused_at is not None else None
        out["conditions"] = [c.to_dict() for c in self.conditions]
        return out

    def condition(self, type: str) -> Condition | None:
        """Return the condition of ``type``, or None when the status has none."""
        for condition in self.conditions:
            if condition.type == type:
                return condition
        return None

    def is_true(self, type: str) -> bool:
        """Return whether the condition of ``type`` is present and True."""
        condition = self.condition(type)
        return condition is not None and condition.status == ConditionStatus.TRUE

    def with_conditions(self, *updated: Condition) -> AnalysisStatus:
        """Return a copy with ``updated`` replacing the conditions of their types.

        Conditions of types not given (including ones another tool added) keep their place; new
        types are appended.
        """
        by_type = {c.type: c for c in updated}
        kept = [by_type.pop(c.type, c) for c in self.conditions]
        return replace(self, conditions=(*kept, *by_type.values()))


def _verdicts(raw: object) -> tuple[Verdict, ...] | None:
    if not isinstance(raw, list):
        return None
    verdicts = []
    for item in raw:
        try:
            verdicts.append(Verdict(item))
        except ValueError:
            continue
    return tuple(verdicts)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _known(value: str, enum: type[ConditionType]) -> str:
    # Known strings become enum members (which are still str); others stay as read.
    try:
        return enum(value)
    except ValueError:
        return value
