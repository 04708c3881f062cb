"""End to end: kubectl, ``runoperator``, the real Prometheus and each cluster together.

One analysis goes through its whole life: first status within about two seconds of
``kubectl apply``, a regression pausing the Deployment after exactly ``failureLimit``
consecutive failures, ``kubectl rollout resume`` acknowledged, with events, history rows and the
operator's own metrics checked along the way.
"""

from __future__ import annotations

import time
from typing import Any

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, events_for
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until

PAUSED_BY = "sentinel.example.com/paused-by"


def _reasons(client: kube.KubeClient, namespace: str) -> list[str]:
    return [event["reason"] for event in events_for(client, namespace, "checkout")]


def test_analysis_lifecycle_pause_and_resume(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
) -> None:
    gauge(0.1)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    path = kube.analysis_path(namespace, "checkout")
    manifest = analysis_manifest(
        "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=2
    )

    applied = time.monotonic()
    kubectl_apply(kube_cluster, manifest)

    def ready() -> dict[str, Any] | None:
        resource = kube_client.request("GET", path)
        return resource if condition(resource, "Ready").get("reason") == "Evaluating" else None

    # Promptly, not an interval later (the figure itself is a benchmark: bench/apply_to_status.py).
    first = wait_until(ready, timeout=8, interval=0.02, what="Ready=True/Evaluating")
    print(f"kubectl apply to first status: {time.monotonic() - applied:.2f} s")
    assert condition(first, "Ready")["status"] == "True"
    assert condition(first, "Healthy")["reason"] == "WithinThresholds"
    assert first["status"]["lastVerdict"] == "Pass"
    assert first["status"]["metricResults"] == [
        {"name": "value", "value": "0.1", "maxValue": 0.5, "verdict": "Pass"}
    ]

    # The regression: two consecutive failures pause the target, not one.
    gauge(0.9)

    def failures() -> int:
        return int(kube_client.request("GET", path)["status"]["failures"])

    wait_until(lambda: failures() == 1, timeout=15, what="one failure")
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"].get("paused") is not True
    wait_until(lambda: failures() == 2, timeout=15, what="two failures")
    paused = kube_client.request("GET", path)
    assert condition(paused, "RolloutPaused")["status"] == "True"
    assert condition(paused, "RolloutPaused")["reason"] == "FailureLimitReached"
    assert condition(paused, "Healthy")["reason"] == "ThresholdExceeded"
    assert paused["status"]["pausedAt"]
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"]["paused"] is True
    annotations = deployment["metadata"]["annotations"]
    assert annotations[PAUSED_BY] == f"{namespace}/checkout"
    assert annotations["sentinel.example.com/paused-at"]
    assert "failureLimit 2" in annotations["sentinel.example.com/pause-reason"]
    wait_until(lambda: _reasons(kube_client, namespace).count("RolloutPaused") == 1, timeout=5)

    # The history row is written just after the status, so it may trail the status by a moment.
    def fail_rows() -> list[dict[str, Any]] | None:
        rows = [r for r in operator.evaluations(namespace, "checkout") if r["outcome"] == "Fail"]
        return rows if len(rows) >= 2 else None

    wait_until(fail_rows, timeout=5, what="two Fail history rows")
    history = operator.evaluations(namespace, "checkout")
    fails = [row for row in history if row["outcome"] == "Fail"]
    assert [row["failures_after"] for row in fails[:2]] == [1, 2]
    assert [bool(row["paused"]) for row in fails[:2]] == [False, True]
    assert all(row["outcome"] == "Pass" for row in history[: history.index(fails[0])])
    assert fails[0]["metric_results"][0]["value_text"] == "0.9"
    assert fails[0]["metric_results"][0]["verdict"] == "Fail"
    assert fails[0]["metric_results"][0]["max_value"] == 0.5

    # A person resumes with kubectl: acknowledged, the count starts again, never re-paused.
    gauge(0.1)
    kube_cluster.kubectl("-n", namespace, "rollout", "resume", "deployment/checkout")

    def resumed() -> dict[str, Any] | None:
        resource = kube_client.request("GET", path)
        return (
            resource
            if condition(resource, "RolloutPaused").get("reason") == "ResumedByUser"
            else None
        )

    after = wait_until(resumed, timeout=15, what="RolloutPaused=False/ResumedByUser")
    assert condition(after, "RolloutPaused")["status"] == "False"
    assert after["status"]["failures"] == 0
    assert after["status"]["pausedAt"] is None
    # Events follow the status write.
    wait_until(lambda: _reasons(kube_client, namespace).count("RolloutResumed") == 1, timeout=5)
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"].get("paused") is not True

    # The mirror follows the cluster (its row is written just after the status), and the
    # operator's own metrics tell the story.
    row = wait_until(
        lambda: (
            (found := operator.mirror_row(namespace, "checkout"))
            and found["failures"] == 0
            and not found["paused"]
            and found
        ),
        timeout=5,
        what="the mirror row of the resumed analysis",
    )
    assert row["ready"]
    labels = {"namespace": namespace, "name": "checkout"}
    assert operator.metric("sentinel_analysis_failures", labels) == 0.0
    assert operator.metric("sentinel_analysis_verdict", {**labels, "verdict": "Pass"}) == 1.0
    assert operator.metric("sentinel_pauses_total") == 1.0
    assert operator.metric("sentinel_leader") == 1.0
    assert sorted(_reasons(kube_client, namespace)) == ["RolloutPaused", "RolloutResumed"]

    evaluations = len(operator.evaluations(namespace, "checkout"))
    count = operator.metric("sentinel_dispatch_lag_seconds_count") or 0.0
    total = operator.metric("sentinel_dispatch_lag_seconds_sum") or 0.0
    within = operator.metric("sentinel_dispatch_lag_seconds_bucket", {"le": "1.0"})
    print(
        f"dispatch lag: mean {total / count:.3f} s over {count:.0f} dispatches; "
        f"queries per evaluation: {fault_proxy.query_count / evaluations:.2f}"
    )
    assert count >= 4
    assert within == count
    # One metric, one query per evaluation: nothing is re-measured (the proxy saw only ours).
    assert fault_proxy.query_count <= evaluations + 1
