"""Write the history row of one reconcile attempt (docs/status.md#history-outcomes).

``outcome.record`` calls ``record_attempt`` once per attempt: one ``Evaluation`` row with one
``MetricResult`` row per metric, also for attempts that ended in an error, written as two plain
INSERTs. It runs inside ``outcome.record``'s one transaction; alone it opens its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from analyses.models import Evaluation, MetricResult
from sentinel_core.conditions import Outcome
from sentinel_core.decision import HistoryEntry
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import Recorded, kind_of
from sentinel_core.spec import AnalysisSpec
from sentinel_db import sql


@dataclass(frozen=True)
class Attempt:
    """The facts of one attempt the history row records."""

    started_at: datetime
    finished_at: datetime
    duration_seconds: float
    generation: int
    failures_after: int


def record_attempt(
    analysis_pk: int,
    attempt: Attempt,
    entry: HistoryEntry,
    *,
    spec: AnalysisSpec | None,
    measurements: Sequence[Measurement],
    due_at: datetime | None = None,
) -> int:
    """Store the evaluation and its per-metric rows; return the evaluation's id.

    ``due_at`` is when the attempt was due (None when not known): its lag is kept with it.
    """
    judged = {result.name: result for result in entry.metric_results}
    measured = {m.metric: m for m in measurements}
    rows: list[dict[str, Any]] = []
    for metric in spec.metrics if spec is not None else ():
        m = measured.get(metric.name)
        ok = m is not None and m.error is None
        result = judged.get(metric.name)
        limit, series, comparison, counted = None, {}, {}, {}
        if result is not None:
            verdict = Outcome(result.verdict.value)
            message = result.message
            limit, series = result.limit, dict(result.series)
            comparison = result.comparison.to_dict() if result.comparison is not None else {}
            counted = result.counted.to_dict() if result.counted is not None else {}
        else:
            # Measured with an error, or not measured because an earlier step failed.
            verdict = Outcome.ERROR
            message = (m.message or str(m.error)) if m is not None else "not measured"
        # What the metric's kind keeps besides its result: a baseline, a guard's answer, or
        # another value (evidence, where that is what the kind judges).
        kept = kind_of(metric).recorded(m, result) if ok and m is not None else Recorded()
        value = m.value if m is not None and m.error is None else None
        value_text = (m.text or "") if m is not None and m.error is None else ""
        if kept.value_text is not None:
            value, value_text = kept.value, kept.value_text
        rows.append(
            {
                "name": metric.name,
                "value": value,
                "value_text": value_text,
                "max_value": metric.max_value,
                "baseline": kept.baseline,
                "baseline_text": kept.baseline_text,
                "limit": limit,
                "samples_text": kept.samples_text,
                "series": series,
                "comparison": comparison,
                "counted": counted,
                "ratio_lower": kept.ratio_lower,
                "ratio_upper": kept.ratio_upper,
                "verdict": verdict.value,
                "message": message,
            }
        )
    evaluation = {
        "analysis_id": analysis_pk,
        "due_at": due_at,
        "started_at": attempt.started_at,
        "finished_at": attempt.finished_at,
        "duration_seconds": attempt.duration_seconds,
        "generation": attempt.generation,
        "outcome": entry.outcome.value,
        "failures_after": attempt.failures_after,
        "error_reason": str(entry.error_reason or ""),
        "error_message": entry.error_message,
        "paused": entry.paused,
    }
    # No savepoint inside record's transaction: a failure there rolls the whole attempt's
    # bookkeeping back anyway. Plain INSERTs, no model instance (docs/performance.md,
    # "Bookkeeping as plain SQL").
    with transaction.atomic(savepoint=False):
        evaluation_id = int(sql.insert(Evaluation, [evaluation], returning=True))
        if rows:
            for row in rows:
                row["evaluation_id"] = evaluation_id
            sql.insert(MetricResult, rows, returning=False)
    return evaluation_id
