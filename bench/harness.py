"""The real stack the operator benchmarks run against, started and stopped in one place.

``bench.operator_throughput`` and ``bench.apply_to_status`` call ``stack()``: a devcluster
(or, with ``cluster="real"``, the real control plane of docs/realcluster.md) with the CRD
applied by kubectl, the metrics app and the real Prometheus scraping it, and a migrated SQLite
file, all from the test kit (``testkit``); ``BenchOperator`` runs ``manage.py runoperator``
against them, on a copy of that file or on a shared server database. ``ApiSession`` is a plain
``requests`` client of the cluster, used to create resources in bulk and by the bare-loop
baseline. Nothing here is imported by product code or tests.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from bench.bench_db import migrate
from bench.cpu import named_descendants
from testkit.clusters import Cluster, running_with_crd
from testkit.databases import PostgresServer, RedisServer
from testkit.devcluster import DevCluster
from testkit.manifests import API_VERSION, namespace_manifest
from testkit.metrics_app import MetricsApp
from testkit.operator import OperatorProcess, migrate_database
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until


def percentile(values: Sequence[float], fraction: float) -> float:
    """Return the nearest-rank percentile (``fraction`` in 0..1) of ``values``; NaN if empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


class ApiSession:
    """JSON over HTTPS to the cluster with ``requests`` (admin token, its CA)."""

    def __init__(self, cluster: Cluster) -> None:
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

    def request_counts(self) -> dict[str, float]:
        """Return the API server's ``apiserver_request_total`` so far, by request kind.

        The real API server's own count of what it served (every client: the operators, the
        controllers, kwok), summed over response codes and keyed ``"VERB resource"`` or
        ``"VERB resource/subresource"``. Empty when the server exports no such metric
        (devcluster).
        """
        response = self.session.get(self.base + "/metrics", timeout=30)
        if response.status_code >= 300:
            return {}
        counts: dict[str, float] = {}
        try:
            families = list(text_string_to_metric_families(response.text))
        except ValueError:
            return {}
        for family in families:
            if family.name != "apiserver_request":
                continue
            for sample in family.samples:
                if sample.name != "apiserver_request_total":
                    continue
                labels = sample.labels
                what = labels.get("resource", "") or labels.get("group", "")
                if labels.get("subresource"):
                    what += "/" + labels["subresource"]
                key = f"{labels.get('verb', '?')} {what or '(none)'}"
                counts[key] = counts.get(key, 0.0) + sample.value
        return counts


# The real control plane's processes, by program name, for CPU accounting (docs/realcluster.md).
REAL_COMPONENTS = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok")
# kube-controller-manager's client rate on the real control plane: upstream's 20 requests per
# second (per controller) makes the Deployment controller take ~3.3 min per 1,000 new
# Deployments (docs/performance.md); a large cluster raises it, as this does.
REAL_CONTROLLER_QPS = 200.0


@dataclass(frozen=True)
class Stack:
    workdir: Path
    cluster: DevCluster | RealCluster
    app: MetricsApp
    prometheus: PrometheusServer
    # A migrated SQLite file; copy it for every operator run.
    database_template: Path

    @property
    def kind(self) -> str:
        """``devcluster`` or ``realcluster``: what the reports call the API server."""
        return self.cluster.name


@contextlib.contextmanager
def stack(workdir: Path | None = None, cluster: str = "dev") -> Iterator[Stack]:
    """Start the cluster (``dev`` or ``real``, CRD applied), the metrics app and Prometheus;
    stop them afterwards.

    ``real`` runs the controllers and one kwok node, as a cluster has them; the benchmark's
    Deployments have no pods there (``operator_throughput``), so the node stays empty.
    """
    with contextlib.ExitStack() as exits:
        if workdir is None:
            workdir = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        server: DevCluster | RealCluster
        if cluster == "real":
            server = RealCluster(workdir / "realcluster", controller_qps=REAL_CONTROLLER_QPS)
            exits.enter_context(running_with_crd(server, timeout=RealCluster.default_start_timeout))
        else:
            server = DevCluster(workdir / "devcluster")
            exits.enter_context(running_with_crd(server, timeout=30))
        app = exits.enter_context(MetricsApp())
        prometheus = PrometheusServer(workdir / "prometheus", [app.target])
        prometheus.start()
        exits.callback(prometheus.stop)
        database = migrate_database(workdir / "template.sqlite3")
        # Prometheus applies new scrape targets on a 5 s tick: wait for the first scrape.
        prometheus.wait_for('up{job="metrics-app"}', lambda values: values == [1.0], 30)
        yield Stack(workdir, server, app, prometheus, database)


