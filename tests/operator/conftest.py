"""Fixtures for the operator's tests: a devcluster, namespaces, and ``runoperator`` processes.

Everything is real: a devcluster over HTTPS with the CRD applied by kubectl, the session's
Prometheus (through a ``fault_proxy``), and ``python manage.py runoperator`` started as a
subprocess against its own SQLite file. Tests isolate themselves by namespace (each operator
watches only its test's namespace, ``SENTINEL_NAMESPACES``), by ``case`` label in PromQL, and
by Lease name (each operator process gets its own unless told otherwise, so a leftover Lease
never delays the next test).

The sabotage suite builds on ``start_operator`` (a factory: several replicas, restarts, a
ServiceAccount kubeconfig through ``kubeconfig=``), ``operator`` (one process in front of a fresh
``fault_proxy``), ``api_faults`` (devcluster fault injection, cleared afterwards), ``gauge``
(set this test's series and wait until Prometheus has scraped it) and the manifest helpers.
``OperatorProcess`` reads the operator's SQLite file directly (``evaluations``, ``mirror_row``,
``query``) and its ``/metrics`` (``metric``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.testing import DevCluster
from sentinel_cluster import kube
from tests.support.fault_proxy import FaultProxy
from tests.support.metrics_app import MetricsApp
from tests.support.prometheus import PrometheusServer, _die_with_parent, free_port
from tests.support.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"
MANAGE = REPO_ROOT / "manage.py"


# -- resources -----------------------------------------------------------------------------


def gauge_metric(case: str, max_value: float, name: str = "value") -> dict[str, Any]:
    """Return a spec metric reading the metrics app's ``sentinel_test_value{case=...}``."""
    return {
        "name": name,
        "query": f'max(sentinel_test_value{{case="{case}"}})',
        "maxValue": max_value,
    }


def analysis_manifest(
    name: str,
    namespace: str,
    *,
    target: str = "checkout",
    metrics: Sequence[Mapping[str, Any]],
    interval: str = "5s",
    failure_limit: int = 3,
    dry_run: bool = False,
) -> dict[str, Any]:
    return {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"kind": "Deployment", "name": target},
            "metrics": [dict(metric) for metric in metrics],
            "interval": interval,
            "failureLimit": failure_limit,
            "dryRun": dry_run,
        },
    }


