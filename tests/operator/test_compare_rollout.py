"""docs/analysis.md end to end: new pods against old pods on the real control plane.

The real controller manager makes the ReplicaSets: ``kubectl set image`` creates the new one
(2 replicas, default strategy: no kubelet, so the old ReplicaSet stays at 2 and the new one at 1,
a rollout in progress for as long as the test needs). The metrics app plays the pods' traffic:
three series per ReplicaSet, ``pod_template_hash`` set to the real hashes, a value around 0.25
with 3 % noise, refreshed twice a second and scraped by the real Prometheus every second. The
operator lists the ReplicaSets, sends one ``query_range`` per evaluation and judges with SciPy.

The story: before the rollout there are no old pods (``NoComparison``); +3 % in the new pods
passes for 10 evaluations (under ``maxEffect: 10 %``); +50 % pauses after exactly
``failureLimit``; ``kubectl rollout resume`` clears the count; ``strategy: Recreate`` takes the
old ReplicaSet to 0 at once, a finished rollout, ``NoComparison`` again.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import MetricsApp
from testkit.observe import (
    condition,
    deployment_paused,
    get_analysis,
    wait_condition,
    wait_rows,
)
from testkit.operator import OperatorProcess
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until

NAME = "checkout"
FAILURE_LIMIT = 2
INTERVAL = 5
STATUS_DUMP = os.environ.get("SENTINEL_TEST_STATUS_DUMP", "")


class Pods:
    """Three pod series per ReplicaSet hash, each side's level times ``factor``, with noise."""

    def __init__(self, app: MetricsApp, case: str) -> None:
        self.app, self.case = app, case
        self.factors: dict[str, float] = {}
        self._rng = random.Random(7)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Pods:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.app.clear_pods(self.case)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for template_hash, factor in list(self.factors.items()):
                for i in range(3):
                    value = 0.25 * factor * (1 + self._rng.gauss(0, 0.03))
                    self.app.set_pod(self.case, template_hash, f"{template_hash}-{i}", value)


@pytest.fixture
def pods(metrics_app: MetricsApp, case: str) -> Iterator[Pods]:
    with Pods(metrics_app, case) as fed:
        yield fed


