"""The conditions of one decision and their messages: Ready, Healthy, and the helpers.

``_decide.decide`` computes ``Ready`` and ``Healthy`` here, from the judgements of one
evaluation (``_judge.judge``) and what could not be measured; ``Conditions`` keeps metav1's
transition semantics relative to the previous status (docs/status.md#conditions). Pure, like
the rest of the core; private to the ``decision`` package.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sentinel_core.conditions import ConditionStatus, ConditionType, Reason, Verdict
from sentinel_core.decision._judge import Judgement
from sentinel_core.measurement import PROVIDER_ERRORS, Measurement
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus, Condition, transition

# Annotation values and condition messages stay readable; the full detail is in the history.
_MAX_MESSAGE = 1024

TRUE, FALSE, UNKNOWN = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


@dataclass(frozen=True)
class Conditions:
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
            message=clip(message),
            now=self.now,
            generation=self.generation,
        )


def ready_condition(
    namespace: str,
    target_exists: bool,
    spec: AnalysisSpec,
    conds: Conditions,
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # The first problem that stops the analysis from working fully: no answers at all, then a
    # rejected query, then a missing target (whose metrics are still evaluated).
    missing = f"{target_text(spec)} not found in namespace {namespace}"
    ready = ConditionType.READY
    if unavailable:
        also = "" if target_exists else f"; also {missing}"
        message = f"Prometheus did not answer: {errors_text(unavailable)}{also}"
        return conds.set(ready, FALSE, Reason.METRICS_UNAVAILABLE, message)
    if rejected:
        reason, message = rejection(rejected)
        return conds.set(ready, FALSE, reason, message)
    if not target_exists:
        message = f"{missing}; metrics are still evaluated, nothing is paused until it exists"
        return conds.set(ready, FALSE, Reason.TARGET_NOT_FOUND, message)
    message = f"evaluating {_count(len(spec.metrics), 'metric')} every {spec.interval}"
    return conds.set(ready, TRUE, Reason.EVALUATING, message)


def healthy_condition(
    prev: AnalysisStatus,
    conds: Conditions,
    verdict: Verdict | None,
    judgements: tuple[Judgement, ...],
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # Judged from this evaluation; kept as it was through an outage; unknown for a bad query.
    healthy = ConditionType.HEALTHY
    if verdict == Verdict.FAIL:
        parts = [_failed(j) for j in judgements if j.result.verdict == Verdict.FAIL]
        return conds.set(healthy, FALSE, Reason.THRESHOLD_EXCEEDED, "; ".join(parts))
    if verdict == Verdict.INCONCLUSIVE:
        unsure = [j for j in judgements if j.result.verdict == Verdict.INCONCLUSIVE]
        reason = unsure[0].reason or Reason.NO_DATA
        if all(j.reason in (None, Reason.NO_DATA) for j in unsure):
            names = ", ".join(j.result.name for j in unsure)
            message = f"no data for {names} (empty result or NaN)"
        else:
            message = "; ".join(f"{j.result.name}: {j.why}" for j in unsure)
        return conds.set(healthy, UNKNOWN, reason, message)
    if verdict == Verdict.PASS:
        within = "within maxValue"
        if any(
            j.result.limit != j.result.max_value or j.result.comparison is not None
            for j in judgements
        ):
            within = "within their thresholds"
        message = f"{_count(len(judgements), 'metric')} {within}"
        return conds.set(healthy, TRUE, Reason.WITHIN_THRESHOLDS, message)
    before = prev.condition(healthy)
    if unavailable and before is not None:
        return before
    if unavailable:
        message = "no evaluation has got answers from Prometheus yet"
    else:
        names = ", ".join(m.metric for m in rejected)
        refused = rejection(rejected)[0] != Reason.INVALID_QUERY
        why = (
            "the operator's configuration refused the provider"
            if refused
            else ("Prometheus rejected the query")
        )
        message = f"not evaluated: {why} of {names}"
    return conds.set(healthy, UNKNOWN, Reason.NOT_EVALUATED, message)


def rejection(rejected: list[Measurement]) -> tuple[Reason, str]:
    """Return Ready's reason and message for metrics that were refused, not unanswered.

    A provider refusal (docs/operations.md#metric-providers) comes before a rejected query: nothing
    was asked at all.
    """
    refused = [m for m in rejected if m.error in PROVIDER_ERRORS]
    if refused:
        return Reason(str(refused[0].error)), errors_text(refused)
    return Reason.INVALID_QUERY, f"Prometheus rejected the query: {errors_text(rejected)}"


def _failed(j: Judgement) -> str:
    """Return why one metric failed, in the words of docs/status.md's example, with its series."""
    labels = ", ".join(f"{k}={v}" for k, v in j.result.series)
    return f"{j.why} in series {{{labels}}}" if labels else j.why


def errors_text(measurements: list[Measurement]) -> str:
    return "; ".join(f"{m.metric}: {m.message or m.error}" for m in measurements)


def target_text(spec: AnalysisSpec) -> str:
    return f"{spec.target.kind} {spec.target.name}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
