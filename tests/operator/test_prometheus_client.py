"""PrometheusClient against the real Prometheus: every answer becomes a Measurement.

Values come from the session's metrics app scraped by the real server; faults come from the
proxy in front of it, or from stopping a Prometheus of the test's own.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import pytest

from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_operator.prometheus import PrometheusClient
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.ports import free_port
from testkit.prometheus import PrometheusServer

TOKEN = "s3cret-bearer-token"


def gauge(case: str) -> str:
    return f'sentinel_test_value{{case="{case}"}}'


def show(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str, *values: float) -> None:
    """Expose one series per value under ``case`` and wait until Prometheus has scraped all."""
    for index, value in enumerate(values):
        metrics_app.set(case if len(values) == 1 else f"{case}-{index}", value)
    query = gauge(case) if len(values) == 1 else f'sentinel_test_value{{case=~"{case}-.*"}}'
    prometheus.wait_for(query, lambda seen: len(seen) == len(values), timeout=10)


# -- values ------------------------------------------------------------------------------------


def test_single_series_gives_its_value_and_prometheus_text(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    show(metrics_app, prometheus, case, 0.412)

    result = PrometheusClient(prometheus.url).measure("p99", gauge(case))

    labels = dict(result.labels)
    assert replace(result, labels=()) == Measurement(
        metric="p99", value=0.412, text="0.412", series=1
    )
    assert result.error is None and result.value is not None
    # The series' own labels, as Prometheus returned them (the core trims them for status).
    assert labels["case"] == case and labels["job"] == "metrics-app"


def test_several_series_give_the_worst_and_say_how_many(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    show(metrics_app, prometheus, case, 0.1, 2.5e-7, 0.75, float("nan"))

    result = PrometheusClient(prometheus.url).measure(
        "latency", f'sentinel_test_value{{case=~"{case}-.*"}}'
    )

    assert (result.value, result.text, result.series) == (0.75, "0.75", 4)
    assert result.message == "worst of 4 series"
    assert result.error is None
    # The labels are the worst series' own.
    assert dict(result.labels)["case"] == f"{case}-2"


def test_exact_text_is_kept_for_large_and_tiny_values(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    show(metrics_app, prometheus, case, 1234567.0)
    client = PrometheusClient(prometheus.url)

    big = client.measure("m", gauge(case))
    tiny = client.measure("m", f"{gauge(case)} / 1e12")

    assert (big.value, big.text) == (1234567.0, "1234567")
    assert tiny.text == "0.000001234567"
    assert tiny.value == pytest.approx(1.234567e-6)


def test_scalar_result_is_a_value(prometheus: PrometheusServer) -> None:
    result = PrometheusClient(prometheus.url).measure("m", "scalar(vector(0.25)) * 2")

    assert (result.value, result.text, result.series, result.error) == (0.5, "0.5", 1, None)


def test_positive_infinity_is_a_value(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    show(metrics_app, prometheus, case, 1.0)

    result = PrometheusClient(prometheus.url).measure("m", f"{gauge(case)} / 0")

    assert result.error is None and result.value is not None
    assert (result.value, result.text) == (math.inf, "+Inf")


def test_histogram_quantile_over_the_latency_histogram(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    # rate() needs the buckets to rise between scrapes: let the empty series be scraped first.
    metrics_app.observe(case, 0.2, n=0)
    prometheus.wait_for(f'http_request_duration_seconds_count{{app="{case}"}}', timeout=10)
    metrics_app.observe(case, 0.2, n=100)
    query = (
        f'histogram_quantile(0.99, rate(http_request_duration_seconds_bucket{{app="{case}"}}[1m]))'
    )
    prometheus.wait_for(query, timeout=10)

    result = PrometheusClient(prometheus.url).measure("p99-latency", query)

    # Linear interpolation inside the (0.1, 0.25] bucket holding every observation.
    assert result.value == pytest.approx(0.1 + 0.15 * 0.99)
    assert result.series == 1
    assert result.text is not None and float(result.text) == result.value


# -- no data -----------------------------------------------------------------------------------


def test_empty_vector_is_no_data(prometheus: PrometheusServer, case: str) -> None:
    result = PrometheusClient(prometheus.url).measure("m", gauge(case))

    assert result.error is None and result.value is None
    assert (result.value, result.text, result.series) == (None, None, 0)
    assert result.message == "the query returned no series"


def test_nan_gauge_is_no_data(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    metrics_app.set(case, float("nan"))
    prometheus.wait_for(gauge(case), lambda seen: len(seen) == 1 and math.isnan(seen[0]))

    result = PrometheusClient(prometheus.url).measure("m", gauge(case))

    assert result.error is None and result.value is None
    assert result.series == 1
    assert result.message == "the query returned NaN"


def test_nan_scalar_is_no_data(prometheus: PrometheusServer) -> None:
    result = PrometheusClient(prometheus.url).measure("m", "0/0")

    assert result.error is None and result.value is None
    assert result.value is None


# -- invalid queries ---------------------------------------------------------------------------


def test_invalid_promql_is_invalid_query_with_prometheus_message(
    prometheus: PrometheusServer,
) -> None:
    result = PrometheusClient(prometheus.url).measure("m", "sum(rate(x[5m])")

    assert result.error is MeasurementError.INVALID_QUERY
    assert "parse error" in result.message
    assert "unclosed left parenthesis" in result.message
    assert result.value is None


def test_execution_error_is_invalid_query(
    metrics_app: MetricsApp, prometheus: PrometheusServer, case: str
) -> None:
    # Two series on one side of a one-to-one match: Prometheus answers 422 "execution".
    show(metrics_app, prometheus, case, 1.0, 2.0)
    query = f'sentinel_test_value{{case=~"{case}-.*"}} + on() vector(1)'

    result = PrometheusClient(prometheus.url).measure("m", query)

    assert result.error is MeasurementError.INVALID_QUERY
    assert "multiple matches for labels" in result.message


@pytest.mark.parametrize(
    ("query", "kind"), [("up[1m]", "range vector (matrix)"), ('"text"', "a string")]
)
def test_matrix_and_string_results_are_invalid_queries(
    prometheus: PrometheusServer, query: str, kind: str
) -> None:
    result = PrometheusClient(prometheus.url).measure("m", query)

    assert result.error is MeasurementError.INVALID_QUERY
    assert kind in result.message
    assert "an instant query must return a scalar or a vector" in result.message


# -- unavailable -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (502, "HTTP 502 Bad Gateway"),
        (503, "HTTP 503 Service Unavailable"),
        (500, "HTTP 500 Internal Server Error"),
        (401, "HTTP 401 Unauthorized"),
    ],
)
def test_error_status_from_a_proxy_is_unavailable(
    fault_proxy: FaultProxy, status: int, expected: str
) -> None:
    fault_proxy.fail(status)

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == f"Prometheus answered {expected}"
    assert fault_proxy.query_count == 1


def test_slower_than_the_timeout_is_unavailable_within_the_timeout(
    fault_proxy: FaultProxy,
) -> None:
    fault_proxy.slow(5)
    client = PrometheusClient(fault_proxy.url, timeout=0.5)

    started = time.monotonic()
    result = client.measure("m", "vector(1)")
    elapsed = time.monotonic() - started

    assert result.error is MeasurementError.UNAVAILABLE
    assert (
        result.message == f"Prometheus at 127.0.0.1:{fault_proxy.port} did not answer within 0.5 s"
    )
    # Bounded by the proxy's 5 s, not by the timeout plus slack: a loaded machine stretches the
    # latter, and what matters is that the client gave up before the slow answer came.
    assert 0.4 <= elapsed < 4.5, elapsed


def test_html_page_is_unavailable(fault_proxy: FaultProxy) -> None:
    fault_proxy.html()

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == "Prometheus answered with an HTML page instead of JSON"


def test_truncated_json_is_unavailable(fault_proxy: FaultProxy) -> None:
    fault_proxy.truncated()

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message.startswith("Prometheus answered with invalid JSON (")


def test_connection_cut_mid_body_is_unavailable(fault_proxy: FaultProxy) -> None:
    fault_proxy.cut()

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert "broke before a full answer" in result.message


@pytest.mark.parametrize("error_type", ["timeout", "canceled", "internal", "unavailable"])
def test_transient_status_error_bodies_are_unavailable(
    fault_proxy: FaultProxy, error_type: str
) -> None:
    fault_proxy.error(error_type, "query processing was interrupted")

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == f"Prometheus error {error_type}: query processing was interrupted"


def test_bad_data_status_error_body_is_invalid_query(fault_proxy: FaultProxy) -> None:
    fault_proxy.error("bad_data", "invalid parameter 'query': 1:1: parse error")

    result = PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert result.error is MeasurementError.INVALID_QUERY
    assert result.message == "invalid parameter 'query': 1:1: parse error"


def test_wrong_path_prefix_is_unavailable(prometheus: PrometheusServer) -> None:
    # Prometheus itself answers 404 (plain text) for an unknown path.
    result = PrometheusClient(f"{prometheus.url}/prometheus").measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == "Prometheus answered HTTP 404 Not Found"


def test_nothing_listening_is_unavailable_connection_refused() -> None:
    port = free_port()

    result = PrometheusClient(f"http://127.0.0.1:{port}").measure("m", "vector(1)")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == f"cannot reach Prometheus at 127.0.0.1:{port}: connection refused"


# -- the bearer token and the request seam -----------------------------------------------------


def test_bearer_token_and_server_timeout_are_sent(fault_proxy: FaultProxy) -> None:
    client = PrometheusClient(fault_proxy.url, token=TOKEN, timeout=2.5)

    result = client.measure("m", "vector(1)")

    assert result.value == 1.0
    [seen] = fault_proxy.requests
    assert seen.authorization == f"Bearer {TOKEN}"
    assert seen.params == {"query": ["vector(1)"], "timeout": ["2500ms"]}


def test_no_authorization_header_without_a_token(fault_proxy: FaultProxy) -> None:
    PrometheusClient(fault_proxy.url).measure("m", "vector(1)")

    assert [seen.authorization for seen in fault_proxy.requests] == [None]


def test_the_token_never_appears_in_a_message(fault_proxy: FaultProxy) -> None:
    client = PrometheusClient(fault_proxy.url, token=TOKEN, timeout=0.5)
    messages = []
    for break_it in (
        lambda: fault_proxy.fail(502),
        fault_proxy.html,
        fault_proxy.truncated,
        lambda: fault_proxy.slow(3),
        # A misbehaving server echoing the request headers back.
        lambda: fault_proxy.error("internal", f"rejected Authorization: Bearer {TOKEN}"),
        lambda: fault_proxy.error("bad_data", f"bad token {TOKEN} in query"),
    ):
        break_it()
        result = client.measure("m", "vector(1)")
        assert result.error is not None
        messages.append(result.message)

    assert all(TOKEN not in message for message in messages), messages
    assert messages[4] == "Prometheus error internal: rejected Authorization: Bearer ***"


def test_on_request_sees_every_request_once(fault_proxy: FaultProxy) -> None:
    seen: list[Measurement] = []
    client = PrometheusClient(fault_proxy.url, on_request=seen.append)

    ok = client.measure("a", "vector(3)")
    fault_proxy.fail(503)
    failed = client.measure("b", "vector(3)")

    assert seen == [ok, failed]
    assert [m.error for m in seen] == [None, MeasurementError.UNAVAILABLE]
    assert fault_proxy.query_count == 2


def test_configuration_errors_fail_loudly() -> None:
    with pytest.raises(ValueError, match="is not a http or https URL"):
        PrometheusClient("prometheus:9090")
    with pytest.raises(ValueError, match="timeout must be positive"):
        PrometheusClient("http://prometheus:9090", timeout=0)


# -- outage of the server itself (a Prometheus of its own, so no other test sees it) ----------


def test_stopped_prometheus_is_unavailable_and_recovers_after_restart(
    metrics_app: MetricsApp, isolated_prometheus: PrometheusServer, case: str
) -> None:
    metrics_app.set(case, 0.3)
    isolated_prometheus.wait_for(gauge(case), timeout=20)
    client = PrometheusClient(isolated_prometheus.url, token=TOKEN)
    assert client.measure("m", gauge(case)).value == 0.3

    isolated_prometheus.stop()
    down = client.measure("m", gauge(case))
    isolated_prometheus.start()
    back = client.measure("m", gauge(case))

    assert down.error is MeasurementError.UNAVAILABLE
    assert down.message == (
        f"cannot reach Prometheus at 127.0.0.1:{isolated_prometheus.port}: connection refused"
    )
    assert TOKEN not in down.message
    # Same port and storage: the scraped value is there again before any new scrape.
    assert (back.value, back.error) == (0.3, None)