def deployment_manifest(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def kubectl_apply(cluster: DevCluster, *objects: Mapping[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([dict(o) for o in objects]))


def condition(resource: Mapping[str, Any], type_: str) -> dict[str, Any]:
    """Return the status condition of ``type_`` (empty dict when absent)."""
    for item in (resource.get("status") or {}).get("conditions") or []:
        if item.get("type") == type_:
            return dict(item)
    return {}


def events_for(client: kube.KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    """Return the core/v1 Events recorded on the RolloutAnalysis ``namespace/name``."""
    items = client.request("GET", kube.events_path(namespace)).get("items") or []
    return [
        item
        for item in items
        if (item.get("involvedObject") or {}).get("kind") == "RolloutAnalysis"
        and (item.get("involvedObject") or {}).get("name") == name
    ]


# -- the cluster ---------------------------------------------------------------------------


def apply_crd(cluster: DevCluster) -> None:
    cluster.kubectl("apply", "-f", str(CRD_PATH))
    wait_until(
        lambda: cluster.kubectl("get", kube.PLURAL, "-A", check=False).returncode == 0,
        timeout=20,
        what="the CRD is served",
    )


@pytest.fixture(scope="session")
def devcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """One in-memory devcluster for the session, with the CRD applied by kubectl."""
    cluster = DevCluster(tmp_path_factory.mktemp("operator-devcluster"))
    cluster.start()
    try:
        apply_crd(cluster)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kube_client(devcluster: DevCluster) -> kube.KubeClient:
    """An admin ``KubeClient`` on the session devcluster."""
    return kube.KubeClient(kube.load_api_client(str(devcluster.kubeconfig)))


@pytest.fixture
def namespace(devcluster: DevCluster, kube_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = f"op-{uuid.uuid4().hex[:10]}"
    kube_client.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        yield name
    finally:
        # A test that stopped the cluster took the namespace with it.
        with contextlib.suppress(kube.KubeError):
            kube_client.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def api_faults(devcluster: DevCluster) -> Iterator[DevCluster]:
    """The session devcluster, for ``inject_fault``; every fault is cleared after the test."""
    try:
        yield devcluster
    finally:
        devcluster.clear_faults()


class GaugeSetter:
    """Set the test's ``sentinel_test_value{case=...}`` and wait until Prometheus has it."""

    def __init__(self, app: MetricsApp, prometheus: PrometheusServer, case: str) -> None:
        self.app, self.prometheus, self.case = app, prometheus, case

    def __call__(self, value: float) -> None:
        self.app.set(self.case, value)
        self.prometheus.wait_for(
            f'sentinel_test_value{{case="{self.case}"}}', lambda values: values == [value], 20
        )


@pytest.fixture
def gauge(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str) -> GaugeSetter:
    """Return a setter for this test's gauge (``gauge_metric(case, ...)`` queries it)."""
    return GaugeSetter(metrics_app, prometheus, case)


# -- the operator process ------------------------------------------------------------------


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for every operator process (migrating once is enough)."""
    path = tmp_path_factory.mktemp("operator-db") / "template.sqlite3"
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{path}")
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "-v0"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    # Fold the WAL into the main file so a plain copy is complete.
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


class OperatorProcess:
    """``manage.py runoperator`` in a child process, with its own database and metrics port."""

    def __init__(
        self,
        workdir: Path,
        *,
        kubeconfig: Path,
        prometheus_url: str,
        database: Path,
        namespaces: Sequence[str] = (),
        lease_name: str | None = None,
        lease_duration: float = 15.0,
        identity: str | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.database = database
        self.metrics_port = free_port()
        self.lease_name = lease_name or f"sentinel-{uuid.uuid4().hex[:8]}"
        self.identity = identity or f"operator-{uuid.uuid4().hex[:6]}"
        self.log_path = self.workdir / f"{self.identity}.log"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{database}",
            "KUBECONFIG": str(kubeconfig),
            "SENTINEL_PROMETHEUS_URL": prometheus_url,
            "SENTINEL_NAMESPACES": ",".join(namespaces),
            "POD_NAME": self.identity,
            "POD_NAMESPACE": "default",
            # Each process its own multiprocess-metrics directory.
            "PROMETHEUS_MULTIPROC_DIR": str(self.workdir / f"{self.identity}-metrics"),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.args = [
            "--metrics-port",
            str(self.metrics_port),
            "--metrics-address",
            "127.0.0.1",
            "--lease-name",
            self.lease_name,
            "--lease-duration",
            str(lease_duration),
            *args,
        ]
        self._process: subprocess.Popen[bytes] | None = None

    # lifecycle

    def start(self, *, wait: bool = True) -> OperatorProcess:
        if self._process is not None:
            raise RuntimeError("the operator is already running")
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(MANAGE), "runoperator", *self.args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                preexec_fn=_die_with_parent,
            )
        if wait:
            wait_until(self._serving, timeout=30, what=f"runoperator serves /metrics\n{self.log}")
        return self

    def _serving(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(f"runoperator exited with {self._process.returncode}:\n{self.log}")
        try:
            self.metrics_text()
        except OSError:
            return False
        return True

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` and return the exit code (SIGKILL after ``timeout``)."""
        process, self._process = self._process, None
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        return int(process.returncode)

    def kill(self) -> None:
        """SIGKILL the main process (its django-q2 children follow through the pipe breaking)."""
        self.stop(signal.SIGKILL)

    def restart(self) -> OperatorProcess:
        self.stop()
        return self.start()

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the operator is not running")
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    # what it exposes

    def metrics_text(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()

    def metric(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """Return the value of one sample of ``/metrics`` (None when absent)."""
        wanted = dict(labels or {})
        for line in self.metrics_text().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            series, _, value = line.rpartition(" ")
            metric_name, _, label_text = series.partition("{")
            if metric_name != name:
                continue
            found = dict(
                part.split("=", 1) for part in label_text.rstrip("}").split(",") if "=" in part
            )
            found = {key: raw.strip('"') for key, raw in found.items()}
            if all(found.get(key) == val for key, val in wanted.items()):
                return float(value)
        return None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a read-only SQL query on the operator's database."""
        connection = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=10)
        connection.row_factory = sqlite3.Row
        try:
            return [dict(row) for row in connection.execute(sql, params)]
        finally:
            connection.close()

    def evaluations(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Return the history rows of ``namespace/name``, oldest first, metric rows attached."""
        rows = self.query(
            "SELECT e.* FROM analyses_evaluation e JOIN analyses_analysis a ON a.id = e.analysis_id"
            " WHERE a.namespace = ? AND a.name = ? ORDER BY e.started_at, e.id",
            (namespace, name),
        )
        for row in rows:
            row["metric_results"] = self.query(
                "SELECT * FROM analyses_metricresult WHERE evaluation_id = ? ORDER BY id",
                (row["id"],),
            )
        return rows

    def mirror_row(self, namespace: str, name: str) -> dict[str, Any] | None:
        rows = self.query(
            "SELECT * FROM analyses_analysis WHERE namespace = ? AND name = ? "
            "ORDER BY deleted_at IS NULL DESC, created_at DESC",
            (namespace, name),
        )
        return rows[0] if rows else None


StartOperator = Callable[..., OperatorProcess]


@pytest.fixture
def start_operator(
    tmp_path: Path, devcluster: DevCluster, migrated_database: Path
) -> Iterator[StartOperator]:
    """Return a factory starting ``runoperator`` processes; all are stopped after the test.

    Keyword arguments go to ``OperatorProcess`` (``prometheus_url`` is required);
    ``database`` defaults to a fresh copy of the migrated template, so pass one process's
    ``database`` to another to run two replicas on one database.
    """
    started: list[OperatorProcess] = []

    def start(*, wait: bool = True, **kwargs: Any) -> OperatorProcess:
        if "database" not in kwargs:
            database = tmp_path / f"operator-{len(started)}.sqlite3"
            shutil.copyfile(migrated_database, database)
            kwargs["database"] = database
        kwargs.setdefault("kubeconfig", devcluster.kubeconfig)
        process = OperatorProcess(tmp_path / "operators", **kwargs)
        started.append(process)
        return process.start(wait=wait)

    try:
        yield start
    finally:
        for process in started:
            process.stop()


@pytest.fixture
def operator(
    start_operator: StartOperator, fault_proxy: FaultProxy, namespace: str
) -> OperatorProcess:
    """One ``runoperator`` watching ``namespace``, asking Prometheus through ``fault_proxy``."""
    return start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace])


# -- sabotage helpers (tests/operator/test_sabotage_*.py) ----------------------------------


def get_analysis(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return client.request("GET", kube.analysis_path(namespace, name))


def wait_condition(
    client: kube.KubeClient,
    namespace: str,
    name: str,
    type_: str,
    reason: str,
    *,
    timeout: float = 15.0,
) -> dict[str, Any]:
    """Wait until condition ``type_`` of ``namespace/name`` has ``reason``; return the resource."""

    def reached() -> dict[str, Any] | None:
        resource = get_analysis(client, namespace, name)
        return resource if condition(resource, type_).get("reason") == reason else None

    return wait_until(reached, timeout=timeout, interval=0.1, what=f"{type_}={reason} on {name}")


def event_reasons(client: kube.KubeClient, namespace: str, name: str) -> list[str]:
    """Return the reasons of the Events on ``namespace/name``, each repeated by its count."""
    reasons: list[str] = []
    for event in events_for(client, namespace, name):
        reasons.extend([str(event["reason"])] * int(event.get("count") or 1))
    return reasons


def queries_for(proxy: FaultProxy, case: str, since: int = 0) -> int:
    """Return how many ``/api/v1/query`` requests mentioning ``case`` the proxy saw."""
    seen = proxy.requests[since:]
    return sum(
        1
        for request in seen
        if request.path == "/api/v1/query"
        and any(case in query for query in request.params.get("query", []))
    )


def wait_rows(
    process: OperatorProcess,
    namespace: str,
    name: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    *,
    timeout: float = 15.0,
    what: str = "",
) -> list[dict[str, Any]]:
    """Poll the history of ``namespace/name`` until ``predicate(rows)`` holds; return the rows."""

    def rows() -> list[dict[str, Any]] | None:
        found = process.evaluations(namespace, name)
        return found if predicate(found) else None

    return wait_until(rows, timeout=timeout, interval=0.1, what=what or f"history of {name}")


def deployment_paused(client: kube.KubeClient, namespace: str, name: str = "checkout") -> bool:
    deployment = client.request("GET", kube.deployment_path(namespace, name))
    return deployment["spec"].get("paused") is True


# -- one operator for a whole test module --------------------------------------------------

# Namespaces the module's operator watches; a module using it has at most this many tests.
SHARED_POOL_SIZE = 10


class SharedOperator:
    """A ``runoperator`` for one test module, watching a pool of namespaces, one per test.

    Starting and stopping an operator costs ~5 s; tests that need no operator of their own
    share this one. Each test takes a fresh namespace of the pool and a ``case`` label, so
    tests still see only their own resources, history rows and queries.
    """

    def __init__(self, process: OperatorProcess, proxy: FaultProxy, pool: Sequence[str]) -> None:
        self.process, self.proxy = process, proxy
        self._free = list(pool)

    def take_namespace(self) -> str:
        if not self._free:
            raise RuntimeError(
                f"The shared operator watches {SHARED_POOL_SIZE} namespaces and all are used; "
                "raise SHARED_POOL_SIZE."
            )
        return self._free.pop(0)


@pytest.fixture(scope="module")
def shared_operator(
    tmp_path_factory: pytest.TempPathFactory,
    devcluster: DevCluster,
    kube_client: kube.KubeClient,
    migrated_database: Path,
    prometheus: PrometheusServer,
) -> Iterator[SharedOperator]:
    """Start one operator (behind its own fault proxy) for the module; stop it afterwards."""
    workdir = tmp_path_factory.mktemp("shared-operator")
    pool = [f"shared-{uuid.uuid4().hex[:10]}" for _ in range(SHARED_POOL_SIZE)]
    for name in pool:
        kube_client.request(
            "POST",
            "/api/v1/namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )
    database = workdir / "operator.sqlite3"
    shutil.copyfile(migrated_database, database)
    with FaultProxy(prometheus.url) as proxy:
        process = OperatorProcess(
            workdir,
            kubeconfig=devcluster.kubeconfig,
            prometheus_url=proxy.url,
            database=database,
            namespaces=pool,
        )
        try:
            yield SharedOperator(process.start(), proxy, pool)
        finally:
            process.stop()
            for name in pool:
                with contextlib.suppress(kube.KubeError):
                    kube_client.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def shared_namespace(
    shared_operator: SharedOperator, kube_client: kube.KubeClient
) -> Iterator[str]:
    """A namespace of the shared operator's pool; its analyses are deleted after the test."""
    namespace = shared_operator.take_namespace()
    shared_operator.proxy.pass_through()
    try:
        yield namespace
    finally:
        shared_operator.proxy.pass_through()
        # Deleted analyses stop being evaluated at once (SPEC §5), so nothing lingers.
        items = kube_client.request("GET", kube.analyses_path(namespace)).get("items") or []
        for item in items:
            with contextlib.suppress(kube.NotFound):
                kube_client.request(
                    "DELETE", kube.analysis_path(namespace, item["metadata"]["name"])
                )


@pytest.fixture
def own_namespace(devcluster: DevCluster, kube_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace, as ``namespace``, for modules that override ``namespace``."""
    name = f"op-{uuid.uuid4().hex[:10]}"
    kube_client.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        yield name
    finally:
        with contextlib.suppress(kube.KubeError):
            kube_client.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def own_fault_proxy(prometheus: PrometheusServer) -> Iterator[FaultProxy]:
    """A fresh proxy, as ``fault_proxy``, for modules that override ``fault_proxy``."""
    with FaultProxy(prometheus.url) as proxy:
        yield proxy
