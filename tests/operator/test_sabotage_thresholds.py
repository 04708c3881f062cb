"""Sabotage, end to end with the real Prometheus: guards, offsets and flapping.

- A ``minSamples`` guard under its minimum: the metric is far over ``maxValue`` but the
  evaluation is ``Inconclusive``, ``Healthy=Unknown/InsufficientData``, no failure is counted,
  nothing is paused; once the traffic is there the same value fails.
- ``baseline: {offset: 12s}``: a value +60 % over what Prometheus scraped 12 s earlier, under
  ``maxValue``, pauses after exactly ``failureLimit`` failures.
- A Pass/Fail/Pass/Fail series never pauses with consecutive counting, and pauses at its fourth
  evaluation once the spec says ``failureWindow: 4, failureLimit: 2``.

The pause on the real cluster is covered by test_baseline_rollout (both clusters); these break
nothing in the API server, so they run on devcluster only, with one operator for the module.
"""

from __future__ import annotations

from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.observe import condition, deployment_paused, event_reasons, get_analysis, wait_rows
from testkit.operator import OperatorProcess
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.operator import shared

pytestmark = pytest.mark.clusters("dev")

NAME = "checkout"


# This module's tests share one operator (tests/operator/shared.py).
namespace, operator = shared.namespace, shared.operator


def _value(case: str) -> str:
    return f'max(sentinel_test_value{{case="{case}"}})'


def _apply(kube_cluster: Cluster, namespace: str, metric: dict[str, Any], **spec: Any) -> None:
    kubectl_apply(kube_cluster, deployment_manifest(NAME, namespace))
    manifest = analysis_manifest(NAME, namespace, metrics=[metric], failure_limit=2)
    manifest["spec"].update(spec)
    kubectl_apply(kube_cluster, manifest)


def _status(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return get_analysis(client, namespace, NAME).get("status") or {}


def test_a_guard_under_its_minimum_counts_nothing(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    metrics_app: MetricsApp,
    prometheus: PrometheusServer,
    case: str,
) -> None:
    traffic = f"{case}-requests"
    metrics_app.set(traffic, 12)
    prometheus.wait_for(_value(traffic), lambda seen: seen == [12.0])
    gauge(0.9)
    metric = {
        "name": "p99-latency",
        "query": _value(case),
        "maxValue": 0.5,
        "minSamples": {"query": _value(traffic), "min": 200},
    }
    _apply(kube_cluster, namespace, metric)

    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: sum(r["outcome"] == "Inconclusive" for r in rows) >= 2,
        what="two Inconclusive evaluations",
    )
    assert all(r["outcome"] == "Inconclusive" and r["failures_after"] == 0 for r in rows)
    assert rows[-1]["metric_results"][0]["samples_text"] == "12"
    resource = get_analysis(kube_client, namespace, NAME)
    healthy = condition(resource, "Healthy")
    assert (healthy["status"], healthy["reason"]) == ("Unknown", "InsufficientData")
    assert healthy["message"] == (
        "p99-latency: minSamples query returned only 12, under the minimum 200: too little to judge"
    )
    result = resource["status"]["metricResults"][0]
    assert (result["verdict"], result["value"], result["samples"]) == ("Inconclusive", "0.9", "12")
    assert resource["status"]["failures"] == 0
    assert not deployment_paused(kube_client, namespace)

    # Enough traffic: the same value now counts.
    metrics_app.set(traffic, 500)
    prometheus.wait_for(_value(traffic), lambda seen: seen == [500.0])
    wait_until(
        lambda: _status(kube_client, namespace).get("failures") == 1, timeout=10, what="a failure"
    )
    assert _status(kube_client, namespace)["metricResults"][0]["samples"] == "500"


