"""The range query of compare against the real Prometheus, and measure_metric's use of it.

What compare decides is in docs/analysis.md.

``measure_range`` goes through the instant query's ``fetch``: the same taxonomy (a refused
query, an outage, an HTML page, an answer over the cap), one request, never an exception. A
compare metric costs one range query per evaluation, only after its own query answered and
only when there are two sides; the samples are split by the real label values.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sentinel_core.measurement import MeasurementError
from sentinel_core.metric_kinds import Facts
from sentinel_core.spec import MetricSpec, parse_spec
from sentinel_operator.measuring import measure_metric
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.range_query import measure_range, parse_range_answer
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.prometheus import PrometheusServer


def _pods(case: str) -> str:
    return f'sentinel_test_pod_value{{case="{case}"}}'


def _metric(case: str) -> MetricSpec:
    raw = {"name": "vs-old", "query": _pods(case), "compare": {"lookback": "20s", "minSamples": 3}}
    return parse_spec({"target": {"name": "x"}, "metrics": [raw]}).metrics[0]


def _serve_two_sides(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str) -> None:
    for i, value in enumerate((0.1, 0.11)):
        metrics_app.set_pod(case, "oldhash", f"old-{i}", value)
    metrics_app.set_pod(case, "newhash", "new-0", 0.3)
    prometheus.wait_for(_pods(case), lambda seen: len(seen) == 3, timeout=10)


def test_a_compare_metric_splits_the_range_by_the_real_labels(
    metrics_app: MetricsApp, prometheus: PrometheusServer, fault_proxy: FaultProxy, case: str
) -> None:
    _serve_two_sides(metrics_app, prometheus, case)
    fault_proxy.reset()
    now = datetime.now(UTC)
    got = measure_metric(
        PrometheusClient(fault_proxy.url),
        _metric(case),
        Facts(now=now, step=1.0, new_hash="newhash", old_hashes=("oldhash", "gonehash")),
    )
    assert got.error is None and got.reading.sides is not None
    assert set(got.reading.sides.new_values) == {0.3}
    assert (
        set(got.reading.sides.old_values) <= {0.1, 0.11} and len(got.reading.sides.old_values) >= 2
    )
    assert got.reading.sides.old_hashes == ("oldhash", "gonehash")
    paths = [r.path for r in fault_proxy.requests]
    assert paths == ["/api/v1/query", "/api/v1/query_range"]
    sent = fault_proxy.requests[1].params
    assert sent["step"] == ["1"] and float(sent["end"][0]) == round(now.timestamp(), 3)
    assert float(sent["end"][0]) - float(sent["start"][0]) == 20


def test_no_old_pods_means_no_range_query(
    metrics_app: MetricsApp, prometheus: PrometheusServer, fault_proxy: FaultProxy, case: str
) -> None:
    _serve_two_sides(metrics_app, prometheus, case)
    fault_proxy.reset()
    got = measure_metric(
        PrometheusClient(fault_proxy.url),
        _metric(case),
        Facts(now=datetime.now(UTC), new_hash="newhash", old_hashes=()),
    )
    assert (
        got.reading.sides is not None
        and got.reading.sides.old_hashes == ()
        and fault_proxy.query_count == 1
    )


def test_range_errors_keep_the_instant_querys_taxonomy(
    prometheus: PrometheusServer, fault_proxy: FaultProxy
) -> None:
    client = PrometheusClient(fault_proxy.url)
    now = datetime.now(UTC)
    window = {"start": now - timedelta(seconds=30), "end": now, "step": 5.0}

    refused = measure_range(client, "m", "sum(", **window)
    assert refused.error == MeasurementError.INVALID_QUERY and "parse error" in refused.message

    fault_proxy.fail(503)
    down = measure_range(client, "m", "up", **window)
    assert down.error == MeasurementError.UNAVAILABLE and "503" in down.message
    fault_proxy.html()
    assert "HTML page" in measure_range(client, "m", "up", **window).message
    fault_proxy.pass_through()

    small = PrometheusClient(fault_proxy.url, max_bytes=64)
    too_big = measure_range(small, "m", "up", **window)
    assert too_big.error == MeasurementError.UNAVAILABLE and "too large" in too_big.message

    closed = PrometheusClient("http://127.0.0.1:9")
    assert "cannot reach Prometheus" in measure_range(closed, "m", "up", **window).message


def test_parse_range_answer_never_raises() -> None:
    matrix = (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":'
        b'{"__name__":"x","pod_template_hash":"a"},"values":[[1,"0.5"],[2,"NaN"],[3,"1e3"]]}]}}'
    )
    good = parse_range_answer("m", status=200, reason="", content_type="", body=matrix)
    assert good.series == (({"pod_template_hash": "a"}, (0.5, 1000.0)),)
    bad_sample = matrix.replace(b'"0.5"', b'"half"')
    assert parse_range_answer(
        "m", status=200, reason="", content_type="", body=bad_sample
    ).error == (MeasurementError.UNAVAILABLE)
    vector = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
    assert (
        "without a matrix"
        in parse_range_answer("m", status=200, reason="", content_type="", body=vector).message
    )
    for body in (b"", b"[" * 100_000, b"<html>", b'{"status":"success"}'):
        assert parse_range_answer("m", status=200, reason="", content_type="", body=body).error == (
            MeasurementError.UNAVAILABLE
        )
