"""Measure one metric of a spec: ask whatever its kind asks, in order, until one fails.

The reconciler calls ``measure_from`` once per metric per evaluation. The metric's kind
(``sentinel_core.metric_kinds``) says what to ask and reads the answers; this adapter knows no
kind, only how to ask: an instant query (at an earlier instant through Prometheus's ``time``
parameter, or now), a range query, or the raw samples of a range selector at an instant. The
first query that fails ends the metric's measurement with that error, named by the query
(``minSamples query: …``): so every later query is asked only after the earlier ones answered,
each at most once, and during an outage a metric still sends one request per attempt, never
three — backing off keeps sending fewer queries than the healthy cadence (docs/operator.md).
Their errors are the metric's: the same taxonomy, the query named.

What each kind asks, and when, is the kind's own (its ``_read`` module; docs/architecture.md,
"Adding a metric kind").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import Answer, Ask, Facts, Instant, Samples, kind_of
from sentinel_core.spec import MetricSpec
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from sentinel_operator.range_query import measure_range, measure_samples

# The target's new pods' hash and the old ones', for the kinds that tell the two sides apart.
Hashes = tuple[str | None, tuple[str, ...]]
NO_HASHES: Hashes = (None, ())
# Called before each query is sent (a backtest's rate limit and query budget).
BeforeAsk = Callable[[Ask], None]


def measure_metric(
    prometheus: PrometheusClient,
    metric: MetricSpec,
    facts: Facts,
    *,
    at: datetime | None = None,
    before: BeforeAsk | None = None,
) -> Measurement:
    """Return ``metric``'s measurement: ask what its kind asks, send it each answer.

    ``at`` is the instant of the queries a kind asks "now" (None: Prometheus's now); a backtest
    replays a past evaluation with it (docs/backtest.md). ``before`` sees each query first.
    """
    asking = kind_of(metric).measure(metric, facts)
    try:
        ask = next(asking)
        while True:
            if at is not None and isinstance(ask, Instant) and ask.at is None:
                ask = replace(ask, at=at)
            if before is not None:
                before(ask)
            answer = _ask(prometheus, metric.name, ask)
            if isinstance(answer, Measurement) and answer.error is not None:
                asking.close()
                return answer
            ask = asking.send(answer)
    except StopIteration as done:
        return done.value


def _ask(prometheus: PrometheusClient, name: str, ask: Ask) -> Answer | Measurement:
    """Return the answer to one query, or the metric's error named by the query's label."""
    if isinstance(ask, Instant):
        answer = prometheus.measure(name, ask.query, at=ask.at)
        if answer.error is not None and ask.label:
            return replace(answer, message=f"{ask.label}: {answer.message}")
        return answer
    if isinstance(ask, Samples):
        result = measure_samples(prometheus, name, ask.query, at=ask.at)
    else:
        result = measure_range(
            prometheus, name, ask.query, start=ask.start, end=ask.end, step=ask.step
        )
    if result.error is not None:
        message = f"{ask.label}: {result.message}" if ask.label else result.message
        return Measurement(metric=name, error=result.error, message=message)
    return result.timed


def measure_from(
    providers: Providers,
    namespace: str,
    metric: MetricSpec,
    facts: Facts,
    *,
    at: datetime | None = None,
    before: BeforeAsk | None = None,
) -> Measurement:
    """Measure ``metric`` through its provider, or refuse it without any query.

    Providers and who may use them: docs/operations.md#metric-providers.

    One client serves every query of the metric alike; ``at`` and ``before`` as in
    ``measure_metric``.
    """
    picked = providers.pick(metric.provider, namespace)
    if isinstance(picked, Measurement):
        return replace(picked, metric=metric.name)
    return measure_metric(picked, metric, facts, at=at, before=before)
