"""The conditions of one decision and their messages: Ready, Healthy, and the helpers.

``decision.decide`` computes ``Ready`` and ``Healthy`` here, from the judgements of one
evaluation (``judge``) and what could not be measured; ``_Conditions`` keeps metav1's
transition semantics relative to the previous status. Pure, like the rest of the core.

Split out of ``decision`` for size; the names keep their leading underscore because they are
``decision``'s internals, not an API of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sentinel_core.conditions import ConditionStatus, ConditionType, Reason, Verdict
from sentinel_core.judge import Judgement
from sentinel_core.measurement import PROVIDER_ERRORS, Measurement
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import AnalysisStatus, Condition, transition

# Annotation values and condition messages stay readable; the full detail is in the history.
_MAX_MESSAGE = 1024

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
    namespace: str,
    target_exists: bool,
    spec: AnalysisSpec,
    conds: _Conditions,
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # The first problem that stops the analysis from working fully: no answers at all, then a
    # rejected query, then a missing target (whose metrics are still evaluated).
    missing = f"{_target(spec)} not found in namespace {namespace}"
    ready = ConditionType.READY
    if unavailable:
        also = "" if target_exists else f"; also {missing}"
        message = f"Prometheus did not answer: {_errors(unavailable)}{also}"
        return conds.set(ready, _FALSE, Reason.METRICS_UNAVAILABLE, message)
    if rejected:
        reason, message = _rejection(rejected)
        return conds.set(ready, _FALSE, reason, message)
    if not target_exists:
        message = f"{missing}; metrics are still evaluated, nothing is paused until it exists"
        return conds.set(ready, _FALSE, Reason.TARGET_NOT_FOUND, message)
    message = f"evaluating {_count(len(spec.metrics), 'metric')} every {spec.interval}"
    return conds.set(ready, _TRUE, Reason.EVALUATING, message)


def _healthy(
    prev: AnalysisStatus,
    conds: _Conditions,
    verdict: Verdict | None,
    judgements: tuple[Judgement, ...],
    unavailable: list[Measurement],
    rejected: list[Measurement],
) -> Condition:
    # Judged from this evaluation; kept as it was through an outage; unknown for a bad query.
    healthy = ConditionType.HEALTHY
    if verdict == Verdict.FAIL:
        parts = [_failed(j) for j in judgements if j.result.verdict == Verdict.FAIL]
        return conds.set(healthy, _FALSE, Reason.THRESHOLD_EXCEEDED, "; ".join(parts))
    if verdict == Verdict.INCONCLUSIVE:
        unsure = [j for j in judgements if j.result.verdict == Verdict.INCONCLUSIVE]
        reason = unsure[0].reason or Reason.NO_DATA
        if all(j.reason in (None, Reason.NO_DATA) for j in unsure):
            names = ", ".join(j.result.name for j in unsure)
            message = f"no data for {names} (empty result or NaN)"
        else:
            message = "; ".join(f"{j.result.name}: {j.why}" for j in unsure)
        return conds.set(healthy, _UNKNOWN, reason, message)
    if verdict == Verdict.PASS:
        within = "within maxValue"
        if any(
            j.result.limit != j.result.max_value or j.result.comparison is not None
            for j in judgements
        ):
            within = "within their thresholds"
        message = f"{_count(len(judgements), 'metric')} {within}"
        return conds.set(healthy, _TRUE, Reason.WITHIN_THRESHOLDS, message)
    before = prev.condition(healthy)
    if unavailable and before is not None:
        return before
    if unavailable:
        message = "no evaluation has got answers from Prometheus yet"
    else:
        names = ", ".join(m.metric for m in rejected)
        refused = _rejection(rejected)[0] != Reason.INVALID_QUERY
        why = (
            "the operator's configuration refused the provider"
            if refused
            else ("Prometheus rejected the query")
        )
        message = f"not evaluated: {why} of {names}"
    return conds.set(healthy, _UNKNOWN, Reason.NOT_EVALUATED, message)


def _rejection(rejected: list[Measurement]) -> tuple[Reason, str]:
    """Return Ready's reason and message for metrics that were refused, not unanswered.

    A provider refusal (SPEC §10.1) comes before a rejected query: nothing was asked at all.
    """
    refused = [m for m in rejected if m.error in PROVIDER_ERRORS]
    if refused:
        return Reason(str(refused[0].error)), _errors(refused)
    return Reason.INVALID_QUERY, f"Prometheus rejected the query: {_errors(rejected)}"


def _failed(j: Judgement) -> str:
    """Return why one metric failed, in the words of SPEC §4's example, with its series."""
    labels = ", ".join(f"{k}={v}" for k, v in j.result.series)
    return f"{j.why} in series {{{labels}}}" if labels else j.why


def _errors(measurements: list[Measurement]) -> str:
    return "; ".join(f"{m.metric}: {m.message or m.error}" for m in measurements)


def _target(spec: AnalysisSpec) -> str:
    return f"{spec.target.kind} {spec.target.name}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
