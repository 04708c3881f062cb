"""Write what one reconcile attempt did to the database: history, mirror and next due time.

The reconciler calls ``record_attempt`` once per attempt (SPEC §6: one ``Evaluation`` row with
one ``MetricResult`` row per metric, also for attempts that ended in an error) and
``reschedule`` last, to set ``next_due_at`` and ``backoff_attempt`` for the dispatcher. The
mirror itself is refreshed through ``analyses.mirror.upsert_from_resource`` with the API
server's answer. Each function is one short transaction, as SQLite wants it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from analyses.models import Analysis, Evaluation, MetricResult
from sentinel_core.conditions import Outcome, Verdict
from sentinel_core.decision import HistoryEntry
from sentinel_core.measurement import Measurement
from sentinel_core.spec import AnalysisSpec
from sentinel_core.status import MetricResult as JudgedResult

# Error reasons of attempts that never reached a decision; Prometheus-side reasons come from
# ``conditions.Reason`` through the decision.
KUBERNETES_UNAVAILABLE = "KubernetesUnavailable"
KUBERNETES_FORBIDDEN = "KubernetesForbidden"


@dataclass(frozen=True)
class Attempt:
    """The facts of one attempt the history row records."""

    started_at: datetime
    finished_at: datetime
    duration_seconds: float
    generation: int
    failures_after: int


def record_attempt(
    analysis: Analysis,
    attempt: Attempt,
    entry: HistoryEntry,
    *,
    spec: AnalysisSpec | None,
    measurements: Sequence[Measurement],
    error_reason: str = "",
) -> Evaluation:
    """Store the evaluation and its per-metric rows; return the evaluation.

    ``error_reason`` overrides the entry's reason for attempts the Kubernetes API cut short.
    """
    judged = {result.name: result for result in entry.metric_results}
    measured = {m.metric: m for m in measurements}
    rows: list[MetricResult] = []
    for metric in spec.metrics if spec is not None else ():
        m = measured.get(metric.name)
        result = judged.get(metric.name)
        if result is not None:
            verdict = Outcome(result.verdict.value)
            message = result.message
        else:
            # Measured with an error, or not measured because an earlier step failed.
            verdict = Outcome.ERROR
            message = (m.message or str(m.error)) if m is not None else "not measured"
        rows.append(
            MetricResult(
                name=metric.name,
                value=m.value if m is not None and m.error is None else None,
                value_text=(m.text or "") if m is not None and m.error is None else "",
                max_value=metric.max_value,
                verdict=verdict,
                message=message,
            )
        )
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            analysis=analysis,
            started_at=attempt.started_at,
            finished_at=attempt.finished_at,
            duration_seconds=attempt.duration_seconds,
            generation=attempt.generation,
            outcome=entry.outcome.value,
            failures_after=attempt.failures_after,
            error_reason=error_reason or str(entry.error_reason or ""),
            error_message=entry.error_message,
            paused=entry.paused,
        )
        for row in rows:
            row.evaluation = evaluation
        MetricResult.objects.bulk_create(rows)
    return evaluation


def error_entry(
    message: str, measurements: Sequence[Measurement], spec: AnalysisSpec | None
) -> HistoryEntry:
    """Return the history entry of an attempt the Kubernetes API cut short."""
    # Metrics measured before the failure are kept: the values are real, only the act failed.
    judged: list[JudgedResult] = []
    by_name = {m.metric: m for m in measurements}
    for metric in spec.metrics if spec is not None else ():
        m = by_name.get(metric.name)
        if m is None or m.error is not None:
            continue
        if m.value is None:
            verdict = Verdict.INCONCLUSIVE
        else:
            verdict = Verdict.FAIL if m.value > metric.max_value else Verdict.PASS
        judged.append(
            JudgedResult(
                name=metric.name,
                verdict=verdict,
                value=m.text,
                max_value=metric.max_value,
                message=m.message,
            )
        )
    return HistoryEntry(
        outcome=Outcome.ERROR,
        error_reason=None,
        error_message=message,
        metric_results=tuple(judged),
    )


def reschedule(
    analysis_pk: int,
    *,
    generation: int,
    due_at: datetime,
    backoff_attempt: int,
) -> bool:
    """Set the next due time unless the row moved on; return whether it was set.

    A row marked deleted stays out of the queue. A row whose spec changed while this attempt
    ran (the watch saw a newer ``generation`` and made it due at once) keeps that earlier due
    time, so the new spec is evaluated without waiting a whole interval.
    """
    rows = Analysis.objects.filter(pk=analysis_pk, deleted_at__isnull=True, generation=generation)
    return rows.update(next_due_at=due_at, backoff_attempt=backoff_attempt) == 1