def test_a_regression_against_the_value_an_offset_ago_pauses(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.1)
    metric = {
        "name": "p99-latency",
        "query": _value(case),
        "maxValue": 1.0,
        "maxIncrease": {"percent": 50},
        "baseline": {"offset": "12s"},
    }
    _apply(kube_cluster, namespace, metric)
    # Until Prometheus has 12 s of history there is no baseline: Inconclusive, not counted.
    steady = wait_until(
        lambda: (s := _status(kube_client, namespace)).get("lastVerdict") == "Pass" and s,
        timeout=30,
        what="a Pass against the baseline 12s ago",
    )
    assert steady["metricResults"][0]["baseline"] == "0.1"
    assert steady["failures"] == 0

    gauge(0.16)
    wait_until(
        lambda: _status(kube_client, namespace).get("failures") == 1, timeout=8, what="a failure"
    )
    assert not deployment_paused(kube_client, namespace)
    wait_until(lambda: _status(kube_client, namespace).get("failures") == 2, timeout=8, what="two")
    resource = get_analysis(kube_client, namespace, NAME)
    assert condition(resource, "RolloutPaused")["reason"] == "FailureLimitReached"
    assert deployment_paused(kube_client, namespace)
    result = resource["status"]["metricResults"][0]
    assert (result["value"], result["baseline"]) == ("0.16", "0.1")
    assert result["message"] == "0.16 is 60 % above the baseline 0.1 12s ago (limit +50 %)"
    wait_until(
        lambda: "RolloutPaused" in event_reasons(kube_client, namespace, NAME),
        timeout=5,
        what="the RolloutPaused event",
    )


def _drive(
    operator: OperatorProcess, namespace: str, gauge: GaugeSetter, pattern: str
) -> list[dict[str, Any]]:
    """Make the next evaluations see ``pattern`` (P: 0.1, F: 0.9), one each; return their rows."""
    seen: list[dict[str, Any]] = []
    for letter in pattern:
        before = len(operator.evaluations(namespace, NAME))
        gauge(0.1 if letter == "P" else 0.9)
        rows = wait_rows(
            operator,
            namespace,
            NAME,
            lambda rows, before=before: len(rows) > before,
            timeout=10,
            what=f"the evaluation of {letter}",
        )
        seen.append(rows[-1])
    return seen


def test_flapping_pauses_with_a_failure_window_and_never_without(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.1)
    metric = {"name": "p99-latency", "query": _value(case), "maxValue": 0.5}
    _apply(kube_cluster, namespace, metric)
    wait_rows(operator, namespace, NAME, lambda rows: len(rows) >= 1, what="a first evaluation")

    # Pass (the first evaluation), then Fail, Pass, Fail: consecutive counting never reaches 2.
    plain = _drive(operator, namespace, gauge, "FPF")
    assert [r["outcome"] for r in plain] == ["Fail", "Pass", "Fail"]
    assert [r["failures_after"] for r in plain] == [1, 0, 1]
    assert not deployment_paused(kube_client, namespace)
    assert "window" not in _status(kube_client, namespace)

    # The same flapping with failureWindow: 4, failureLimit: 2 (a spec edit clears the count).
    gauge(0.1)
    _apply(kube_cluster, namespace, metric, failureWindow=4)
    wait_until(
        lambda: set(_status(kube_client, namespace).get("window") or ["none"]) == {"Pass"},
        timeout=10,
        what="a window of the new generation",
    )
    # The status is written before its history row: wait for that row too, or _drive would
    # take it for the evaluation of its first letter (seen once in a full run).
    generation = get_analysis(kube_client, namespace, NAME)["metadata"]["generation"]
    wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: any(r["generation"] == generation for r in rows),
        timeout=10,
        what="the history row of the new generation",
    )
    windowed = _drive(operator, namespace, gauge, "FPF")
    assert [(r["outcome"], r["failures_after"]) for r in windowed] == [
        ("Fail", 1),
        ("Pass", 1),
        ("Fail", 2),
    ]
    assert bool(windowed[-1]["paused"])
    resource = get_analysis(kube_client, namespace, NAME)
    assert resource["status"]["window"] == ["Pass", "Fail", "Pass", "Fail"]
    paused = condition(resource, "RolloutPaused")
    assert paused["reason"] == "FailureLimitReached"
    assert "2 failed of the last 4 decisive evaluations reached failureLimit 2" in paused["message"]
    assert deployment_paused(kube_client, namespace)
