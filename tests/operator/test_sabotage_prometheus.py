"""Sabotage, Prometheus side, end to end.

A real ``runoperator`` process evaluates analyses in a devcluster against the real Prometheus,
and each test breaks Prometheus in one way: 502s from the ``fault_proxy``, the server stopped
and restarted, answers slower than the client's timeout, HTML / truncated / ``"status":"error"``
bodies, a query Prometheus refuses, and answers without data. Each test checks the conditions,
the events (one per transition), the history rows, the failure count and that the Deployment
was not paused.

These break Prometheus, not the API server: they run on devcluster only (the cluster side of
the same operator runs on both clusters in test_sabotage_cluster and test_runtime_e2e), which
keeps the real tier's time for the Kubernetes-facing cases.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.observe import (
    condition,
    deployment_paused,
    event_reasons,
    get_analysis,
    queries_for,
    wait_condition,
    wait_rows,
)
from testkit.operator import OperatorProcess, StartOperator
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.operator import shared

pytestmark = pytest.mark.clusters("dev")

INTERVAL = 5.0
NAME = "checkout"
# docs/operator.md: the recovery is noticed within max(interval, 60 s).
RECOVERY_BOUND = max(INTERVAL, 60.0)


# This module's tests (but items 2 and 3, which need an operator of their own) share one
# operator (tests/operator/shared.py).
namespace, operator, fault_proxy = shared.namespace, shared.operator, shared.fault_proxy


def _apply(kube_cluster: Cluster, namespace: str, case: str, **spec: Any) -> None:
    metrics = spec.pop("metrics", None) or [gauge_metric(case, 0.5)]
    spec.setdefault("failure_limit", 2)
    kubectl_apply(
        kube_cluster,
        deployment_manifest(NAME, namespace),
        analysis_manifest(NAME, namespace, metrics=metrics, **spec),
    )


def _failures(client: kube.KubeClient, namespace: str) -> int:
    return int(get_analysis(client, namespace, NAME)["status"]["failures"])


def _assert_unavailable(resource: dict[str, Any], failures: int) -> None:
    ready = condition(resource, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "MetricsUnavailable")
    assert resource["status"]["failures"] == failures
    # Interpretation 1 of docs/status.md: the last judgement is kept through an outage.
    assert resource["status"]["lastVerdict"] == "Fail"
    assert condition(resource, "Healthy")["reason"] == "ThresholdExceeded"
    assert condition(resource, "RolloutPaused")["reason"] == "NotPaused"


def _error_rows(rows: list[dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    return [row for row in rows if row["outcome"] == "Error" and row["error_reason"] == reason]


def _first_failure(
    kube_cluster: Cluster, client: kube.KubeClient, namespace: str, case: str, gauge: GaugeSetter
) -> None:
    """Start the analysis failing once (1 of 2), so that 'failures unchanged' is observable."""
    gauge(0.9)
    _apply(kube_cluster, namespace, case)
    wait_condition(client, namespace, NAME, "Ready", "Evaluating", timeout=8)
    assert _failures(client, namespace) == 1


def _recover_and_check(
    operator: OperatorProcess,
    client: kube.KubeClient,
    namespace: str,
    restored_at: float,
    *,
    verdict: str = "Pass",
    failures: int = 0,
) -> float:
    """Wait for Ready=True after Prometheus came back; check events and history; return the lag."""
    back = wait_condition(
        client, namespace, NAME, "Ready", "Evaluating", timeout=RECOVERY_BOUND + 5
    )
    recovery = time.monotonic() - restored_at
    assert recovery <= RECOVERY_BOUND
    assert condition(back, "Ready")["status"] == "True"
    # The first answer is judged and counted as usual (nothing was counted during the outage).
    assert back["status"]["lastVerdict"] == verdict
    assert back["status"]["failures"] == failures
    wait_until(lambda: "MetricsRecovered" in event_reasons(client, namespace, NAME), timeout=5)
    reasons = event_reasons(client, namespace, NAME)
    assert reasons.count("MetricsUnavailable") == 1
    assert reasons.count("MetricsRecovered") == 1
    assert "RolloutPaused" not in reasons
    assert not deployment_paused(client, namespace)

    # The history row is written right after the status.
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: rows[-1]["outcome"] == verdict,
        timeout=5,
        what="the recovery's history row",
    )
    errors = _error_rows(rows, "MetricsUnavailable")
    assert errors, rows
    assert all(row["failures_after"] == 1 and not row["paused"] for row in errors)
    assert rows[0]["outcome"] == "Fail" and rows[0]["failures_after"] == 1
    after = rows[rows.index(errors[-1]) + 1 :]
    assert after and (after[0]["outcome"], after[0]["failures_after"]) == (verdict, failures)
    return recovery


@pytest.mark.slow
def test_prometheus_502_backs_off_and_recovers(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
) -> None:
    """Item 1: fewer queries than the healthy cadence during a 502 outage; recovery noticed."""
    _first_failure(kube_cluster, kube_client, namespace, case, gauge)

    window = 25.0
    mark = len(fault_proxy.requests)
    fault_proxy.fail(502)
    started = time.monotonic()
    # The next evaluation: one interval on, or two when a late attempt on a loaded machine moved
    # the analysis onto its phase (docs/status.md#requeue-and-backoff).
    down = wait_condition(
        kube_client, namespace, NAME, "Ready", "MetricsUnavailable", timeout=8 + INTERVAL
    )
    _assert_unavailable(down, failures=1)
    # Prometheus's data changes meanwhile; the operator cannot see it until the outage ends.
    gauge(0.1)
    while time.monotonic() - started < window:
        resource = get_analysis(kube_client, namespace, NAME)
        _assert_unavailable(resource, failures=1)
        assert not deployment_paused(kube_client, namespace)
        time.sleep(0.5)
    during = queries_for(fault_proxy, case, mark)
    healthy = int(window / INTERVAL)

    fault_proxy.pass_through()
    recovery = _recover_and_check(operator, kube_client, namespace, time.monotonic())
    print(
        f"502 outage: {during} queries in {window:.0f} s vs {healthy} at the healthy cadence; "
        f"recovery noticed {recovery:.1f} s after Prometheus came back"
    )
    # Backoff 5 s, 10 s, 20 s (±10 %): three attempts in 25 s, at most one more by bad luck.
    assert 2 <= during <= 3 < healthy
    rows = operator.evaluations(namespace, NAME)
    assert len(_error_rows(rows, "MetricsUnavailable")) == during


def test_prometheus_stopped_then_restarted(
    start_operator: StartOperator,
    isolated_prometheus: PrometheusServer,
    metrics_app: MetricsApp,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    own_namespace: str,
    case: str,
) -> None:
    """Item 2: connection refused is MetricsUnavailable; a restarted Prometheus is noticed."""
    namespace = own_namespace
    operator = start_operator(prometheus_url=isolated_prometheus.url, namespaces=[namespace])
    query = f'sentinel_test_value{{case="{case}"}}'
    metrics_app.set(case, 0.9)
    isolated_prometheus.wait_for(query, lambda values: values == [0.9], 20)
    # Limit 3: the regression goes on through the outage, so the answer after the restart
    # (from the replayed TSDB or a fresh scrape, 0.9 either way) is the second failure.
    _apply(kube_cluster, namespace, case, failure_limit=3)
    wait_condition(kube_client, namespace, NAME, "Ready", "Evaluating", timeout=8)
    assert _failures(kube_client, namespace) == 1

    isolated_prometheus.stop()
    # The next evaluation: one interval on, or two when a late attempt on a loaded machine moved
    # the analysis onto its phase (docs/status.md#requeue-and-backoff).
    down = wait_condition(
        kube_client, namespace, NAME, "Ready", "MetricsUnavailable", timeout=8 + INTERVAL
    )
    _assert_unavailable(down, failures=1)
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: bool(_error_rows(rows, "MetricsUnavailable")),
        timeout=5,
        what="the refused attempt's history row",
    )
    assert "refused" in _error_rows(rows, "MetricsUnavailable")[0]["error_message"]
    assert _failures(kube_client, namespace) == 1

    isolated_prometheus.start()
    recovery = _recover_and_check(
        operator, kube_client, namespace, time.monotonic(), verdict="Fail", failures=2
    )
    print(f"Prometheus restarted: recovery noticed {recovery:.1f} s after it was started")


def test_prometheus_slower_than_timeout(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    own_namespace: str,
    gauge: GaugeSetter,
    own_fault_proxy: FaultProxy,
    case: str,
) -> None:
    """Item 3: an answer slower than SENTINEL_PROMETHEUS_TIMEOUT is MetricsUnavailable."""
    namespace, fault_proxy = own_namespace, own_fault_proxy
    operator = start_operator(
        prometheus_url=fault_proxy.url,
        namespaces=[namespace],
        env={"SENTINEL_PROMETHEUS_TIMEOUT": "1"},
    )
    _first_failure(kube_cluster, kube_client, namespace, case, gauge)

    fault_proxy.slow(3)
    down = wait_condition(kube_client, namespace, NAME, "Ready", "MetricsUnavailable", timeout=10)
    _assert_unavailable(down, failures=1)
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: bool(_error_rows(rows, "MetricsUnavailable")),
        timeout=5,
        what="the timed-out attempt's history row",
    )
    error = _error_rows(rows, "MetricsUnavailable")[0]
    # The client gave up after its 1 s timeout, not after the proxy's 3 s.
    assert 1.0 <= error["duration_seconds"] < 2.9
    assert "within 1 s" in error["error_message"]

    gauge(0.1)
    fault_proxy.pass_through()
    recovery = _recover_and_check(operator, kube_client, namespace, time.monotonic())
    print(f"slow Prometheus: recovery noticed {recovery:.1f} s after it answered in time again")


@pytest.mark.parametrize("body", ["html", "truncated", "status-error"])
def test_prometheus_unusable_body(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    body: str,
) -> None:
    """Item 4: an HTML page, half a JSON body or a transient error body, as a 502."""
    _first_failure(kube_cluster, kube_client, namespace, case, gauge)

    if body == "html":
        fault_proxy.html()
    elif body == "truncated":
        fault_proxy.truncated()
    else:
        fault_proxy.error("unavailable", "injected: storage not ready")
    # The next evaluation: one interval on, or two when a late attempt on a loaded machine moved
    # the analysis onto its phase (docs/status.md#requeue-and-backoff).
    down = wait_condition(
        kube_client, namespace, NAME, "Ready", "MetricsUnavailable", timeout=8 + INTERVAL
    )
    _assert_unavailable(down, failures=1)
    assert not deployment_paused(kube_client, namespace)

    gauge(0.1)
    fault_proxy.pass_through()
    recovery = _recover_and_check(operator, kube_client, namespace, time.monotonic())
    print(f"{body} body: recovery noticed {recovery:.1f} s after Prometheus answered again")


def _started(row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(row["started_at"]))


def test_invalid_promql_then_fixed_with_kubectl(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 5: InvalidQuery, retried at the interval (not backoff); a kubectl edit fixes it."""
    gauge(0.1)
    broken = {
        "name": "value",
        "query": f'max(sentinel_test_value{{case="{case}"}}',
        "maxValue": 0.5,
    }
    _apply(kube_cluster, namespace, case, metrics=[broken])
    invalid = wait_condition(kube_client, namespace, NAME, "Ready", "InvalidQuery", timeout=8)
    assert condition(invalid, "Ready")["status"] == "False"
    assert (condition(invalid, "Healthy")["status"], condition(invalid, "Healthy")["reason"]) == (
        "Unknown",
        "NotEvaluated",
    )
    assert invalid["status"]["failures"] == 0
    assert invalid["status"]["observedGeneration"] == 1

    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: len(_error_rows(rows, "InvalidQuery")) >= 3,
        timeout=16,
        what="three InvalidQuery attempts",
    )
    errors = _error_rows(rows, "InvalidQuery")
    gaps = [(_started(b) - _started(a)).total_seconds() for a, b in itertools.pairwise(errors)]
    print(f"InvalidQuery attempts every {', '.join(f'{gap:.2f}' for gap in gaps)} s")
    # The interval each time; a backoff would have doubled the second gap.
    assert all(INTERVAL - 0.5 <= gap <= INTERVAL + 1.5 for gap in gaps), gaps
    assert all(row["failures_after"] == 0 and row["generation"] == 1 for row in errors)
    row = operator.mirror_row(namespace, NAME)
    assert row is not None and row["backoff_attempt"] == 0
    assert event_reasons(kube_client, namespace, NAME).count("InvalidQuery") == 1
    assert not deployment_paused(kube_client, namespace)

    _apply(kube_cluster, namespace, case)
    fixed = wait_condition(kube_client, namespace, NAME, "Ready", "Evaluating", timeout=8)
    assert fixed["metadata"]["generation"] == 2
    assert fixed["status"]["observedGeneration"] == 2
    assert condition(fixed, "Ready")["observedGeneration"] == 2
    assert condition(fixed, "Healthy")["reason"] == "WithinThresholds"
    assert fixed["status"]["lastVerdict"] == "Pass"
    wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: (rows[-1]["outcome"], rows[-1]["generation"]) == ("Pass", 2),
        timeout=5,
        what="a Pass row of generation 2",
    )
    assert event_reasons(kube_client, namespace, NAME).count("InvalidQuery") == 1


