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
from testkit.manifests import to_yaml
from testkit.namespaces import fresh_namespace
from testkit.operator import OperatorStarter, StartOperator
from tests.deploy.image import built_image
from tests.deploy.kustomize import HOME, OPERATOR_ACCOUNT, Deployed, for_devcluster, render


@pytest.fixture(scope="session")
def deployed(
    cluster_kind: str, kube_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Deployed:
    """The session cluster with deploy/overlays/ha applied for real.

    All of it on the real cluster; on devcluster minus ``NOT_ON_DEVCLUSTER`` (kinds it does
    not serve: NetworkPolicies and admission policies).
    """
    workdir = tmp_path_factory.mktemp("deploy")
    objects = render(kube_cluster, "overlays/ha")
    if cluster_kind == "dev":
        objects = for_devcluster(objects)
    kube_cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects))
    wait_crd_served(kube_cluster)
    token = create_token(kube_cluster, OPERATOR_ACCOUNT, HOME)
    return Deployed(
        cluster=kube_cluster,
        admin=kube_client(kube_cluster),
        token=token,
        kubeconfig=kubeconfig_for_token(kube_cluster, token, workdir / "sa-kubeconfig"),
        objects=tuple(objects),
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


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The image built from the tree, once per run (``tests/deploy/image.py``)."""
    return built_image(tmp_path_factory)