def _status(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return get_analysis(client, namespace, NAME).get("status") or {}


def _result(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    results = _status(client, namespace).get("metricResults") or [{}]
    return results[0]


def _hashes(client: kube.KubeClient, namespace: str) -> list[tuple[int, str, int]]:
    """Return (revision, pod-template-hash, spec.replicas) of each ReplicaSet, newest first."""
    items = client.request("GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    found = [
        (
            int(item["metadata"]["annotations"]["deployment.kubernetes.io/revision"]),
            item["metadata"]["labels"]["pod-template-hash"],
            item["spec"]["replicas"],
        )
        for item in items
    ]
    return sorted(found, reverse=True)


@pytest.mark.clusters("real")
@pytest.mark.slow
def test_new_pods_against_old_pods(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    pods: Pods,
    prometheus: PrometheusServer,
    case: str,
) -> None:
    kubectl_apply(
        kube_cluster, deployment_manifest(NAME, namespace, "shop/checkout:1.0", replicas=2)
    )
    first = wait_until(lambda: _hashes(kube_client, namespace), timeout=15, what="a ReplicaSet")
    old_hash = first[0][1]
    pods.factors[old_hash] = 1.0
    query = f'sentinel_test_pod_value{{case="{case}"}}'
    prometheus.wait_for(query, lambda values: len(values) == 3)
    metric = {
        "name": "latency-vs-old",
        "query": query,
        "compare": {
            "by": "pod_template_hash",
            "worse": "increase",
            "maxEffect": {"percent": 10},
            "confidence": 0.95,
            "lookback": "30s",
            "minSamples": 10,
        },
    }
    kubectl_apply(
        kube_cluster,
        analysis_manifest(
            NAME, namespace, metrics=[metric], interval=f"{INTERVAL}s", failure_limit=FAILURE_LIMIT
        ),
    )
    # No rollout yet: one ReplicaSet, no old pods.
    before = wait_until(
        lambda: (
            _status(kube_client, namespace).get("lastVerdict") and _status(kube_client, namespace)
        ),
        timeout=20,
        what="a first verdict",
    )
    assert before["lastVerdict"] == "Inconclusive"
    assert before["metricResults"][0]["message"].startswith(
        "no comparison: no old ReplicaSet has replicas"
    )
    healthy = condition(get_analysis(kube_client, namespace, NAME), "Healthy")
    assert (healthy["status"], healthy["reason"]) == ("Unknown", "NoComparison")

    # The rollout: the controller manager creates the new ReplicaSet; +3 % in its pods.
    kube_cluster.kubectl(
        "-n", namespace, "set", "image", f"deployment/{NAME}", "app=shop/checkout:2.0"
    )
    rolled = wait_until(
        lambda: (found := _hashes(kube_client, namespace)) and len(found) == 2 and found,
        timeout=15,
        what="the new ReplicaSet",
    )
    new_hash = rolled[0][1]
    assert rolled[1][1] == old_hash and rolled[1][2] == 2 and new_hash != old_hash
    pods.factors[new_hash] = 1.03
    compared = wait_until(
        lambda: "comparison" in _result(kube_client, namespace) and _result(kube_client, namespace),
        timeout=60,
        what="a comparison",
    )
    assert compared["comparison"]["newHash"] == new_hash
    assert compared["comparison"]["oldHashes"] == [old_hash]
    since = len(operator.evaluations(namespace, NAME))
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: len(rows) >= since + 10,
        timeout=10 * INTERVAL + 30,
        what="10 evaluations of +3 %",
    )
    assert [r["outcome"] for r in rows[since : since + 10]] == ["Pass"] * 10
    assert _status(kube_client, namespace)["failures"] == 0
    assert not deployment_paused(kube_client, namespace)

    # +50 % in the new pods: paused after exactly failureLimit failures.
    pods.factors[new_hash] = 1.5
    since = len(operator.evaluations(namespace, NAME))
    wait_until(lambda: deployment_paused(kube_client, namespace), timeout=60, what="the pause")
    # The pause comes first, the status right after it.
    paused = wait_condition(kube_client, namespace, NAME, "RolloutPaused", "FailureLimitReached")
    assert paused["status"]["failures"] == FAILURE_LIMIT
    assert condition(paused, "RolloutPaused")["reason"] == "FailureLimitReached"
    result = paused["status"]["metricResults"][0]
    comparison = result["comparison"]
    assert result["verdict"] == "Fail"
    assert comparison["newHash"] == new_hash and comparison["oldHashes"] == [old_hash]
    assert comparison["newSamples"] >= 10 and comparison["oldSamples"] >= 10
    assert comparison["pValue"] < 0.05 and comparison["effect"] > 0.025
    assert result["message"].startswith("new pods' median ")
    assert "% above old pods' " in result["message"]
    # The history row is written after the status and the pause: wait for it.
    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: sum(r["outcome"] == "Fail" for r in rows[since:]) >= FAILURE_LIMIT,
        timeout=10,
    )
    fails = [r for r in rows[since:] if r["outcome"] == "Fail"]
    assert [(r["failures_after"], bool(r["paused"])) for r in fails[:FAILURE_LIMIT]] == [
        (1, False),
        (2, True),
    ]
    # One range query per evaluation at most, each over lookback at the interval's step.
    ranges = [
        r
        for r in fault_proxy.requests
        if r.path == "/api/v1/query_range" and any(case in q for q in r.params.get("query", []))
    ]
    instants = [
        r
        for r in fault_proxy.requests
        if r.path == "/api/v1/query" and any(case in q for q in r.params.get("query", []))
    ]
    assert 0 < len(ranges) <= len(instants)
    assert {r.params["step"][0] for r in ranges} == {str(INTERVAL)}
    assert {round(float(r.params["end"][0]) - float(r.params["start"][0])) for r in ranges} == {30}
    if STATUS_DUMP:
        shown = kube_cluster.kubectl("-n", namespace, "get", "ra", NAME, "-o", "yaml").stdout
        with open(f"{STATUS_DUMP}.compare.yaml", "w") as out:
            out.write(yaml.safe_dump({"status": yaml.safe_load(shown)["status"]}, sort_keys=False))

    # A person resumes: the count starts again (the resuming reconcile's own Fail makes it 1).
    pods.factors[new_hash] = 1.0
    kube_cluster.kubectl("-n", namespace, "rollout", "resume", f"deployment/{NAME}")
    resumed = wait_until(
        lambda: (
            condition(found := get_analysis(kube_client, namespace, NAME), "RolloutPaused").get(
                "reason"
            )
            == "ResumedByUser"
            and found
        ),
        timeout=20,
        what="ResumedByUser",
    )
    assert resumed["status"]["failures"] <= 1
    assert resumed["status"].get("pausedAt") is None

    # The rollout finishes: Recreate takes the old ReplicaSet to 0 at once.
    kube_client.request(
        "PATCH",
        kube.deployment_path(namespace, NAME),
        body={"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}},
        content_type="application/merge-patch+json",
    )
    wait_until(
        lambda: next(r for r in _hashes(kube_client, namespace) if r[1] == old_hash)[2] == 0,
        timeout=20,
        what="the old ReplicaSet at 0",
    )
    done = wait_until(
        lambda: (
            _result(kube_client, namespace)
            .get("message", "")
            .startswith("no comparison: no old ReplicaSet has replicas")
            and get_analysis(kube_client, namespace, NAME)
        ),
        timeout=3 * INTERVAL + 10,
        what="NoComparison after the rollout",
    )
    assert done["status"]["lastVerdict"] == "Inconclusive"
    assert condition(done, "Healthy")["reason"] == "NoComparison"
    assert "comparison" not in done["status"]["metricResults"][0]
