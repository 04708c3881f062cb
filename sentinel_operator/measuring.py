"""Measure one metric of a spec: its query, then its minSamples guard and its baseline.

The reconciler calls ``measure_metric`` once per metric per evaluation. The metric's own query
comes first; the guard query (``minSamples``) and the baseline query (the metric's own query at
an earlier instant, Prometheus's ``time`` parameter) follow only when it answered, each at most
once. So every extra query counts as a query of the metric, and during an outage a metric still
sends one request per attempt, never three: backing off keeps sending fewer queries than the
healthy cadence (SPEC §5). Their errors are the metric's: the same taxonomy, the query named.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from sentinel_core.measurement import Measurement
from sentinel_core.spec import MetricSpec
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers


def measure_metric(
    prometheus: PrometheusClient, metric: MetricSpec, *, baseline_at: datetime | None
) -> Measurement:
    """Return ``metric``'s measurement with its guard and baseline, or the first error.

    ``baseline_at`` is when to evaluate the baseline (``rollout.baseline_instant``); None asks
    for none (no ``maxIncrease``, or ``beforeRollout`` before any rollout was seen).
    """
    measured = prometheus.measure(metric.name, metric.query)
    if measured.error is not None:
        return measured
    guard = metric.min_samples
    if guard is not None:
        samples = prometheus.measure(metric.name, guard.query)
        if samples.error is not None:
            return replace(samples, message=f"minSamples query: {samples.message}")
        measured = replace(measured, samples=samples.value, samples_text=samples.text)
    if metric.max_increase is not None and baseline_at is not None:
        baseline = prometheus.measure(metric.name, metric.query, at=baseline_at)
        if baseline.error is not None:
            return replace(baseline, message=f"baseline query: {baseline.message}")
        measured = replace(measured, baseline=baseline.value, baseline_text=baseline.text)
    return measured


def measure_from(
    providers: Providers, namespace: str, metric: MetricSpec, *, baseline_at: datetime | None
) -> Measurement:
    """Measure ``metric`` through its provider, or refuse it without any query (SPEC §10.1).

    One client serves the metric's query, its guard and its baseline alike.
    """
    picked = providers.pick(metric.provider, namespace)
    if isinstance(picked, Measurement):
        return replace(picked, metric=metric.name)
    return measure_metric(picked, metric, baseline_at=baseline_at)
