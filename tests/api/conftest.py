"""Fixtures for the REST API tests: a real devcluster, the live Django server, API users.

Everything is real: the API is called over HTTP (``requests``) on pytest-django's
``live_server``, which writes to a devcluster over HTTPS through ``analyses.services``; the
tests point the web app at that cluster through the ``SENTINEL_KUBECONFIG`` setting and check
the cluster with kubectl or a ``KubeClient``. Each test works in a fresh namespace. ``Api`` and
``make_user`` are in ``tests/api/client.py``, manifests and kubectl helpers in ``testkit``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from analyses import tokens
from sentinel_cluster import kube
from testkit.clusters import kube_client, running_with_crd
from testkit.devcluster import DevCluster
from testkit.namespaces import fresh_namespace
from tests.api.client import ALL_PERMISSIONS, Api, MakeApi, make_user


@pytest.fixture(scope="session")
def api_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """The session's devcluster for the API tests (CRD applied); tests never stop it."""
    with running_with_crd(DevCluster(tmp_path_factory.mktemp("api-devcluster"))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_client(api_cluster: DevCluster) -> kube.KubeClient:
    """An admin ``KubeClient`` on the session devcluster, for the tests' own checks."""
    return kube_client(api_cluster)


@pytest.fixture(autouse=True)
def _web_app_uses_cluster(settings: Any, api_cluster: DevCluster) -> None:
    settings.SENTINEL_KUBECONFIG = str(api_cluster.kubeconfig)


@pytest.fixture
def namespace(api_cluster: DevCluster, cluster_client: kube.KubeClient) -> Iterator[str]:
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
