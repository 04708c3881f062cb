"""Fixtures for the tests whose pods run on realcluster's simulated nodes.

A module that uses them names its cluster and namespace with the fixtures ``pods_cluster`` and
``pods_namespace``; ``pods`` serves those pods' metrics at their IPs
(``testkit.pod_server.PodServer``) and ``pod_prometheus`` is the Prometheus 3.x built by
``make realcluster``, discovering them through the API server (docs/realcluster.md, "Pods on
simulated nodes").

A module that starts a control plane of its own (as many nodes as its story needs) names it
``real_cluster``; ``real_client``, ``real_namespace`` and ``real_operator`` (one ``runoperator``
watching that namespace) are built on it, and make it the pods' cluster and namespace
(tests/realcluster/test_rollout.py, test_statefulset_daemonset.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import kube_client as admin_kube_client
from testkit.namespaces import fresh_namespace
from testkit.operator import OperatorProcess, OperatorStarter
from testkit.pod_server import Behaviour, PodServer
from testkit.prometheus import PrometheusServer, discovering_pods
from testkit.realcluster import RealCluster


@pytest.fixture
def pods(pods_cluster: RealCluster, pods_namespace: str) -> Iterator[PodServer]:
    """The pods' metrics endpoints; every pod healthy (0.1 s, no errors) unless told."""
    api = pods_cluster.api_client()
    try:
        with PodServer(api, pods_namespace, default=Behaviour(latency=0.1)) as server:
            yield server
    finally:
        api.close()


@pytest.fixture
def pod_prometheus(
    tmp_path: Path, pods_cluster: RealCluster, pods_namespace: str
) -> Iterator[PrometheusServer]:
    """The built Prometheus 3.x, discovering the pods of the test's namespace."""
    with discovering_pods(tmp_path / "prometheus", pods_cluster, [pods_namespace]) as server:
        yield server


@pytest.fixture(scope="module")
def real_client(real_cluster: RealCluster) -> kube.KubeClient:
    """The product's ``KubeClient`` as the module's real cluster's admin."""
    return admin_kube_client(real_cluster)


@pytest.fixture
def real_namespace(real_client: kube.KubeClient) -> Iterator[str]:
    with fresh_namespace(real_client, "rollout") as name:
        yield name


@pytest.fixture
def pods_cluster(real_cluster: RealCluster) -> RealCluster:
    return real_cluster


@pytest.fixture
def pods_namespace(real_namespace: str) -> str:
    return real_namespace


@pytest.fixture
def real_operator(
    tmp_path: Path,
    real_cluster: RealCluster,
    migrated_database: Path,
    pod_prometheus: PrometheusServer,
    real_namespace: str,
) -> Iterator[OperatorProcess]:
    """One ``runoperator`` against the real API server, watching the test's namespace."""
    starter = OperatorStarter(tmp_path, migrated_database, kubeconfig=real_cluster.kubeconfig)
    try:
        yield starter(prometheus_url=pod_prometheus.url, namespaces=[real_namespace])
    finally:
        starter.stop_all()
