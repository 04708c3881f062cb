"""Sabotage, the rollout part: a regression relative to the pre-rollout baseline.

On each cluster (``kube_cluster``): a Deployment and an analysis whose only fixed bound is a
generous ``maxValue``, plus ``maxIncrease: {percent: 50}`` against ``baseline: {beforeRollout:
true}``, a ``minSamples`` guard that has enough traffic, and ``failureWindow: 3``, so the
status shows every §3.1 field (issue 13's closing note quotes it). Until a rollout is seen the
metric is judged on ``maxValue`` alone. ``kubectl set image`` changes the pod template: the
operator records ``status.rollout`` (on the real cluster ``startedAt`` is the new ReplicaSet's
``creationTimestamp``, made by the real controller manager; devcluster makes no ReplicaSets, so
it is when the operator saw the change) and a ``RolloutDetected`` event. The new version is
60 % slower, still far under ``maxValue``: the baseline query, sent with Prometheus's ``time``
parameter at ``startedAt``, answers the pre-rollout value from the history Prometheus really
scraped, and the analysis pauses the Deployment after exactly ``failureLimit`` failures.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.observe import condition, deployment_paused, event_reasons, get_analysis, wait_rows
from testkit.operator import OperatorProcess
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until

NAME = "checkout"
FAILURE_LIMIT = 2
# Where the test leaves `kubectl get ra -o yaml`'s status for the closing note (optional).
STATUS_DUMP = os.environ.get("SENTINEL_TEST_STATUS_DUMP", "")


def _status(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return get_analysis(client, namespace, NAME).get("status") or {}


def test_a_regression_against_the_pre_rollout_baseline_pauses(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    metrics_app: MetricsApp,
    prometheus: PrometheusServer,
    fault_proxy: FaultProxy,
    case: str,
    cluster_kind: str,
) -> None:
    requests = f'sentinel_test_value{{case="{case}-requests"}}'
    metrics_app.set(f"{case}-requests", 1843)
    prometheus.wait_for(requests, lambda seen: seen == [1843.0])
    gauge(0.1)
    scraped = time.monotonic()
    kubectl_apply(kube_cluster, deployment_manifest(NAME, namespace, "shop/checkout:1.0"))
    metric = {
        "name": "p99-latency",
        "query": f'max by (case, job) (sentinel_test_value{{case="{case}"}})',
        "maxValue": 1.0,
        "maxIncrease": {"percent": 50},
        "baseline": {"beforeRollout": True},
        "minSamples": {"query": f"sum({requests})", "min": 200},
    }
    manifest = analysis_manifest(NAME, namespace, metrics=[metric], failure_limit=FAILURE_LIMIT)
    manifest["spec"]["failureWindow"] = 3
    kubectl_apply(kube_cluster, manifest)

    # No rollout seen yet: judged on maxValue alone, and the first template is recorded.
    first = wait_until(
        lambda: (
            _status(kube_client, namespace).get("lastVerdict") == "Pass"
            and _status(kube_client, namespace)
        ),
        timeout=10,
        what="a first Pass",
    )
    assert "startedAt" not in first["rollout"] and len(first["rollout"]["templateHash"]) == 16
    assert "judged on maxValue alone" in first["metricResults"][0]["message"]
    assert "baseline" not in first["metricResults"][0]

    # The rollout: a new pod template. A real ReplicaSet's creationTimestamp has whole seconds,
    # so startedAt can be up to a second before the change: the pre-rollout value must have been
    # in Prometheus for longer than that, or the baseline query at startedAt finds no sample.
    time.sleep(max(0.0, 1.5 - (time.monotonic() - scraped)))
    kube_cluster.kubectl(
        "-n", namespace, "set", "image", f"deployment/{NAME}", "app=shop/checkout:2.0"
    )
    detected = wait_until(
        lambda: (
            _status(kube_client, namespace).get("rollout", {}).get("startedAt")
            and _status(kube_client, namespace)
        ),
        timeout=10,
        what="status.rollout.startedAt",
    )
    assert detected["rollout"]["templateHash"] != first["rollout"]["templateHash"]
    started = datetime.fromisoformat(detected["rollout"]["startedAt"].replace("Z", "+00:00"))
    if cluster_kind == "real":
        newest = max(
            item["metadata"]["creationTimestamp"]
            for item in kube_client.request(
                "GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets"
            )["items"]
        )
        assert detected["rollout"]["startedAt"] == newest
    wait_until(
        lambda: "RolloutDetected" in event_reasons(kube_client, namespace, NAME),
        timeout=5,
        what="the RolloutDetected event",
    )

    # The new version is 60 % slower: under maxValue 1.0, above the baseline's +50 %.
    time.sleep(max(0.0, 1.5 - (datetime.now(UTC) - started).total_seconds()))
    gauge(0.16)
    wait_until(
        lambda: _status(kube_client, namespace).get("failures") == 1,
        timeout=10,
        what="one failure",
    )
    assert not deployment_paused(kube_client, namespace)
    wait_until(
        lambda: _status(kube_client, namespace).get("failures") == FAILURE_LIMIT,
        timeout=10,
        what="failureLimit failures",
    )
    paused = get_analysis(kube_client, namespace, NAME)
    status = paused["status"]
    assert condition(paused, "RolloutPaused")["reason"] == "FailureLimitReached"
    assert deployment_paused(kube_client, namespace)
    result = status["metricResults"][0]
    assert (result["value"], result["baseline"], result["verdict"]) == ("0.16", "0.1", "Fail")
    assert result["samples"] == "1843"
    assert status["window"] == ["Pass", "Fail", "Fail"]
    assert result["series"] == {"case": case, "job": "metrics-app"}
    assert result["message"] == (
        "0.16 is 60 % above the baseline 0.1 before the rollout (limit +50 %)"
    )
    healthy = condition(paused, "Healthy")
    assert (healthy["status"], healthy["reason"]) == ("False", "ThresholdExceeded")
    assert f"in series {{case={case}, job=metrics-app}}" in healthy["message"]

    # The baseline query really carried Prometheus's time parameter: startedAt.
    times = {
        float(value)
        for request in fault_proxy.requests
        for value in request.params.get("time", [])
        if any(case in query for query in request.params.get("query", []))
    }
    assert times == {started.timestamp()}
    # Three queries per evaluation once the rollout is known: the value, the guard, the
    # baseline.
    assert (
        "paused Deployment checkout: 2 failed of the last 3 decisive evaluations"
        in (condition(paused, "RolloutPaused")["message"])
    )

    # The history rows: exactly failureLimit Fails, the last one paused, with the new columns.
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: sum(r["outcome"] == "Fail" for r in rows) >= FAILURE_LIMIT,
        timeout=5,
    )
    fails = [r for r in rows if r["outcome"] == "Fail"]
    assert [(r["failures_after"], bool(r["paused"])) for r in fails] == [(1, False), (2, True)]
    metric_row = fails[-1]["metric_results"][0]
    assert metric_row["samples_text"] == "1843"
    assert yaml.safe_load(metric_row["series"]) == {"case": case, "job": "metrics-app"}
    assert (metric_row["baseline"], metric_row["baseline_text"]) == (0.1, "0.1")
    assert abs(metric_row["limit"] - 0.15) < 1e-9
    wait_until(
        lambda: "RolloutPaused" in event_reasons(kube_client, namespace, NAME),
        timeout=5,
        what="the RolloutPaused event",
    )
    if STATUS_DUMP:
        shown = kube_cluster.kubectl("-n", namespace, "get", "ra", NAME, "-o", "yaml").stdout
        with open(f"{STATUS_DUMP}.{cluster_kind}.yaml", "w") as out:
            out.write(yaml.safe_dump({"status": yaml.safe_load(shown)["status"]}, sort_keys=False))
