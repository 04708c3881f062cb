"""Fixtures for the REST API tests: the session's clusters, the live Django server, API users.

Everything is real: the API is called over HTTP (``requests``) on pytest-django's
``live_server``, which writes to a cluster over HTTPS through ``analyses.services``; the tests
point the web app at that cluster through the ``SENTINEL_KUBECONFIG`` setting and check the
cluster with kubectl or a ``KubeClient``. Each test works in a fresh namespace. A test that
takes ``namespace`` or ``api_cluster`` reaches the cluster and runs on both clusters
(``kube_cluster``: devcluster and the real kube-apiserver); the injected 503/422 tests take
``api_faults`` and run on devcluster only; the rest never reach a cluster and talk to the
session devcluster if they do. ``Api`` and
``make_user`` are in ``tests/api/client.py``, manifests and kubectl helpers in ``testkit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from accounts import tokens
from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.namespaces import fresh_namespace
from tests.api.client import ALL_PERMISSIONS, Api, MakeApi, make_user


@pytest.fixture(scope="session")
def api_cluster(kube_cluster: Cluster) -> Cluster:
    """The session cluster of this test's kind (CRD applied); tests never stop it."""
    return kube_cluster


@pytest.fixture(scope="session")
def cluster_client(kube_client: kube.KubeClient) -> kube.KubeClient:
    """An admin ``KubeClient`` on that cluster, for the tests' own checks."""
    return kube_client


@pytest.fixture(autouse=True)
def _web_app_uses_cluster(settings: Any, request: pytest.FixtureRequest) -> None:
    # Looked up by name: an autouse fixture taking ``kube_cluster`` would run every API test
    # on both clusters, also those that never reach one.
    name = "kube_cluster" if "cluster_kind" in request.fixturenames else "devcluster"
    cluster: Cluster = request.getfixturevalue(name)
    settings.SENTINEL_KUBECONFIG = str(cluster.kubeconfig)


@pytest.fixture
def namespace(cluster_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    with fresh_namespace(cluster_client, "api") as name:
        yield name


@pytest.fixture
def make_api(live_server: Any) -> MakeApi:
    """Return a factory of ``Api`` sessions authenticated by a fresh token of a fresh user.

    ``make_api("view_analysis", ...)`` grants those permissions; ``make_api(None)`` sends no
    credentials at all; ``keyword="Bearer"`` uses the other header spelling.
    """
    base = f"{live_server.url}/api/v1/"

    def make(*codenames: str | None, keyword: str = "Token") -> Api:
        if codenames == (None,):
            return Api(base)
        user = make_user(*[c for c in codenames if c])
        issued = tokens.issue(user, now=timezone.now())
        return Api(base, {"Authorization": f"{keyword} {issued.plaintext}"})

    return make


@pytest.fixture
def api(make_api: MakeApi) -> Api:
    """An API session of a user holding every permission on analyses."""
    return make_api(*ALL_PERMISSIONS)
