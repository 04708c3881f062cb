"""Fixtures of the operator's tests beyond the shared ones: one operator for a whole module.

The shared plugins (``tests/support``) give every test the session ``devcluster``,
``kube_client``, ``namespace``, ``start_operator``, ``operator``, ``api_faults``, ``gauge``,
``prometheus`` and ``fault_proxy``; the helpers the tests call (manifests, ``kubectl_apply``,
conditions, events, history rows) live in ``testkit``. Tests isolate themselves by namespace
(each operator watches only its test's namespace, ``SENTINEL_NAMESPACES``), by ``case`` label in
PromQL, and by Lease name (each operator process gets its own unless told otherwise).

``shared_operator`` is one ``runoperator`` for a module, watching a pool of namespaces;
``shared_namespace`` hands a test one of them. Modules that override ``fault_proxy`` with the
shared one still get a fresh one as ``own_fault_proxy`` (and a fresh namespace as the shared
``own_namespace``).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.fault_proxy import FaultProxy
from testkit.namespaces import create_namespace, delete_namespace, unique_name
from testkit.operator import SHARED_POOL_SIZE, OperatorProcess, SharedOperator
from testkit.prometheus import PrometheusServer


@pytest.fixture(scope="module")
def shared_operator(
    tmp_path_factory: pytest.TempPathFactory,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    migrated_database: Path,
    prometheus: PrometheusServer,
) -> Iterator[SharedOperator]:
    """Start one operator (behind its own fault proxy) for the module; stop it afterwards."""
    workdir = tmp_path_factory.mktemp("shared-operator")
    pool = [create_namespace(kube_client, unique_name("shared")) for _ in range(SHARED_POOL_SIZE)]
    database = workdir / "operator.sqlite3"
    shutil.copyfile(migrated_database, database)
    with FaultProxy(prometheus.url) as proxy:
        process = OperatorProcess(
            workdir,
            kubeconfig=kube_cluster.kubeconfig,
            prometheus_url=proxy.url,
            database=database,
            namespaces=pool,
        )
        try:
            yield SharedOperator(process.start(), proxy, pool)
        finally:
            process.stop()
            for name in pool:
                delete_namespace(kube_client, name)


@pytest.fixture
def shared_namespace(
    shared_operator: SharedOperator, kube_client: kube.KubeClient
) -> Iterator[str]:
    """A namespace of the shared operator's pool; its analyses are deleted after the test."""
    namespace = shared_operator.take_namespace()
    shared_operator.proxy.pass_through()
    try:
        yield namespace
    finally:
        shared_operator.proxy.pass_through()
        # Deleted analyses stop being evaluated at once (docs/operator.md), so nothing lingers.
        items = kube_client.request("GET", kube.analyses_path(namespace)).get("items") or []
        for item in items:
            with contextlib.suppress(kube.NotFound):
                kube_client.request(
                    "DELETE", kube.analysis_path(namespace, item["metadata"]["name"])
                )


@pytest.fixture
def own_fault_proxy(prometheus: PrometheusServer) -> Iterator[FaultProxy]:
    """A fresh proxy, as ``fault_proxy``, for modules that override ``fault_proxy``."""
    with FaultProxy(prometheus.url) as proxy:
        yield proxy
