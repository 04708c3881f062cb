"""Pytest fixtures for a shared devcluster: the cluster, an admin client, a namespace per test.

Registered for the whole suite by the root ``tests/conftest.py``, so any test package can ask
for them; each is a thin wrapper over ``testkit``. The session's ``devcluster`` has the CRD
applied by kubectl; ``namespace`` (and ``own_namespace``, for modules that override it) is fresh
per test; ``api_faults`` is the devcluster with its injected faults cleared after the test.
Packages that need a cluster of their own (devcluster's suite, the REST API, the UI,
``deploy/``) start it in their conftest with the same kit calls.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sentinel_cluster import kube
from testkit.clusters import kube_client as admin_kube_client
from testkit.clusters import running_with_crd
from testkit.devcluster import DevCluster
from testkit.namespaces import fresh_namespace


@pytest.fixture(scope="session")
def devcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """One in-memory devcluster for the session, with the CRD applied by kubectl."""
    with running_with_crd(DevCluster(tmp_path_factory.mktemp("operator-devcluster"))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kube_client(devcluster: DevCluster) -> kube.KubeClient:
    """An admin ``KubeClient`` on the session devcluster."""
    return admin_kube_client(devcluster)


@pytest.fixture
def namespace(kube_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    with fresh_namespace(kube_client, "op") as name:
        yield name


@pytest.fixture
def own_namespace(kube_client: kube.KubeClient) -> Iterator[str]:
    """The same, for modules that override ``namespace`` (with the shared operator's pool)."""
    with fresh_namespace(kube_client, "op") as name:
        yield name


@pytest.fixture
def api_faults(devcluster: DevCluster) -> Iterator[DevCluster]:
    """The session devcluster, for ``inject_fault``; every fault is cleared after the test."""
    with devcluster.faults_cleared_after():
        yield devcluster
