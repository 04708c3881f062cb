"""Fixtures for the deploy/ tests: kustomize rendering, a devcluster holding the applied
overlay, ServiceAccount kubeconfigs and ``runoperator`` processes under that RBAC.

The package has its own devcluster (not the operator suite's) because it applies cluster-scoped
objects for real — the CRD, the ClusterRole ``rollout-sentinel`` and its binding — and then
sabotages copies of them; nothing here may leak into other packages' clusters.
"""

from __future__ import annotations

import base64
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.testing import DevCluster
from sentinel_cluster import kube
from tests.operator.conftest import MANAGE, OperatorProcess, wait_until

__all__ = ["MANAGE", "wait_until"]  # re-exported for this package's tests

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY = REPO_ROOT / "deploy"
OVERLAYS = ("single", "ha")
HOME = "rollout-sentinel"  # the namespace and ServiceAccount name of deploy/base


def render(cluster: DevCluster, directory: str) -> list[dict[str, Any]]:
    """Render ``deploy/<directory>`` with kubectl's built-in kustomize; return the objects."""
    text = cluster.kubectl("kustomize", str(DEPLOY / directory)).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def dump(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def kubeconfig_for_token(cluster: DevCluster, token: str, path: Path) -> Path:
    """Write a kubeconfig with the admin's server and CA but authenticating as ``token``."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "devcluster", "cluster": server}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "devcluster", "user": "sa"}}],
        "current-context": "sa",
    }
    # The CA really is the admin's: kubectl and the Python client verify the server with it.
    assert base64.b64decode(server["certificate-authority-data"]).startswith(b"-----BEGIN")
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass(frozen=True)
class Deployed:
    """The devcluster with the ``ha`` overlay applied, and the operator's identity in it."""

    cluster: DevCluster
    admin: kube.KubeClient
    token: str
    kubeconfig: Path


def create_token(cluster: DevCluster, name: str, namespace: str = HOME) -> str:
    return cluster.kubectl("create", "token", name, "-n", namespace).stdout.strip()


@pytest.fixture(scope="session")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """A fresh devcluster with ``kubectl apply -k deploy/overlays/ha`` applied for real."""
    workdir = tmp_path_factory.mktemp("deploy-devcluster")
    cluster = DevCluster(workdir)
    cluster.start()
    try:
        cluster.kubectl("apply", "-k", str(DEPLOY / "overlays" / "ha"))
        wait_until(
            lambda: cluster.kubectl("get", "rolloutanalyses", "-A", check=False).returncode == 0,
            timeout=20,
            what="the CRD applied with the overlay is served",
        )
        token = create_token(cluster, HOME)
        yield Deployed(
            cluster=cluster,
            admin=kube.KubeClient(kube.load_api_client(str(cluster.kubeconfig))),
            token=token,
            kubeconfig=kubeconfig_for_token(cluster, token, workdir / "sa-kubeconfig"),
        )
    finally:
        cluster.stop()


@pytest.fixture
def namespace(deployed: Deployed) -> Iterator[str]:
    """A fresh namespace for one test's Deployment and analysis, deleted afterwards."""
    name = f"dep-{uuid.uuid4().hex[:10]}"
    deployed.cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        deployed.cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file that each operator process gets a copy of."""
    path = tmp_path_factory.mktemp("deploy-db") / "template.sqlite3"
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "-v0"],
        env={**os.environ, "DATABASE_URL": f"sqlite:///{path}"},
        check=True,
        capture_output=True,
        timeout=120,
    )
    # Fold the WAL into the main file so a plain copy is complete.
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


StartOperator = Callable[..., OperatorProcess]


@pytest.fixture
def start_operator(tmp_path: Path, sqlite_template: Path) -> Iterator[StartOperator]:
    """Return a factory for ``runoperator`` processes (all stopped after the test).

    The Lease lives in ``rollout-sentinel`` (``POD_NAMESPACE``), the only namespace where the
    leader-election Role grants leases.
    """
    started: list[OperatorProcess] = []

    def start(*, kubeconfig: Path, prometheus_url: str, **kwargs: Any) -> OperatorProcess:
        database = kwargs.pop("database", None)
        if database is None:
            database = tmp_path / f"operator-{len(started)}.sqlite3"
            shutil.copyfile(sqlite_template, database)
        env = {"POD_NAMESPACE": HOME, **kwargs.pop("env", {})}
        process = OperatorProcess(
            tmp_path / "operators",
            kubeconfig=kubeconfig,
            prometheus_url=prometheus_url,
            database=database,
            env=env,
            **kwargs,
        )
        started.append(process)
        return process.start()

    try:
        yield start
    finally:
        for process in started:
            process.stop()
