"""A real rollout of running pods, paused mid-way by the real operator (docs/realcluster.md).

kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok with one simulated node
(``testkit.realcluster.RealCluster``); the pods' metrics served at their own IPs by
``testkit.pod_server.PodServer``; the Prometheus 3.x built by ``make realcluster`` discovering
them through the API server; ``manage.py runoperator``; the real kubectl.

The story: a Deployment of 4 (maxSurge 1, maxUnavailable 0, ``minReadySeconds`` 10, so each
step of a rolling update waits 10 s for the new pod to count as available) is healthy.
``kubectl set image`` starts a rollout whose new pods fail half their requests; the error
ratio over the namespace's pods crosses the threshold, and the operator pauses the Deployment
after ``failureLimit`` failures while the new ReplicaSet is only partly available. For longer
than two intervals and than a rollout step, neither the ReplicaSets' sizes nor the pods change.
The new pods then recover, ``kubectl rollout resume`` lets the controller go on and ``kubectl
rollout status`` sees the rollout complete. ``kubectl get rs`` before, during and after the
pause is printed (``-s`` shows it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import kubectl_apply, running_with_crd
from testkit.manifests import analysis_manifest
from testkit.observe import condition, event_reasons, get_analysis, wait_condition
from testkit.operator import OperatorProcess
from testkit.pod_server import Behaviour, PodServer, kwok_deployment, replica_set_hashes
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

# Starts real control planes of its own (docs/testkit.md#tiers).
pytestmark = pytest.mark.realcluster

NAME = "checkout"
CONTAINER = "checkout"
IMAGE = "registry.example.com/shop/checkout:{}"
REPLICAS = 4
MIN_READY_SECONDS = 10
INTERVAL = 5.0
FAILURE_LIMIT = 2
MAX_ERROR_RATIO = 0.05
PAUSED_BY = "sentinel.example.com/paused-by"


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The real control plane with one simulated node, and the CRD applied by kubectl.

    The client, namespace, pods and operator on it are tests/realcluster/conftest.py's.
    """
    with running_with_crd(
        RealCluster(tmp_path_factory.mktemp("rollout-realcluster"), nodes=1)
    ) as cluster:
        yield cluster


# -- reading what the controllers did ----------------------------------------------------------


def _deployment(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return client.request("GET", kube.deployment_path(namespace, NAME))


def _sizes(cluster: RealCluster, namespace: str) -> dict[str, int]:
    """pod-template-hash -> spec.replicas of each of the Deployment's ReplicaSets."""
    return {h: replicas for _, h, replicas in replica_set_hashes(cluster, namespace, NAME)}


def _pod_names(cluster: RealCluster, namespace: str) -> set[str]:
    listed = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)
    return {pod["metadata"]["name"] for pod in listed["items"]}


def _available(cluster: RealCluster, namespace: str, template_hash: str) -> int:
    listed = cluster.kubectl("get", "rs", "-n", namespace, f"{NAME}-{template_hash}", "-o", "json")
    return int(json.loads(listed.stdout)["status"].get("availableReplicas", 0))


def _show_rs(cluster: RealCluster, namespace: str, when: str) -> None:
    shown = cluster.kubectl("get", "rs", "-n", namespace, "-o", "wide").stdout
    print(f"\n$ kubectl get rs -o wide   # {when}\n{shown.rstrip()}")


