"""The real stack the operator benchmarks run against, started and stopped in one place.

``bench.operator_throughput`` and ``bench.apply_to_status`` call ``stack()``: a devcluster
with the CRD applied by kubectl, the metrics app and the real Prometheus scraping it, and a
migrated SQLite file; ``OperatorProcess`` runs ``manage.py runoperator`` against them.
``ApiSession`` is a plain ``requests`` client of the devcluster, used to create resources in
bulk and by the bare-loop baseline. Nothing here is imported by product code or tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from demo.prometheus import PrometheusServer, die_with_parent, free_port
from devcluster.testing import DevCluster
from sentinel_cluster import kube
from tests.support.metrics_app import MetricsApp
from tests.support.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent
MANAGE = REPO_ROOT / "manage.py"
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"


def percentile(values: Sequence[float], fraction: float) -> float:
    """Return the nearest-rank percentile (``fraction`` in 0..1) of ``values``; NaN if empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


class ApiSession:
    """JSON over HTTPS to the devcluster with ``requests`` (admin token, its CA)."""

    def __init__(self, cluster: DevCluster) -> None:
        self.base = cluster.url
        self.session = requests.Session()
        # Else REQUESTS_CA_BUNDLE from the environment overrides the session's CA file.
        self.session.trust_env = False
        self.session.verify = str(cluster.ca_file)
        self.session.headers["Authorization"] = f"Bearer {cluster.admin_token}"
        # More pooled connections than threads, so concurrent setup never reconnects.
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=32)
        self.session.mount("https://", adapter)

    def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = self.session.request(method, self.base + path, json=body, timeout=30)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code} {response.text}")
        return dict(response.json())


@dataclass(frozen=True)
class Stack:
    workdir: Path
    cluster: DevCluster
    app: MetricsApp
    prometheus: PrometheusServer
    # A migrated SQLite file; copy it for every operator run.
    database_template: Path


def migrate(path: Path) -> None:
    """Create a migrated SQLite database at ``path`` and fold its WAL into the file."""
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{path}")
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "-v0"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@contextlib.contextmanager
def stack(workdir: Path | None = None) -> Iterator[Stack]:
    """Start devcluster (CRD applied), the metrics app and Prometheus; stop them afterwards."""
    with contextlib.ExitStack() as exits:
        if workdir is None:
            workdir = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        cluster = DevCluster(workdir / "devcluster")
        cluster.start()
        exits.callback(cluster.stop)
        cluster.kubectl("apply", "-f", str(CRD_PATH))
        wait_until(
            lambda: cluster.kubectl("get", kube.PLURAL, "-A", check=False).returncode == 0,
            timeout=30,
            what="the CRD is served",
        )
        app = exits.enter_context(MetricsApp())
        prometheus = PrometheusServer(workdir / "prometheus", [app.target])
        prometheus.start()
        exits.callback(prometheus.stop)
        database = workdir / "template.sqlite3"
        migrate(database)
        # Prometheus applies new scrape targets on a 5 s tick: wait for the first scrape.
        prometheus.wait_for('up{job="metrics-app"}', lambda values: values == [1.0], 30)
        yield Stack(workdir, cluster, app, prometheus, database)


