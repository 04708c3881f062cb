"""A real rollout guarded by the real operator, on the real control plane (SPEC §9a).

kube-apiserver, etcd and kube-controller-manager (``testkit.realcluster.RealCluster``), the
real Prometheus scraping the test metrics app, ``manage.py runoperator`` and the real kubectl.
The story: ``kubectl set image`` makes the controller manager create a new ReplicaSet, the
new version's metric regresses, the operator pauses the Deployment after exactly
``failureLimit`` failures, the controller then leaves the ReplicaSets alone (a second
``kubectl set image`` creates none), and ``kubectl rollout resume`` lets it go on.

No kubelet runs, so pods stay Pending and no rolling update ever finishes: with 2 replicas
the default strategy (maxSurge 25 % → 1, maxUnavailable 25 % → 0) holds the old ReplicaSet
at 2 and the new one at 1, which is a rollout in progress for as long as the test needs.
``kubectl rollout status`` does not report a pause (it waits until its timeout), so the pause
is read where Kubernetes records it: ``spec.paused`` and the ``Progressing`` condition.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import kube_client as admin_kube_client
from testkit.clusters import kubectl_apply, running_with_crd
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.namespaces import fresh_namespace
from testkit.observe import condition, event_reasons, get_analysis, wait_condition
from testkit.operator import OperatorProcess, OperatorStarter
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

# Starts real control planes of its own (docs/testkit.md#tiers).
pytestmark = pytest.mark.realcluster

NAME = "checkout"
CONTAINER = "checkout"
IMAGE = "registry.example.com/shop/checkout:{}"
INTERVAL = 5.0
FAILURE_LIMIT = 2
PAUSED_BY = "sentinel.example.com/paused-by"


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The real control plane with the controller manager, and the CRD applied by kubectl."""
    with running_with_crd(RealCluster(tmp_path_factory.mktemp("rollout-realcluster"))) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def real_client(real_cluster: RealCluster) -> kube.KubeClient:
    """The product's ``KubeClient`` as the real cluster's admin."""
    return admin_kube_client(real_cluster)


@pytest.fixture
def real_namespace(real_client: kube.KubeClient) -> Iterator[str]:
    with fresh_namespace(real_client, "rollout") as name:
        yield name


@pytest.fixture
def real_operator(
    tmp_path: Path,
    real_cluster: RealCluster,
    migrated_database: Path,
    prometheus: PrometheusServer,
    real_namespace: str,
) -> Iterator[OperatorProcess]:
    """One ``runoperator`` against the real API server, watching the test's namespace."""
    starter = OperatorStarter(tmp_path, migrated_database, kubeconfig=real_cluster.kubeconfig)
    try:
        yield starter(prometheus_url=prometheus.url, namespaces=[real_namespace])
    finally:
        starter.stop_all()


# -- reading what the controller manager did ---------------------------------------------------