def test_empty_result_and_nan_are_inconclusive(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 6: an empty vector and NaN are no data: Inconclusive, count unchanged, no pause."""
    value = f'max(sentinel_test_value{{case="{case}"}})'
    metrics = [
        # 0 / 0 * 0 is NaN; 0.9 / 0.9 * 0.9 is 0.9.
        {"name": "nan", "query": f"{value} / {value} * {value}", "maxValue": 0.5},
        # The comparison filters a 0 out: an empty vector.
        {"name": "empty", "query": f"{value} != 0", "maxValue": 0.5},
    ]
    gauge(0.9)
    _apply(kube_cluster, namespace, case, metrics=metrics)
    wait_until(
        lambda: (
            (get_analysis(kube_client, namespace, NAME).get("status") or {}).get("failures") == 1
        ),
        timeout=8,
        what="one failure",
    )

    gauge(0)
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: sum(row["outcome"] == "Inconclusive" for row in rows) >= 2,
        timeout=16,
        what="two Inconclusive evaluations",
    )
    resource = get_analysis(kube_client, namespace, NAME)
    healthy = condition(resource, "Healthy")
    assert (healthy["status"], healthy["reason"]) == ("Unknown", "NoData")
    assert condition(resource, "Ready")["reason"] == "Evaluating"
    assert condition(resource, "RolloutPaused")["reason"] == "NotPaused"
    assert resource["status"]["lastVerdict"] == "Inconclusive"
    assert resource["status"]["failures"] == 1
    assert [
        (m["name"], m["verdict"], m.get("value")) for m in resource["status"]["metricResults"]
    ] == [
        ("nan", "Inconclusive", None),
        ("empty", "Inconclusive", None),
    ]
    inconclusive = [row for row in rows if row["outcome"] == "Inconclusive"]
    assert all(row["failures_after"] == 1 and not row["paused"] for row in inconclusive)
    assert [m["verdict"] for m in inconclusive[0]["metric_results"]] == ["Inconclusive"] * 2
    assert [m["value"] for m in inconclusive[0]["metric_results"]] == [None, None]
    assert not deployment_paused(kube_client, namespace)
    assert "RolloutPaused" not in event_reasons(kube_client, namespace, NAME)
