"""Write evaluation history rows the way the reconcile task does, for the analyses tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from analyses.models import Analysis, Evaluation, MetricResult


def record_evaluation(
    analysis: Analysis, started_at: datetime, *, outcome: str = "Fail", failures_after: int = 1
) -> Evaluation:
    """Store one evaluation of ``analysis`` with one result per metric row."""
    evaluation = Evaluation.objects.create(
        analysis=analysis,
        started_at=started_at,
        finished_at=started_at + timedelta(milliseconds=40),
        duration_seconds=0.04,
        generation=analysis.generation,
        outcome=outcome,
        failures_after=failures_after,
    )
    MetricResult.objects.bulk_create(
        MetricResult(
            evaluation=evaluation,
            name=metric.name,
            value=0.4,
            value_text="0.4",
            max_value=metric.max_value,
            verdict=outcome,
        )
        for metric in analysis.metrics.all()
    )
    return evaluation
