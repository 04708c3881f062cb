"""Fixtures for devcluster's own suite: one shared server per session, one namespace per test.

The suite drives devcluster with the real kubectl binary and the official ``kubernetes``
client, so these fixtures only start processes and create namespaces; they never stub
anything. Manifest builders live here too so every test writes resources the same way.
"""

from __future__ import annotations

import copy
import subprocess
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml

from devcluster.testing import DevCluster
from tests.support.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"
GROUP = "sentinel.example.com"
VERSION = "v1alpha1"
PLURAL = "rolloutanalyses"
RA_RESOURCE = f"{PLURAL}.{GROUP}"


def ra_manifest(name: str, namespace: str | None = None, **spec_overrides: Any) -> dict[str, Any]:
    """Return a valid RolloutAnalysis (SPEC §3 example) with ``spec_overrides`` merged in."""
    spec: dict[str, Any] = {
        "target": {"kind": "Deployment", "name": "checkout"},
        "metrics": [
            {
                "name": "p99-latency",
                "query": "histogram_quantile(0.99, rate(http_request_duration_seconds_bucket[5m]))",
                "maxValue": 0.25,
            }
        ],
    }
    spec.update(copy.deepcopy(spec_overrides))
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": metadata,
        "spec": spec,
    }


def deployment_manifest(
    name: str, namespace: str | None = None, image: str = "nginx:1.27"
) -> dict[str, Any]:
    """Return a minimal valid apps/v1 Deployment."""
    metadata: dict[str, Any] = {"name": name, "labels": {"app": name}}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def to_yaml(*objects: dict[str, Any]) -> str:
    """Render objects as a multi-document YAML stream for ``kubectl apply -f -``."""
    return yaml.safe_dump_all(list(objects), sort_keys=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show what kubectl printed when a checked kubectl call fails."""
    report = yield
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, subprocess.CalledProcessError):
        report.sections.append(
            ("kubectl output", f"stdout:\n{error.stdout}\nstderr:\n{error.stderr}")
        )
    return report


def _apply_crd(cluster: DevCluster) -> None:
    cluster.kubectl("apply", "-f", str(CRD_PATH))
    # A real server serves the CRD once Established; poll the way a user would.
    wait_until(
        lambda: cluster.kubectl("get", PLURAL, "-A", check=False).returncode == 0, timeout=20
    )


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """Start one in-memory devcluster for the whole session, with the CRD applied by kubectl."""
    dev = DevCluster(tmp_path_factory.mktemp("devcluster"))
    dev.start()
    try:
        _apply_crd(dev)
        yield dev
    finally:
        dev.stop()


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
    """A fresh namespace for one test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="session")
def persistent_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A separate devcluster keeping its objects in ``--data-dir`` (for restart tests)."""
    root = tmp_path_factory.mktemp("persistent")
    dev = DevCluster(root / "work", data_dir=root / "data")
    dev.start()
    try:
        _apply_crd(dev)
        yield dev
    finally:
        dev.stop()


@pytest.fixture
def persistent_ns(persistent_cluster: DevCluster) -> Iterator[str]:
    """A fresh namespace in the persistent cluster; restart tests share that one server."""
    name = f"p-{uuid.uuid4().hex[:10]}"
    persistent_cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        persistent_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
