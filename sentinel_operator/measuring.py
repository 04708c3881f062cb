"""Measure one metric of a spec: its query, then its minSamples guard and its baseline.

The reconciler calls ``measure_metric`` once per metric per evaluation. The metric's own query comes
first; the guard query (``minSamples``) and the baseline query (the metric's own query at an earlier
instant, Prometheus's ``time`` parameter) follow only when it answered, each at most once. So every
extra query counts as a query of the metric, and during an outage a metric still sends one request
per attempt, never three: backing off keeps sending fewer queries than the healthy cadence
(docs/operator.md). Their errors are the metric's: the same taxonomy, the query named.

A ``compare`` metric (docs/analysis.md) adds one range query over ``lookback`` instead of a
baseline, also only after its own query answered, and none when there are no two sides to compare.

A ``sequential`` metric has no instant query: one range query reads the whole steps since the
status's ``through`` (``sequential_read.plan``), both sides per pod, none when there are no two
sides or no whole step yet. A histogram without the ``slowerThan`` boundary is an invalid query,
whose message names the boundaries it has (one more query, only then).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.metric_kinds.compare import Sides, split_sides
from sentinel_core.metric_kinds.sequential import (
    Reading,
    boundaries_query,
    lacks_boundary,
    plan,
    range_query,
    steps_of,
)
from sentinel_core.spec import MetricSpec
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from sentinel_operator.range_query import measure_range

# The target's ReplicaSets as compare sees them: the new pods' hash and the old ones'.
Hashes = tuple[str | None, tuple[str, ...]]
NO_HASHES: Hashes = (None, ())


def measure_metric(
    prometheus: PrometheusClient,
    metric: MetricSpec,
    *,
    baseline_at: datetime | None,
    now: datetime | None = None,
    step: float = 30.0,
    hashes: Hashes = NO_HASHES,
    through: str | None = None,
) -> Measurement:
    """Return ``metric``'s measurement with its guard and baseline, or the first error.

    ``baseline_at`` is when to evaluate the baseline (``rollout.baseline_instant``); None asks
    for none (no ``maxIncrease``, or ``beforeRollout`` before any rollout was seen). With
    ``compare``: ``hashes`` are the target's new and old pod-template hashes, the range ends at
    ``now`` and its ``step`` is the analysis interval. With ``sequential``: ``through`` is where
    its evidence continues from (``sequential_read.Basis``), the steps are read from there.
    """
    if metric.sequential is not None:
        return _measure_sequential(
            prometheus, metric, hashes=hashes, through=through, now=now, step=step
        )
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
    compare = metric.compare
    if compare is not None:
        new_hash, old_hashes = hashes
        sides = Sides(new_hash, old_hashes)
        if new_hash is not None and old_hashes and now is not None:
            answer = measure_range(
                prometheus,
                metric.name,
                metric.query,
                start=now - timedelta(seconds=compare.lookback_seconds),
                end=now,
                step=step,
            )
            if answer.error is not None:
                return Measurement(
                    metric=metric.name,
                    error=answer.error,
                    message=f"range query over {compare.lookback}: {answer.message}",
                )
            sides = split_sides(compare, answer.series, new_hash, old_hashes)
        measured = replace(measured, sides=sides)
    return measured


def _measure_sequential(
    prometheus: PrometheusClient,
    metric: MetricSpec,
    *,
    hashes: Hashes,
    through: str | None,
    now: datetime | None,
    step: float,
) -> Measurement:
    spec = metric.sequential
    assert spec is not None
    new_hash, old_hashes = hashes
    reading = Reading(new_hash, old_hashes)
    planned = plan(through, now, step) if through is not None and now is not None else None
    if new_hash is None or not old_hashes or planned is None:
        return Measurement(metric=metric.name, reading=reading)
    answer = measure_range(
        prometheus,
        metric.name,
        range_query(spec, step),
        start=planned.first,
        end=planned.last,
        step=step,
    )
    if answer.error is not None:
        return Measurement(
            metric=metric.name,
            error=answer.error,
            message=f"range query of {planned.count} steps: {answer.message}",
        )
    if lacks_boundary(spec, answer.timed):
        assert now is not None  # planned
        return _lacking_boundary(prometheus, metric, now, step)
    steps = steps_of(spec, answer.timed, plan=planned, new_hash=new_hash, old_hashes=old_hashes)
    return Measurement(metric=metric.name, reading=replace(reading, steps=steps))


def _lacking_boundary(
    prometheus: PrometheusClient, metric: MetricSpec, at: datetime, step: float
) -> Measurement:
    """Return the invalid query of a histogram without the slowerThan boundary."""
    spec = metric.sequential
    assert spec is not None and spec.histogram is not None
    answer = measure_range(
        prometheus, metric.name, boundaries_query(spec), start=at, end=at, step=step
    )
    if answer.error is not None:
        return Measurement(metric=metric.name, error=answer.error, message=answer.message)
    found = {labels.get("le", "") for labels, _ in answer.timed} - {""}
    shown = ", ".join(sorted(found, key=_boundary)) or "none"
    return Measurement(
        metric=metric.name,
        error=MeasurementError.INVALID_QUERY,
        message=(
            f"histogram {spec.histogram} has no bucket le={spec.slower_than:g} for slowerThan; "
            f"its boundaries are {shown}"
        ),
    )


def _boundary(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")


def measure_from(
    providers: Providers,
    namespace: str,
    metric: MetricSpec,
    *,
    baseline_at: datetime | None,
    now: datetime | None = None,
    step: float = 30.0,
    hashes: Hashes = NO_HASHES,
    through: str | None = None,
) -> Measurement:
    """Measure ``metric`` through its provider, or refuse it without any query.

    Providers and who may use them: docs/operations.md#metric-providers.

    One client serves the metric's query, its guard, its baseline and its range query alike.
    """
    picked = providers.pick(metric.provider, namespace)
    if isinstance(picked, Measurement):
        return replace(picked, metric=metric.name)
    return measure_metric(
        picked,
        metric,
        baseline_at=baseline_at,
        now=now,
        step=step,
        hashes=hashes,
        through=through,
    )
