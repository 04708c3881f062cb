"""The per-metric gauges on the operator's own ``/metrics`` (docs/status.md, issue 13 item 5).

``sentinel_metric_value``, ``sentinel_metric_threshold`` and ``sentinel_metric_baseline`` follow
the real evaluations of a ``runoperator`` against the real Prometheus, labelled namespace,
analysis and metric: the threshold is ``maxValue``, or the baseline's limit where that is lower.
A metric removed from the spec and a deleted analysis leave no stale series behind.
"""

from __future__ import annotations

import socket
import struct

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until

GAUGES = ("sentinel_metric_value", "sentinel_metric_threshold", "sentinel_metric_baseline")


def _series(operator: OperatorProcess, namespace: str) -> dict[tuple[str, str], float]:
    """Return {(gauge, metric): value} of this namespace's per-metric gauges."""
    found = {}
    for gauge in GAUGES:
        for label_text, value in operator.samples(gauge).items():
            labels = dict(part.split("=", 1) for part in label_text.split(",") if "=" in part)
            labels = {key: raw.strip('"') for key, raw in labels.items()}
            if labels.get("namespace") == namespace:
                assert labels["analysis"] == "checkout"
                # Rounded: the limit is computed (0.3 * 1.5 is 0.44999999999999996).
                found[gauge, labels["metric"]] = round(value, 9)
    return found


def test_value_and_threshold_per_metric_and_no_stale_series(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.3)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    latency = gauge_metric(case, 0.5, name="latency")
    errors = gauge_metric(case, 0.75, name="errors")
    # +50 % over the value Prometheus scraped 3 s earlier, and never above 0.75.
    relative = {
        **gauge_metric(case, 0.75, name="vs-before"),
        "maxIncrease": {"percent": 50},
        "baseline": {"offset": "3s"},
    }
    kubectl_apply(
        kube_cluster, analysis_manifest("checkout", namespace, metrics=[latency, errors, relative])
    )

    expected = {
        ("sentinel_metric_value", "latency"): 0.3,
        ("sentinel_metric_threshold", "latency"): 0.5,
        ("sentinel_metric_value", "errors"): 0.3,
        ("sentinel_metric_threshold", "errors"): 0.75,
        ("sentinel_metric_value", "vs-before"): 0.3,
        # The baseline's limit, 0.3 + 50 %, is lower than maxValue: it is the threshold.
        ("sentinel_metric_threshold", "vs-before"): 0.45,
        ("sentinel_metric_baseline", "vs-before"): 0.3,
    }
    wait_until(
        lambda: _series(operator, namespace) == expected,
        timeout=15,
        what=f"value and threshold of both metrics, last seen {_series(operator, namespace)}",
    )

    # The value follows Prometheus.
    gauge(0.6)
    expected[("sentinel_metric_value", "latency")] = 0.6
    expected[("sentinel_metric_value", "errors")] = 0.6
    # Once the baseline is 0.6 too, its limit (0.9) is above maxValue, which is the threshold.
    expected[("sentinel_metric_value", "vs-before")] = 0.6
    expected[("sentinel_metric_baseline", "vs-before")] = 0.6
    expected[("sentinel_metric_threshold", "vs-before")] = 0.75
    wait_until(lambda: _series(operator, namespace) == expected, timeout=15, what="new value")

    # A metric removed from the spec: its series go at once, not at the next evaluation only.
    kubectl_apply(kube_cluster, analysis_manifest("checkout", namespace, metrics=[latency]))
    wait_until(
        lambda: (
            set(_series(operator, namespace))
            == {("sentinel_metric_value", "latency"), ("sentinel_metric_threshold", "latency")}
        ),
        timeout=15,
        what="only the remaining metric's series",
    )

    # The analysis deleted: nothing is left to scrape.
    kube_client.request("DELETE", kube.analysis_path(namespace, "checkout"))
    wait_until(lambda: _series(operator, namespace) == {}, timeout=15, what="no series")


@pytest.mark.clusters("dev")
def test_a_scraper_hanging_up_early_leaves_no_traceback(operator: OperatorProcess) -> None:
    """A scrape abandoned mid-answer (the scraper's timeout ran out on a busy node) is not an
    operator error: nothing like a crash in its log, and the next scrape is answered."""
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", operator.metrics_port), timeout=10) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            # Closed with a reset, not a FIN: what the server is still reading or writing fails.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    # Each abandoned scrape has ended once a later one on the same server has been answered
    # in full; several, since the server answers each on its own thread.
    for _ in range(5):
        assert "sentinel_" in operator.metrics_text()
    assert operator.running
    assert "Traceback" not in operator.log, operator.log