def server_pids(stack: Stack) -> dict[str, int]:
    """Return the process ids of the API server's processes and Prometheus (CPU accounting).

    devcluster is one process; the real control plane is its launcher's children, each counted
    on its own (the launcher itself only waits).
    """
    if isinstance(stack.cluster, RealCluster):
        found = named_descendants(stack.cluster.pid, REAL_COMPONENTS)
        servers = {name: found[name] for name in REAL_COMPONENTS if name in found}
    else:
        servers = {"devcluster": stack.cluster.pid}
    return {**servers, "prometheus": stack.prometheus.pid}


def create_namespace(api: ApiSession, name: str) -> None:
    api.request("POST", "/api/v1/namespaces", namespace_manifest(name))


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


class BenchOperator(OperatorProcess):
    """The kit's ``OperatorProcess`` as the benchmarks run it: ``workers`` django-q2 workers, a
    copy of the stack's database, and ``start`` returning once this replica leads."""

    # With a thousand analyses a scrape of /metrics takes seconds.
    metrics_timeout = 30.0

    def __init__(
        self,
        workdir: Path,
        *,
        stack: Stack,
        namespaces: Sequence[str],
        workers: int,
        extra_env: Mapping[str, str] | None = None,
        database_url: str = "",
        identity: str = "operator",
        lease_name: str = "bench-operator",
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        database = workdir / "operator.sqlite3"
        env = {"SENTINEL_Q_WORKERS": str(workers), **(extra_env or {})}
        if database_url:
            # A shared server database (the scale-out run): every replica uses the same one.
            env["DATABASE_URL"] = database_url
        else:
            shutil.copyfile(stack.database_template, database)
        super().__init__(
            workdir,
            kubeconfig=stack.cluster.kubeconfig,
            prometheus_url=stack.prometheus.url,
            database=database,
            namespaces=namespaces,
            identity=identity,
            lease_name=lease_name,
            env=env,
        )
        self.database_url = database_url or f"sqlite:///{database}"

    def start(self, *, wait: bool = True, timeout: float = 60, lead: bool = True) -> BenchOperator:
        super().start(wait=wait, timeout=timeout)
        if lead:
            # The first Lease is taken on the first tick; the watch and dispatcher start then.
            wait_until(lambda: self.metric("sentinel_leader") == 1.0, timeout=30, what="leader")
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        return super().stop(sig, timeout)

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


def backends(
    database_url: str, broker_url: str, stack: Stack, exits: contextlib.ExitStack
) -> tuple[str, str, dict[str, int]]:
    """Return the database URL ("" for SQLite), the broker URL ("" for the ORM) and their pids."""
    pids: dict[str, int] = {}
    database = database_url
    if database == "postgres":
        server = exits.enter_context(PostgresServer())
        database = server.url
        # The postmaster's pid heads its pid file; its backends are its children.
        pids["postgres"] = int((server.data / "postmaster.pid").read_text().split()[0])
    if database:
        migrate(database)
    broker = broker_url
    if broker == "redis":
        redis = exits.enter_context(RedisServer(stack.workdir / "redis"))
        broker = redis.url
        if redis.pid is not None:
            pids["redis"] = redis.pid
    return database, broker, pids


def start_operators(
    count: int,
    workers: int,
    *,
    stack: Stack,
    namespace: str,
    database: str,
    broker: str,
    exits: contextlib.ExitStack,
    say: Callable[[str], None],
) -> list[BenchOperator]:
    """Start ``count`` replicas on one database and broker; the first one leads."""
    operators = []
    for index in range(count):
        operator = BenchOperator(
            stack.workdir / f"operator-{index}",
            stack=stack,
            namespaces=[namespace],
            workers=workers,
            extra_env={"SENTINEL_BROKER_URL": broker} if broker else {},
            database_url=database,
            identity=f"operator-{index}",
        )
        say(f"starting runoperator {index} with {workers} workers")
        # The first one leads; the others run workers only (they take tasks from the broker).
        operator.start(lead=index == 0)
        exits.callback(operator.stop)
        operators.append(operator)
    return operators


def feed(app: MetricsApp, apps: list[str], stop: threading.Event, rng: random.Random) -> None:
    """Keep every app's histogram rising (rate() needs it) at a healthy latency."""
    for name in apps:
        app.set(name, 0.01)
        app.observe(name, 0.05, n=0)
    while not stop.wait(1.0):
        for name in apps:
            for _ in range(5):
                app.observe(name, rng.uniform(0.01, 0.1))


def create_all(
    api: ApiSession, namespace: str, objects: list[dict[str, object]], spread: float
) -> None:
    """POST ``objects`` evenly over ``spread`` seconds (at once when 0)."""
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = []
        for index, obj in enumerate(objects):
            delay = start + spread * index / len(objects) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            kind = {"RolloutAnalysis": "rolloutanalyses", "ReplicaSet": "replicasets"}.get(
                str(obj["kind"]), "deployments"
            )
            group = API_VERSION if kind == "rolloutanalyses" else "apps/v1"
            path = f"/apis/{group}/namespaces/{namespace}/{kind}"
            futures.append(pool.submit(api.request, "POST", path, obj))
        for future in futures:
            future.result()
