"""Mirror rows and history for the UI tests, written the way the watch and the reconciler do.

The admin only reads the mirror, so most UI tests build rows directly: ``analysis`` goes through
``analyses.mirror.upsert_from_resource`` with an object shaped as the API server returns it, and
``history`` writes ``Evaluation``/``MetricResult`` rows as the reconcile task records them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from analyses import mirror
from analyses.models import Analysis, Evaluation, MetricResult
from notifications.models import Delivery, DeliveryAttempt, State
from testkit.manifests import analysis_manifest, as_served

# The password of the users that tests log in with through the login form.
PASSWORD = "correct-horse-battery"
T0 = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
_uids = itertools.count(1)

LATENCY = {
    "name": "p99-latency",
    "query": (
        'histogram_quantile(0.99, rate(http_request_duration_seconds_bucket{app="checkout"}[5m]))'
    ),
    "maxValue": 0.25,
}
ERRORS = {
    "name": "error-rate",
    "query": 'sum(rate(http_errors_total{app="checkout"}[1m]))',
    "maxValue": 0.05,
}


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message or f"{kind} is {status} ({reason})",
        "lastTransitionTime": "2026-11-29T10:02:00Z",
        "observedGeneration": 1,
    }


def status(
    *,
    verdict: str = "Pass",
    failures: int = 0,
    paused: bool = False,
    ready_reason: str = "Evaluating",
    values: Sequence[tuple[str, str, float, str]] = (),
) -> dict[str, Any]:
    """Return a status as the operator writes it."""
    ready = ready_reason == "Evaluating"
    healthy = {
        "Pass": ("True", "WithinThresholds"),
        "Fail": ("False", "ThresholdExceeded"),
    }.get(verdict, ("Unknown", "NoData"))
    return {
        "observedGeneration": 1,
        "lastVerdict": verdict,
        "failures": failures,
        "lastEvaluationTime": "2026-11-29T10:05:00Z",
        "metricResults": [
            {"name": name, "value": value, "maxValue": max_value, "verdict": result}
            for name, value, max_value, result in values
        ],
        "pausedAt": "2026-11-29T10:04:00Z" if paused else None,
        "conditions": [
            condition("Ready", "True" if ready else "False", ready_reason),
            condition("Healthy", *healthy),
            condition(
                "RolloutPaused",
                "True" if paused else "False",
                "FailureLimitReached" if paused else "NotPaused",
            ),
        ],
    }


def resource(
    name: str,
    *,
    namespace: str = "shop",
    target: str | None = None,
    metrics: Sequence[dict[str, Any]] = (LATENCY,),
    failure_limit: int = 3,
    status_: dict[str, Any] | None = None,
    uid: str | None = None,
    resource_version: str = "10",
) -> dict[str, Any]:
    manifest = analysis_manifest(
        name,
        namespace,
        target=target or name,
        metrics=metrics,
        interval="30s",
        failure_limit=failure_limit,
    )
    return as_served(
        manifest,
        uid=uid or f"uid-{next(_uids)}",
        resource_version=resource_version,
        created="2026-11-29T09:00:00Z",
        status=status_,
    )


def analysis(name: str, **kwargs: Any) -> Analysis:
    """Mirror one analysis and return its row."""
    row, _ = mirror.upsert_from_resource(resource(name, **kwargs))
    return row


def history(
    row: Analysis,
    values: Sequence[float | None],
    *,
    start: datetime = T0,
    step: timedelta = timedelta(seconds=30),
    paused_at: int | None = None,
    error_at: int | None = None,
    steady: Mapping[str, float] | None = None,
) -> list[Evaluation]:
    """Record one evaluation per value, with outcomes and failure counts as the operator would.

    Every metric measures ``values[i]`` in evaluation ``i``, except those named in ``steady``,
    which measure their fixed value each time. ``error_at`` makes that evaluation an Error
    (no values); ``paused_at`` marks that evaluation as the one that paused the target.
    """
    fixed = dict(steady or {})
    metrics = list(row.metrics.all())
    evaluations = []
    failures = 0
    for index, value in enumerate(values):
        measured = {m.name: fixed.get(m.name, value) for m in metrics}
        error = index == error_at
        verdicts = {m.name: _verdict(measured[m.name], m.max_value, error) for m in metrics}
        if error:
            outcome = "Error"
        elif "Fail" in verdicts.values():
            outcome = "Fail"
        elif "Inconclusive" in verdicts.values():
            outcome = "Inconclusive"
        else:
            outcome = "Pass"
        failures = failures + 1 if outcome == "Fail" else (0 if outcome == "Pass" else failures)
        evaluation = Evaluation.objects.create(
            analysis=row,
            started_at=start + index * step,
            finished_at=start + index * step + timedelta(milliseconds=35),
            duration_seconds=0.035,
            generation=row.generation,
            outcome=outcome,
            failures_after=failures,
            error_reason="MetricsUnavailable" if error else "",
            error_message="Prometheus answered 502 Bad Gateway" if error else "",
            paused=index == paused_at,
        )
        MetricResult.objects.bulk_create(
            MetricResult(
                evaluation=evaluation,
                name=metric.name,
                value=None if error else measured[metric.name],
                value_text=_text(None if error else measured[metric.name]),
                max_value=metric.max_value,
                verdict=verdicts[metric.name],
            )
            for metric in metrics
        )
        evaluations.append(evaluation)
    return evaluations


def failed_delivery(row: Analysis, *, at: datetime, duration_seconds: float) -> Delivery:
    """Record a Paused notification of ``row`` whose one attempt failed with HTTP 500."""
    delivery = Delivery.objects.create(
        key=f"{row.uid}/Paused@seed/payments-slack",
        analysis=row,
        namespace=row.namespace,
        name=row.name,
        channel="payments-slack",
        event="Paused",
        message="paused Deployment checkout: p99-latency 0.41 is above maxValue 0.25",
        transition_at=at,
        created_at=at,
        state=State.FAILED,
        attempts=1,
        last_error="HTTP 500 from the receiver",
    )
    DeliveryAttempt.objects.create(
        delivery=delivery,
        started_at=at,
        duration_seconds=duration_seconds,
        error="HTTP 500 from the receiver",
    )
    return delivery


def _verdict(value: float | None, max_value: float | None, error: bool) -> str:
    if error:
        return "Error"
    if value is None:
        return "Inconclusive"
    if max_value is None:
        # No fixed bound (maxIncrease or compare): the test sets the verdict it wants.
        return "Pass"
    return "Fail" if value > max_value else "Pass"


def _text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