def _roll_out_version_1(
    cluster: RealCluster, namespace: str, port: int, replicas: int, min_ready_seconds: int
) -> str:
    """Apply version 1 (one surge pod per step, none unavailable), wait until all its pods are
    available, and return its ReplicaSet's pod-template-hash."""
    deployment = kwok_deployment(
        NAME,
        namespace,
        IMAGE.format("1.0"),
        port,
        replicas=replicas,
        min_ready_seconds=min_ready_seconds,
        container=CONTAINER,
    )
    deployment["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    kubectl_apply(cluster, deployment)
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=90s")
    ((_, template_hash, _),) = replica_set_hashes(cluster, namespace, NAME)
    return template_hash


def _progressing_reason(deployment: dict[str, Any]) -> str:
    return str(condition(deployment, "Progressing").get("reason", ""))


# -- the rollout ---------------------------------------------------------------------------------


def test_a_regressing_rollout_is_paused_mid_way_held_and_resumed(
    real_cluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    pods: PodServer,
    pod_prometheus: PrometheusServer,
    real_operator: OperatorProcess,
) -> None:
    namespace, client, cluster = real_namespace, real_client, real_cluster
    started = time.monotonic()
    old_hash = _roll_out_version_1(cluster, namespace, pods.port, REPLICAS, MIN_READY_SECONDS)
    print(f"\nversion 1: {REPLICAS} pods available in {time.monotonic() - started:.1f} s")
    pods.wait_served(lambda served: len(served) == REPLICAS)
    errors = (
        f'sum(rate(http_request_errors_total{{namespace="{namespace}"}}[10s])) / '
        f'sum(rate(http_requests_total{{namespace="{namespace}"}}[10s]))'
    )
    pod_prometheus.wait_for(errors, lambda values: values == [0.0], timeout=30)
    kubectl_apply(
        cluster,
        analysis_manifest(
            NAME,
            namespace,
            target=NAME,
            metrics=[{"name": "error-ratio", "query": errors, "maxValue": MAX_ERROR_RATIO}],
            interval=f"{INTERVAL:.0f}s",
            failure_limit=FAILURE_LIMIT,
        ),
    )
    first = wait_condition(client, namespace, NAME, "Ready", "Evaluating", timeout=20)
    assert first["status"]["lastVerdict"] == "Pass"
    _show_rs(cluster, namespace, "before the rollout")

    # Version 2 fails half its requests; its first pod is Ready at once, available 10 s later.
    pods.behave(Behaviour(latency=0.1, error_rate=0.5), image=IMAGE.format("2.0"))
    rollout = time.monotonic()
    cluster.kubectl(
        "-n", namespace, "set", "image", f"deployment/{NAME}", f"{CONTAINER}={IMAGE.format('2.0')}"
    )
    new_hash = wait_until(
        lambda: (
            (found := replica_set_hashes(cluster, namespace, NAME))[0][1] != old_hash
            and found[0][1]
        ),
        timeout=20,
        what="the new ReplicaSet",
    )
    paused = wait_condition(
        client, namespace, NAME, "RolloutPaused", "FailureLimitReached", timeout=60
    )
    paused_at = time.monotonic()
    print(f"set image -> paused in {paused_at - rollout:.1f} s")
    assert paused["status"]["failures"] == FAILURE_LIMIT
    assert condition(paused, "Healthy")["reason"] == "ThresholdExceeded"
    held = _deployment(client, namespace)
    assert held["spec"]["paused"] is True
    assert held["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/{NAME}"
    wait_until(
        lambda: _progressing_reason(_deployment(client, namespace)) == "DeploymentPaused",
        timeout=15,
        what="Progressing=DeploymentPaused",
    )

    # Mid-rollout: both ReplicaSets have pods, the new one is not yet all there.
    frozen = _sizes(cluster, namespace)
    frozen_pods = _pod_names(cluster, namespace)
    assert set(frozen) == {old_hash, new_hash}
    assert 0 < frozen[new_hash] < REPLICAS and 0 < frozen[old_hash] <= REPLICAS
    _show_rs(cluster, namespace, "paused by the operator")
    # Longer than two intervals and than a rollout step (minReadySeconds): unpaused, the
    # controller would have moved on by then.
    watch_until = time.monotonic() + max(2 * INTERVAL, MIN_READY_SECONDS) + 2
    watched = 0
    while time.monotonic() < watch_until or watched < 4:
        assert _sizes(cluster, namespace) == frozen
        assert _pod_names(cluster, namespace) == frozen_pods
        assert _deployment(client, namespace)["spec"]["paused"] is True
        watched += 1
        time.sleep(0.5)
    # By now the new pods have been Ready for longer than minReadySeconds: only the pause
    # holds the controller back.
    assert _available(cluster, namespace, new_hash) == frozen[new_hash]
    still = get_analysis(client, namespace, NAME)
    assert condition(still, "RolloutPaused")["reason"] == "FailureLimitReached"
    _show_rs(cluster, namespace, f"{time.monotonic() - paused_at:.0f} s into the pause")
    print(
        f"held for {time.monotonic() - paused_at:.1f} s ({watched} reads): ReplicaSets "
        f"{frozen}, pods unchanged {sorted(frozen_pods)}"
    )
    wait_until(
        lambda: event_reasons(client, namespace, NAME).count("RolloutPaused") == 1,
        timeout=5,
        what="one RolloutPaused event",
    )

    # The new pods recover; once the error ratio is back under the threshold, a person
    # resumes with kubectl and the rollout runs to the end.
    pods.behave(Behaviour(latency=0.1), image=IMAGE.format("2.0"))
    pod_prometheus.wait_for(
        errors, lambda values: len(values) == 1 and values[0] < MAX_ERROR_RATIO, timeout=30
    )
    resumed = time.monotonic()
    cluster.kubectl("-n", namespace, "rollout", "resume", f"deployment/{NAME}")
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=120s")
    print(f"resume -> rollout complete in {time.monotonic() - resumed:.1f} s")
    _show_rs(cluster, namespace, "after the resume")
    assert _sizes(cluster, namespace) == {new_hash: REPLICAS, old_hash: 0}
    after = wait_condition(
        client, namespace, NAME, "RolloutPaused", "ResumedByUser", timeout=3 * INTERVAL
    )
    assert condition(after, "RolloutPaused")["status"] == "False"
    assert _deployment(client, namespace)["spec"].get("paused") is not True
    fails = [row for row in real_operator.evaluations(namespace, NAME) if row["outcome"] == "Fail"]
    assert [bool(row["paused"]) for row in fails[:FAILURE_LIMIT]] == [False, True]
    print(f"whole story: {time.monotonic() - started:.1f} s")