@contextlib.contextmanager
def redis_server(workdir: Path, binary: str = "/usr/bin/redis-server") -> Iterator[str]:
    """Run a throwaway redis-server on a free port; yield its URL (the ``ha`` broker)."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(workdir)]
    with (workdir / "redis.log").open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_until(answers, timeout=20, what="redis-server answers PING")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server_pids(stack: Stack) -> dict[str, int]:
    """Return the process ids of devcluster and Prometheus (for CPU accounting)."""
    # The runners keep their Popen private; the benchmark only reads /proc with the ids.
    pids = {"devcluster": stack.cluster._process, "prometheus": stack.prometheus._process}
    return {name: process.pid for name, process in pids.items() if process is not None}


def create_namespace(api: ApiSession, name: str) -> None:
    api.request(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )


def deployment(name: str, namespace: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def analysis(
    name: str, namespace: str, *, target: str, metrics: Sequence[Mapping[str, Any]], interval: int
) -> dict[str, Any]:
    return {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"kind": "Deployment", "name": target},
            "metrics": [dict(metric) for metric in metrics],
            "interval": f"{interval}s",
            "failureLimit": 3,
        },
    }


def two_metrics(app: str) -> list[dict[str, Any]]:
    """Return the two metrics every benchmark analysis has: a p99 latency and an error gauge."""
    return [
        {
            "name": "p99-latency",
            "query": (
                "histogram_quantile(0.99, sum by (le) "
                f'(rate(http_request_duration_seconds_bucket{{app="{app}"}}[1m])))'
            ),
            "maxValue": 0.25,
        },
        {
            "name": "error-rate",
            "query": f'max(sentinel_test_value{{case="{app}"}})',
            "maxValue": 0.05,
        },
    ]


class OperatorProcess:
    """``manage.py runoperator`` in a child process with its own database and metrics port."""

    def __init__(
        self,
        workdir: Path,
        *,
        stack: Stack,
        namespaces: Sequence[str],
        workers: int,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.database = workdir / "operator.sqlite3"
        self.database.write_bytes(stack.database_template.read_bytes())
        self.metrics_port = free_port()
        self.metrics_dir = workdir / "metrics"
        self.log_path = workdir / "operator.log"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.database}",
            "KUBECONFIG": str(stack.cluster.kubeconfig),
            "SENTINEL_PROMETHEUS_URL": stack.prometheus.url,
            "SENTINEL_NAMESPACES": ",".join(namespaces),
            "SENTINEL_Q_WORKERS": str(workers),
            "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
            "POD_NAMESPACE": "default",
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = ["--metrics-port", str(self.metrics_port), "--metrics-address", "127.0.0.1"]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(MANAGE), "runoperator", *args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                preexec_fn=die_with_parent,
            )
        wait_until(self._serving, timeout=60, what="runoperator serves /metrics")
        # The first Lease is taken on the first tick; the watch and dispatcher start then.
        wait_until(lambda: self.metric("sentinel_leader") == 1.0, timeout=30, what="leader")

    def _serving(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError(f"runoperator exited; see {self.log_path}")
        try:
            self.metrics_text()
        except OSError:
            return False
        return True

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the operator is not running")
        return self._process.pid

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def metrics_text(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode())

    def samples(self, name: str) -> dict[str, float]:
        """Return every sample of ``name`` keyed by its label text (``le="1.0"``, or "")."""
        found: dict[str, float] = {}
        for line in self.metrics_text().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            series, _, value = line.rpartition(" ")
            metric_name, _, labels = series.partition("{")
            if metric_name == name:
                found[labels.rstrip("}")] = float(value)
        return found

    def file_samples(self, name: str) -> dict[str, float]:
        """Like ``samples``, but read from the workers' multiprocess files, not ``/metrics``.

        A scrape of ``/metrics`` runs in the operator's main process, beside the dispatcher
        thread, and reads the per-analysis gauges from the database: with a thousand analyses it
        delays dispatching, so the benchmark must not scrape in the middle of a measurement.
        """
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(self.metrics_dir))
        found: dict[str, float] = {}
        for family in registry.collect():
            for sample in family.samples:
                if sample.name == name:
                    labels = ",".join(f'{key}="{value}"' for key, value in sample.labels.items())
                    found[labels] = float(sample.value)
        return found

    def metric(self, name: str) -> float | None:
        return self.samples(name).get("")

    def connect(self) -> sqlite3.Connection:
        """Return a connection to the operator's database (the bench only reads, bar a burst)."""
        connection = sqlite3.connect(self.database, timeout=30)
        connection.execute("PRAGMA busy_timeout=30000")
        return connection
