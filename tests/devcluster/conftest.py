"""Fixtures for devcluster's own suite: one shared server per session, one namespace per test.

The suite drives devcluster with the real kubectl binary and the official ``kubernetes``
client, so these fixtures only start processes and create namespaces; they never stub
anything. Manifest builders are ``testkit.manifests``'s, so every test writes resources the
same way.
"""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes.client
import pytest

from testkit.clusters import kube_client, running_with_crd
from testkit.devcluster import DevCluster
from testkit.manifests import namespace_manifest
from testkit.namespaces import fresh_namespace, unique_name


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """Start one in-memory devcluster for the whole session, with the CRD applied by kubectl."""
    with running_with_crd(DevCluster(tmp_path_factory.mktemp("devcluster"))) as dev:
        yield dev


@pytest.fixture(scope="session")
def admin_api(cluster: DevCluster) -> Iterator[kubernetes.client.ApiClient]:
    """An admin ``ApiClient`` shared by the session."""
    client = cluster.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def custom(admin_api: kubernetes.client.ApiClient) -> kubernetes.client.CustomObjectsApi:
    """CustomObjectsApi as admin."""
    return kubernetes.client.CustomObjectsApi(admin_api)


@pytest.fixture
def ns(cluster: DevCluster, admin_api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (with the official client)."""
    name = unique_name("t")
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespace(namespace_manifest(name))
    try:
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="session")
def persistent_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A separate devcluster keeping its objects in ``--data-dir`` (for restart tests)."""
    root = tmp_path_factory.mktemp("persistent")
    with running_with_crd(DevCluster(root / "work", data_dir=root / "data")) as dev:
        yield dev


@pytest.fixture
def persistent_ns(persistent_cluster: DevCluster) -> Iterator[str]:
    """A fresh namespace in the persistent cluster; restart tests share that one server."""
    with fresh_namespace(kube_client(persistent_cluster), "p") as name:
        yield name
