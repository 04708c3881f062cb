"""Fixtures for the REST API tests: a real devcluster, the live Django server, API users.

Everything is real: the API is called over HTTP (``requests``) on pytest-django's
``live_server``, which writes to a devcluster over HTTPS through ``analyses.services``; the
tests point the web app at that cluster through the ``SENTINEL_KUBECONFIG`` setting and check
the cluster with kubectl or a ``KubeClient``. Each test works in a fresh namespace.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from analyses import tokens
from devcluster.testing import DevCluster
from sentinel_cluster import kube
from tests.support.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"

_users = itertools.count(1)


def spec(target: str = "checkout", **overrides: Any) -> dict[str, Any]:
    """Return a valid spec (SPEC §3's example), with ``overrides`` replacing top-level keys."""
    return {
        "target": {"kind": "Deployment", "name": target},
        "metrics": [
            {
                "name": "p99-latency",
                "query": 'histogram_quantile(0.99, rate(http_seconds_bucket{app="x"}[5m]))',
                "maxValue": 0.25,
            }
        ],
        **overrides,
    }


class Api:
    """Requests to ``/api/v1/`` of the live server, as one user."""

    def __init__(self, base: str, headers: Mapping[str, str] | None = None) -> None:
        self.base = base
        # A fresh connection per request, announced as such: the live server answers a
        # kept-alive connection ~40 ms late (Nagle's algorithm meets delayed ACKs), and does
        # not echo "Connection: close", so a pooled connection would be reused after it closed.
        self.headers = {"Connection": "close", **(headers or {})}

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Send ``method`` to ``path`` (relative to ``/api/v1/``, or an absolute link)."""
        kwargs.setdefault("timeout", 30)
        kwargs["headers"] = {**self.headers, **kwargs.get("headers", {})}
        url = path if path.startswith("http") else self.base + path
        return requests.request(method, url, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, **kwargs)


MakeApi = Callable[..., Api]


def start_cluster(workdir: Path) -> DevCluster:
    """Start a devcluster with the RolloutAnalysis CRD applied by kubectl."""
    cluster = DevCluster(workdir)
    cluster.start()
    try:
        cluster.kubectl("apply", "-f", str(CRD_PATH))
        wait_until(
            lambda: cluster.kubectl("get", kube.PLURAL, "-A", check=False).returncode == 0,
            timeout=20,
            what="the CRD is served",
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def api_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """The session's devcluster for the API tests; tests never stop it (see ``start_cluster``)."""
    cluster = start_cluster(tmp_path_factory.mktemp("api-devcluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def cluster_client(api_cluster: DevCluster) -> kube.KubeClient:
    """An admin ``KubeClient`` on the session devcluster, for the tests' own checks."""
    return kube.KubeClient(kube.load_api_client(str(api_cluster.kubeconfig)))


@pytest.fixture(autouse=True)
def _web_app_uses_cluster(settings: Any, api_cluster: DevCluster) -> None:
    settings.SENTINEL_KUBECONFIG = str(api_cluster.kubeconfig)


@pytest.fixture
def namespace(api_cluster: DevCluster, cluster_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = f"api-{uuid.uuid4().hex[:10]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    cluster_client.request("POST", "/api/v1/namespaces", body=body)
    try:
        yield name
    finally:
        with contextlib.suppress(kube.KubeError):
            cluster_client.request("DELETE", f"/api/v1/namespaces/{name}")


def make_user(*codenames: str, is_superuser: bool = False) -> User:
    """Create a user holding the ``analyses`` permissions ``codenames`` (e.g. view_analysis)."""
    user = User.objects.create_user(
        f"user{next(_users)}", password="pw-for-tests", is_superuser=is_superuser
    )
    if codenames:
        permissions = Permission.objects.filter(
            content_type__app_label="analyses", codename__in=codenames
        )
        assert permissions.count() == len(codenames), codenames
        user.user_permissions.add(*permissions)
    return user


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


ALL_PERMISSIONS = ("view_analysis", "add_analysis", "change_analysis", "delete_analysis")


@pytest.fixture
def api(make_api: MakeApi) -> Api:
    """An API session of a user holding every permission on analyses."""
    return make_api(*ALL_PERMISSIONS)


def kubectl_json(cluster: DevCluster, *args: str) -> dict[str, Any]:
    """Run ``kubectl get ... -o yaml`` and return the object."""
    return yaml.safe_load(cluster.kubectl("get", *args, "-o", "yaml").stdout)


def deployment(
    name: str, namespace: str, *, annotations: Mapping[str, str] | None = None, paused: bool = False
) -> dict[str, Any]:
    """Return a small Deployment manifest."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations or {})},
        "spec": {
            "replicas": 1,
            "paused": paused,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }
