"""Fixtures for the deploy/ tests: a devcluster holding the applied overlay, a namespace per
test, and ``runoperator`` processes under that RBAC.

The package has its own devcluster (not the operator suite's) because it applies cluster-scoped
objects for real — the CRD, the ClusterRole ``rollout-sentinel`` and its binding — and then
sabotages copies of them; nothing here may leak into other packages' clusters. Helpers the
tests call live in ``tests/deploy/kustomize.py`` and ``testkit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.clusters import create_token, kube_client, kubeconfig_for_token, wait_crd_served
from testkit.devcluster import DevCluster
from testkit.manifests import to_yaml
from testkit.namespaces import fresh_namespace
from testkit.operator import OperatorStarter, StartOperator
from tests.deploy.kustomize import HOME, OPERATOR_ACCOUNT, Deployed, for_devcluster, render


@pytest.fixture(scope="session")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """A fresh devcluster with deploy/overlays/ha applied for real (minus ``NOT_ON_DEVCLUSTER``)."""
    workdir = tmp_path_factory.mktemp("deploy-devcluster")
    with DevCluster(workdir) as cluster:
        objects = for_devcluster(render(cluster, "overlays/ha"))
        cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects))
        wait_crd_served(cluster)
        token = create_token(cluster, OPERATOR_ACCOUNT, HOME)
        yield Deployed(
            cluster=cluster,
            admin=kube_client(cluster),
            token=token,
            kubeconfig=kubeconfig_for_token(cluster, token, workdir / "sa-kubeconfig"),
        )


@pytest.fixture
def namespace(deployed: Deployed) -> Iterator[str]:
    """A fresh namespace for one test's Deployment and analysis, deleted afterwards."""
    with fresh_namespace(deployed.admin, "dep") as name:
        yield name


@pytest.fixture
def start_operator(tmp_path: Path, migrated_database: Path) -> Iterator[StartOperator]:
    """Return a factory for ``runoperator`` processes (all stopped after the test).

    ``kubeconfig`` and ``prometheus_url`` are required. The Lease lives in ``rollout-sentinel``
    (``POD_NAMESPACE``), the only namespace where the leader-election Role grants leases.
    """
    starter = OperatorStarter(tmp_path, migrated_database, env={"POD_NAMESPACE": HOME})
    try:
        yield starter
    finally:
        starter.stop_all()
