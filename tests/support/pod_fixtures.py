"""Pytest fixtures for the tests whose pods run on the session realcluster's simulated nodes.

Registered for the whole suite by the root ``tests/conftest.py`` (tests/realcluster and
tests/operator use them). Every such module plays on the worker's one session ``realcluster``
(``tests/support/cluster_fixtures.py``: controllers, scheduler and ``POD_NODES`` kwok nodes),
isolated from the other tests by namespaces: starting a control plane per module cost 20-35 s
and its processes' CPU while the module ran (docs/testkit.md#one-real-cluster-for-the-pod-stories).

Module scope, one of each per module, shared by its tests:

- ``real_namespaces``: fresh namespaces, one per test of the module that takes
  ``real_namespace`` (at least one); a test takes the next with ``real_namespace``, a module
  whose tests share one namespace uses ``real_namespaces[0]``.
- ``pod_prometheus``: the Prometheus 3.x built by ``make realcluster``, discovering the pods of
  exactly those namespaces through the API server (docs/realcluster.md, "Pods on simulated
  nodes"), so series carry the ``pod_template_hash`` the controllers gave them.
- ``pod_fault_proxy``: a ``FaultProxy`` in front of it, passing everything through unless a test
  says otherwise.
- ``real_operator``: one ``runoperator`` against the session realcluster, watching those
  namespaces and asking Prometheus through the proxy.

``real_cluster`` (the session realcluster) and ``real_client`` (its admin ``KubeClient``) name the
stage; ``pods`` (per test) serves the metrics of the Running pods of the test's namespace at
their IPs (``testkit.pod_server.PodServer``). A module may override ``pods`` for its own
behaviours (tests/operator/test_sequential_rollout.py does).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import kube_client as admin_kube_client
from testkit.fault_proxy import FaultProxy
from testkit.namespaces import fresh_namespace
from testkit.operator import OperatorProcess, OperatorStarter
from testkit.pod_server import Behaviour, PodServer
from testkit.prometheus import PrometheusServer, discovering_pods
from testkit.realcluster import RealCluster


class _Namespaces(list[str]):
    """The module's namespaces, handed out one per test in collection order."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self._taken = 0

    def take(self) -> str:
        if self._taken >= len(self):
            raise RuntimeError(
                f"all {len(self)} namespaces of the module are taken: real_namespaces makes one "
                "per test that asks for real_namespace"
            )
        self._taken += 1
        return self[self._taken - 1]


def _tests_taking_a_namespace(request: pytest.FixtureRequest) -> int:
    """Return how many of the module's selected tests ask for ``real_namespace``."""
    module = request.module
    return sum(
        1
        for item in request.session.items
        if getattr(item, "module", None) is module
        and "real_namespace" in getattr(item, "fixturenames", ())
    )


@pytest.fixture(scope="module")
def real_cluster(realcluster: RealCluster) -> RealCluster:
    """The session realcluster, under the name the pod stories use for their stage."""
    return realcluster


@pytest.fixture(scope="module")
def real_client(realcluster: RealCluster) -> kube.KubeClient:
    """The product's ``KubeClient`` as the session realcluster's admin."""
    return admin_kube_client(realcluster)


@pytest.fixture(scope="module")
def real_namespaces(
    real_client: kube.KubeClient, request: pytest.FixtureRequest
) -> Iterator[_Namespaces]:
    """Fresh namespaces for the module (one per test taking ``real_namespace``), deleted after."""
    count = max(1, _tests_taking_a_namespace(request))
    with contextlib.ExitStack() as stack:
        names = [stack.enter_context(fresh_namespace(real_client, "pods")) for _ in range(count)]
        yield _Namespaces(names)


@pytest.fixture
def real_namespace(real_namespaces: _Namespaces) -> str:
    """This test's own namespace among the module's."""
    return real_namespaces.take()


@pytest.fixture(scope="module")
def pod_prometheus(
    tmp_path_factory: pytest.TempPathFactory, realcluster: RealCluster, real_namespaces: list[str]
) -> Iterator[PrometheusServer]:
    """The built Prometheus 3.x, discovering the pods of the module's namespaces."""
    workdir = tmp_path_factory.mktemp("pod-prometheus")
    with discovering_pods(workdir, realcluster, real_namespaces) as server:
        yield server


@pytest.fixture(scope="module")
def pod_fault_proxy(pod_prometheus: PrometheusServer) -> Iterator[FaultProxy]:
    """A proxy in front of ``pod_prometheus``, passing everything through unless told."""
    with FaultProxy(pod_prometheus.url) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def real_operator(
    tmp_path_factory: pytest.TempPathFactory,
    realcluster: RealCluster,
    migrated_database: Path,
    pod_fault_proxy: FaultProxy,
    real_namespaces: list[str],
) -> Iterator[OperatorProcess]:
    """One ``runoperator`` against the session realcluster, watching the module's namespaces."""
    starter = OperatorStarter(
        tmp_path_factory.mktemp("pod-operator"),
        migrated_database,
        kubeconfig=realcluster.kubeconfig,
    )
    try:
        yield starter(prometheus_url=pod_fault_proxy.url, namespaces=list(real_namespaces))
    finally:
        starter.stop_all()


@pytest.fixture
def pods(realcluster: RealCluster, real_namespace: str) -> Iterator[PodServer]:
    """The test's pods' metrics endpoints; every pod healthy (0.1 s, no errors) unless told."""
    api = realcluster.api_client()
    try:
        with PodServer(api, real_namespace, default=Behaviour(latency=0.1)) as server:
            yield server
    finally:
        api.close()