def _deployment(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return client.request("GET", kube.deployment_path(namespace, NAME))


def _replica_sets(client: kube.KubeClient, namespace: str) -> dict[str, tuple[str, int]]:
    """Return the Deployment's ReplicaSets: name -> (image, spec.replicas)."""
    items = client.request("GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    return {
        item["metadata"]["name"]: (
            item["spec"]["template"]["spec"]["containers"][0]["image"],
            int(item["spec"]["replicas"]),
        )
        for item in items
        if any(owner.get("name") == NAME for owner in item["metadata"].get("ownerReferences", []))
    }


def _replica_sets_once(
    client: kube.KubeClient, namespace: str, *, count: int
) -> dict[str, tuple[str, int]] | None:
    """Return the ReplicaSets once there are ``count`` of them (None before)."""
    found = _replica_sets(client, namespace)
    return found if len(found) == count else None


def _progressing_reason(deployment: dict[str, Any]) -> str:
    return str(condition(deployment, "Progressing").get("reason", ""))


def _set_image(cluster: RealCluster, namespace: str, tag: str) -> None:
    cluster.kubectl(
        "-n", namespace, "set", "image", f"deployment/{NAME}", f"{CONTAINER}={IMAGE.format(tag)}"
    )


def _images(replica_sets: dict[str, tuple[str, int]]) -> dict[str, int]:
    """Return image -> spec.replicas (one ReplicaSet per pod template)."""
    return {image: replicas for image, replicas in replica_sets.values()}


# -- the rollout ---------------------------------------------------------------------------------


def test_a_regressing_rollout_is_paused_frozen_and_resumed(
    real_cluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    real_operator: OperatorProcess,
    gauge: GaugeSetter,
    case: str,
) -> None:
    namespace, client = real_namespace, real_client
    v1, v2, v3 = (IMAGE.format(tag) for tag in ("1.0", "2.0", "2.1"))

    # Version 1 runs (as far as anything runs without a kubelet) and is healthy.
    gauge(0.1)
    kubectl_apply(
        real_cluster,
        deployment_manifest(NAME, namespace, v1, replicas=2, container=CONTAINER),
    )
    wait_until(
        lambda: _images(_replica_sets(client, namespace)) == {v1: 2},
        timeout=20,
        what="the controller manager creates version 1's ReplicaSet",
    )
    kubectl_apply(
        real_cluster,
        analysis_manifest(
            NAME,
            namespace,
            target=NAME,
            metrics=[gauge_metric(case, 0.5)],
            interval=f"{INTERVAL:.0f}s",
            failure_limit=FAILURE_LIMIT,
        ),
    )
    first = wait_condition(client, namespace, NAME, "Ready", "Evaluating", timeout=20)
    assert first["status"]["lastVerdict"] == "Pass"
    assert condition(first, "RolloutPaused")["status"] == "False"

    # Version 2: a real ReplicaSet of its own, one surge pod beside the two old ones.
    started = time.monotonic()
    _set_image(real_cluster, namespace, "2.0")
    rolling = wait_until(
        lambda: _replica_sets_once(client, namespace, count=2),
        timeout=20,
        what="a new ReplicaSet for version 2",
    )
    assert _images(rolling) == {v1: 2, v2: 1}, rolling
    print(f"\nset image 2.0 -> new ReplicaSet in {time.monotonic() - started:.1f} s: {rolling}")

    # Version 2 regresses: the first failure does not pause, the failureLimit-th does.
    regressed = time.monotonic()
    gauge(0.9)

    def failures() -> int:
        return int(get_analysis(client, namespace, NAME)["status"]["failures"])

    wait_until(lambda: failures() >= 1, timeout=3 * INTERVAL, what="the first failure")
    one = get_analysis(client, namespace, NAME)
    assert one["status"]["failures"] == 1
    assert condition(one, "RolloutPaused")["status"] == "False"
    assert _deployment(client, namespace)["spec"].get("paused") is not True

    paused = wait_condition(
        client, namespace, NAME, "RolloutPaused", "FailureLimitReached", timeout=3 * INTERVAL
    )
    paused_at = time.monotonic()
    print(f"regression -> paused in {paused_at - regressed:.1f} s")
    assert paused["status"]["failures"] == FAILURE_LIMIT
    assert condition(paused, "RolloutPaused")["status"] == "True"
    assert condition(paused, "Healthy")["reason"] == "ThresholdExceeded"
    deployment = _deployment(client, namespace)
    assert deployment["spec"]["paused"] is True
    assert deployment["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/{NAME}"

    # The history row is written just after the status, so it may trail it by a moment.
    def fail_rows() -> list[dict[str, Any]] | None:
        rows = real_operator.evaluations(namespace, NAME)
        fails = [row for row in rows if row["outcome"] == "Fail"]
        return fails if len(fails) >= FAILURE_LIMIT else None

    fails = wait_until(fail_rows, timeout=5, what="two Fail history rows")
    assert [row["failures_after"] for row in fails[:2]] == [1, 2]
    assert [bool(row["paused"]) for row in fails[:2]] == [False, True]

    # The controller manager records the pause in the Progressing condition.
    wait_until(
        lambda: _progressing_reason(_deployment(client, namespace)) == "DeploymentPaused",
        timeout=15,
        what="Progressing=DeploymentPaused",
    )
    frozen = _replica_sets(client, namespace)
    frozen_at = time.monotonic()
    assert frozen == rolling

    # Version 2.1 (the fix) is set while paused: the controller sees the new template
    # (observedGeneration catches up) and still creates no ReplicaSet for it.
    _set_image(real_cluster, namespace, "2.1")
    generation = int(_deployment(client, namespace)["metadata"]["generation"])
    wait_until(
        lambda: _deployment(client, namespace)["status"].get("observedGeneration") == generation,
        timeout=15,
        what="the controller manager observes the second set image",
    )
    # Two intervals at least: the operator keeps evaluating (and failing) meanwhile, the
    # controller keeps syncing, and neither touches a ReplicaSet.
    watch_until = frozen_at + 2 * INTERVAL + 1
    watched = 0
    while time.monotonic() < watch_until or watched < 4:
        assert _replica_sets(client, namespace) == frozen
        deployment = _deployment(client, namespace)
        assert deployment["spec"]["paused"] is True
        assert _progressing_reason(deployment) == "DeploymentPaused"
        watched += 1
        time.sleep(0.5)
    still = get_analysis(client, namespace, NAME)
    assert condition(still, "RolloutPaused")["reason"] == "FailureLimitReached"
    assert still["status"]["failures"] >= FAILURE_LIMIT
    print(
        f"paused for {time.monotonic() - paused_at:.1f} s, ReplicaSets watched for "
        f"{time.monotonic() - frozen_at:.1f} s ({watched} reads): "
        f"unchanged {frozen}; failures now {still['status']['failures']}"
    )
    wait_until(
        lambda: event_reasons(client, namespace, NAME).count("RolloutPaused") == 1,
        timeout=5,
        what="one RolloutPaused event",
    )

    # A person resumes with kubectl: the controller rolls on to 2.1, the operator acknowledges.
    gauge(0.1)
    resumed = time.monotonic()
    real_cluster.kubectl("-n", namespace, "rollout", "resume", f"deployment/{NAME}")
    going = wait_until(
        lambda: _replica_sets_once(client, namespace, count=3),
        timeout=20,
        what="a ReplicaSet for version 2.1 after the resume",
    )
    print(f"resume -> new ReplicaSet in {time.monotonic() - resumed:.1f} s: {going}")
    assert set(frozen) < set(going)
    assert v3 in _images(going)
    after = wait_condition(
        client, namespace, NAME, "RolloutPaused", "ResumedByUser", timeout=3 * INTERVAL
    )
    assert condition(after, "RolloutPaused")["status"] == "False"
    assert after["status"]["failures"] == 0
    assert _deployment(client, namespace)["spec"].get("paused") is not True
    wait_until(
        lambda: _progressing_reason(_deployment(client, namespace)) != "DeploymentPaused",
        timeout=15,
        what="Progressing no longer DeploymentPaused",
    )
    wait_until(
        lambda: event_reasons(client, namespace, NAME).count("RolloutResumed") == 1,
        timeout=5,
        what="one RolloutResumed event",
    )
    print(f"whole rollout: {time.monotonic() - started:.1f} s")
