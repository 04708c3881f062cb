"""Pods on realcluster's simulated nodes, served by the test kit, discovered by Prometheus 3.x.

The session's real control plane runs kube-scheduler and kwok's nodes; a Deployment of 4
whose pods tolerate them becomes Running and Ready (``kubectl rollout status``), each pod
with its own loopback IP. ``testkit.pod_server.PodServer`` serves ``/metrics`` on each of those
IPs, and the Prometheus built by ``make realcluster`` finds them through the API server
(``kubernetes_sd_configs``): 4 targets whose ``pod_template_hash``, ``pod`` and ``namespace``
come from the pods themselves. ``kubectl set image`` makes a new ReplicaSet, and its hash
appears in Prometheus as the new pods replace the old ones.
"""

from __future__ import annotations

from typing import Any

from testkit.clusters import kubectl_apply
from testkit.pod_server import Behaviour, PodServer, kwok_deployment, replica_set_hashes
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

NAME = "web"
REPLICAS = 4


def _targets(prometheus: PrometheusServer, namespace: str) -> list[dict[str, Any]]:
    return [
        target
        for target in prometheus.active_targets()
        if target["labels"].get("namespace") == namespace
    ]


def _healthy_by_hash(
    prometheus: PrometheusServer, namespace: str, template_hash: str
) -> list[dict[str, Any]]:
    return [
        target
        for target in _targets(prometheus, namespace)
        if target["health"] == "up" and target["labels"]["pod_template_hash"] == template_hash
    ]


def _show(targets: list[dict[str, Any]]) -> str:
    rows = sorted(
        (t["labels"]["pod"], t["labels"]["instance"], t["labels"]["pod_template_hash"], t["health"])
        for t in targets
    )
    return "\n".join("  ".join(row) for row in rows)


def test_prometheus_discovers_each_pod_with_its_replicasets_hash(
    realcluster: RealCluster,
    real_namespace: str,
    pods: PodServer,
    pod_prometheus: PrometheusServer,
) -> None:
    namespace, discovering = real_namespace, pod_prometheus
    kubectl_apply(
        realcluster,
        kwok_deployment(NAME, namespace, "shop/web:1.0", pods.port, replicas=REPLICAS),
    )
    realcluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=60s")
    ((_, old_hash, replicas),) = replica_set_hashes(realcluster, namespace, NAME)
    assert replicas == REPLICAS
    served = pods.wait_served(lambda served: len(served) == REPLICAS)
    assert {template_hash for _, template_hash in served.values()} == {old_hash}

    targets = wait_until(
        lambda: (
            len(found := _healthy_by_hash(discovering, namespace, old_hash)) == REPLICAS and found
        ),
        timeout=30,
        what=f"{REPLICAS} healthy targets with hash {old_hash}",
    )
    print(f"\ndiscovered targets (pod, instance, pod_template_hash, health):\n{_show(targets)}")
    assert {t["labels"]["pod"] for t in targets} == set(served)
    assert {t["labels"]["instance"] for t in targets} == {
        f"{ip}:{pods.port}" for ip, _ in served.values()
    }
    assert {t["labels"]["app"] for t in targets} == {NAME}
    assert {t["labels"]["job"] for t in targets} == {"kubernetes-pods"}
    # The pods' traffic arrives per ReplicaSet, labelled by discovery alone.
    rate = f'sum by (pod_template_hash) (rate(http_requests_total{{namespace="{namespace}"}}[5s]))'
    discovering.wait_for(rate, lambda values: len(values) == 1 and values[0] > 0, timeout=30)

    # A new version: its ReplicaSet's hash appears as its pods replace the old ones.
    pods.behave(Behaviour(latency=0.3), image="shop/web:2.0")
    realcluster.kubectl("set", "image", "-n", namespace, f"deployment/{NAME}", "app=shop/web:2.0")
    realcluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=60s")
    hashes = replica_set_hashes(realcluster, namespace, NAME)
    (_, new_hash, new_replicas), (_, previous_hash, old_replicas) = hashes
    assert previous_hash == old_hash and new_hash != old_hash
    assert (new_replicas, old_replicas) == (REPLICAS, 0)
    targets = wait_until(
        lambda: (
            len(found := _healthy_by_hash(discovering, namespace, new_hash)) == REPLICAS
            and not _healthy_by_hash(discovering, namespace, old_hash)
            and found
        ),
        timeout=30,
        what=f"{REPLICAS} targets with the new hash {new_hash} and none with the old",
    )
    print(f"after set image:\n{_show(targets)}")
    latency = (
        "sum by (pod_template_hash) (rate(http_request_duration_seconds_sum"
        f'{{namespace="{namespace}",pod_template_hash="{new_hash}"}}[5s])) / '
        "sum by (pod_template_hash) (rate(http_request_duration_seconds_count"
        f'{{namespace="{namespace}",pod_template_hash="{new_hash}"}}[5s]))'
    )
    # The new image's pods answer in ~0.3 s (its Behaviour), the default is 0.1 s.
    discovering.wait_for(latency, lambda values: len(values) == 1 and 0.25 < values[0] < 0.35)
