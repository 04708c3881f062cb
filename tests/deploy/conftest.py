"""Fixtures for the deploy/ tests: the session cluster holding the applied overlay, a namespace
per test, and ``runoperator`` processes under that RBAC.

``deployed`` applies ``deploy/overlays/ha`` for real to the session cluster of the test's kind
(``kube_cluster``: devcluster, and the real kube-apiserver with its RBAC authorizer), once per
kind. Its cluster-scoped objects (the same CRD as crds/, the ClusterRole ``rollout-sentinel``
and its binding) only add to what the other suites use; the sabotaged copies of the RBAC are
made under other names and deleted after each test. Helpers the tests call live in
``tests/deploy/kustomize.py`` and ``testkit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.clusters import (
    Cluster,
    create_token,
    kube_client,
    kubeconfig_for_token,
    wait_crd_served,
)
from testkit.namespaces import fresh_namespace
from testkit.operator import OperatorStarter, StartOperator
from tests.deploy.kustomize import DEPLOY, HOME, Deployed


@pytest.fixture(scope="session")
def deployed(kube_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    """The session cluster with ``kubectl apply -k deploy/overlays/ha`` applied for real."""
    workdir = tmp_path_factory.mktemp("deploy")
    kube_cluster.kubectl("apply", "-k", str(DEPLOY / "overlays" / "ha"))
    wait_crd_served(kube_cluster)
    token = create_token(kube_cluster, HOME, HOME)
    return Deployed(
        cluster=kube_cluster,
        admin=kube_client(kube_cluster),
        token=token,
        kubeconfig=kubeconfig_for_token(kube_cluster, token, workdir / "sa-kubeconfig"),
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
