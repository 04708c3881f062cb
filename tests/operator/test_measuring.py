"""measure_metric against the real Prometheus: the guard and the baseline queries.

The guard and the baseline are described in docs/resource.md.

The baseline is the metric's own query sent with Prometheus's ``time`` parameter, answered from
the history Prometheus really scraped; the proxy in front of it shows the parameter and counts
the requests: at most one extra per query kind, one in all during an outage, and errors keep
the taxonomy of the metric's own query.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sentinel_core.measurement import MeasurementError
from sentinel_core.metric_kinds import Facts
from sentinel_core.spec import MetricSpec, parse_spec
from sentinel_operator.measuring import measure_metric
from sentinel_operator.prometheus import PrometheusClient
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.prometheus import PrometheusServer


def _gauge(case: str) -> str:
    return f'sentinel_test_value{{case="{case}"}}'


def _metric(case: str, **fields: object) -> MetricSpec:
    raw = {"name": "p99", "query": _gauge(case), **fields}
    return parse_spec({"target": {"name": "x"}, "metrics": [raw]}).metrics[0]


def _wait_value(prometheus: PrometheusServer, query: str, value: float) -> None:
    prometheus.wait_for(query, lambda seen: seen == [value], timeout=10)


def test_the_baseline_is_the_query_at_an_earlier_instant(
    metrics_app: MetricsApp, prometheus: PrometheusServer, fault_proxy: FaultProxy, case: str
) -> None:
    metrics_app.set(case, 0.1)
    _wait_value(prometheus, _gauge(case), 0.1)
    time.sleep(1.5)
    before = datetime.now(UTC)
    time.sleep(1.5)
    metrics_app.set(case, 0.16)
    _wait_value(prometheus, _gauge(case), 0.16)
    metric = _metric(case, maxIncrease={"percent": 20}, baseline={"beforeRollout": True})
    fault_proxy.reset()

    got = measure_metric(PrometheusClient(fault_proxy.url), metric, Facts(baseline_at=before))

    assert (got.value, got.reading.baseline, got.reading.baseline_text) == (0.16, 0.1, "0.1")
    sent = [r.params for r in fault_proxy.requests]
    assert len(sent) == 2 and "time" not in sent[0]
    assert float(sent[1]["time"][0]) == round(before.timestamp(), 3)


def test_no_baseline_instant_means_no_baseline_query(
    metrics_app: MetricsApp, prometheus: PrometheusServer, fault_proxy: FaultProxy, case: str
) -> None:
    metrics_app.set(case, 0.2)
    _wait_value(prometheus, _gauge(case), 0.2)
    metric = _metric(case, maxIncrease={"percent": 20}, baseline={"beforeRollout": True})
    fault_proxy.reset()
    got = measure_metric(PrometheusClient(fault_proxy.url), metric, Facts(baseline_at=None))
    assert (got.value, got.reading.baseline) == (0.2, None) and fault_proxy.query_count == 1


def test_the_guard_is_one_more_query_and_an_outage_costs_one(
    metrics_app: MetricsApp, prometheus: PrometheusServer, fault_proxy: FaultProxy, case: str
) -> None:
    metrics_app.set(case, 0.2)
    metrics_app.set(f"{case}-n", 12)
    _wait_value(prometheus, _gauge(f"{case}-n"), 12)
    metric = _metric(
        case,
        maxValue=1,
        maxIncrease={"absolute": 0.1},
        baseline={"offset": "1s"},
        minSamples={"query": _gauge(f"{case}-n"), "min": 200},
    )
    client = PrometheusClient(fault_proxy.url)
    fault_proxy.reset()
    got = measure_metric(client, metric, Facts(baseline_at=datetime.now(UTC)))
    assert (got.reading.samples, got.reading.samples_text, got.error) == (12.0, "12", None)
    assert fault_proxy.query_count == 3

    # Prometheus down: the metric's own query fails, nothing else is asked.
    fault_proxy.fail(502)
    fault_proxy.reset()
    down = measure_metric(client, metric, Facts(baseline_at=datetime.now(UTC)))
    assert down.error == MeasurementError.UNAVAILABLE and fault_proxy.query_count == 1


def test_a_rejected_guard_query_is_an_invalid_query_of_the_metric(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    metrics_app.set(case, 0.2)
    _wait_value(prometheus, _gauge(case), 0.2)
    metric = _metric(case, maxValue=1, minSamples={"query": "sum(", "min": 1})
    got = measure_metric(PrometheusClient(prometheus.url), metric, Facts(baseline_at=None))
    assert got.error == MeasurementError.INVALID_QUERY
    assert got.message.startswith("minSamples query: ")
