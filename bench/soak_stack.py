"""The stack a soak run breaks: cluster, Prometheus behind the fault proxy, PostgreSQL, Redis,
two operator replicas and the web app, all started with the test kit.

``bench.soak`` enters ``soak_stack(...)``; ``Replica`` wraps one ``runoperator`` (the kit's
``OperatorProcess``) with whether the run expects it to be running, so the sampler can tell a
process the run killed from one that died on its own. ``ClusterApi`` is a plain ``requests``
client of the cluster with short timeouts, for sampling while the API server may be down.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench.bench_db import manage
from bench.soak_plan import (
    NOTIFY_ATTEMPTS,
    NOTIFY_CHANNEL,
    NOTIFY_OUTAGE_AFTER,
    NOTIFY_RETRY_AFTER,
    NOTIFY_RETRY_MAX,
    NOTIFY_TIMEOUT,
    RECEIVER_HANG_SECONDS,
)
from sentinel_cluster import kube
from sentinel_site.config import DEFAULT_CLAIM_TIMEOUT
from testkit.clusters import Cluster, running_with_crd, wait_crd_served
from testkit.databases import PostgresServer, RedisServer
from testkit.devcluster import DevCluster
from testkit.fault_proxy import FaultProxy
from testkit.launcher import ClusterLauncher
from testkit.metrics_app import MetricsApp
from testkit.operator import OperatorProcess
from testkit.paths import REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.site_env import with_defaults
from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver

LEASE_SECONDS = 15.0


_USER_SCRIPT = """
from django.contrib.auth.models import User
User.objects.create_superuser("soak", password="soak-not-used")
"""


class Replica:
    """One operator replica and whether the run wants it running now."""

    def __init__(self, process: OperatorProcess) -> None:
        self.process = process
        self.expected = False
        # Held while the run stops or starts it, so the sampler does not see a half-done state.
        self.lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.process.identity

    def start(self) -> None:
        with self.lock:
            self.process.start(wait=True, timeout=120)
            self.expected = True

    def stop(self, sig: int) -> int:
        with self.lock:
            self.expected = False
            return self.process.stop(sig, timeout=60)

    def is_leader(self) -> bool:
        if not self.process.running:
            return False
        try:
            return self.process.metric("sentinel_leader") == 1.0
        except OSError:
            return False


@dataclass
class Stack:
    workdir: Path
    cluster: ClusterLauncher
    app: MetricsApp
    prometheus: PrometheusServer
    proxy: FaultProxy
    postgres: PostgresServer
    redis: RedisServer
    replicas: list[Replica]
    web: ChildProcess
    web_url: str
    token: str
    env: dict[str, str]
    # Held by a fault that sets the proxy's mode for its whole length.
    proxy_lock: threading.Lock = field(default_factory=threading.Lock)
    # The JSON webhook of the one notification channel (default: true, so every analysis).
    receiver: WebhookReceiver | None = None

    def db(self, sql: str, params: tuple[Any, ...] = (), *, with_columns: bool = False) -> Any:
        """Run one statement on the operators' PostgreSQL database; return its rows."""
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=self.postgres.port,
            user=self.postgres.user,
            password=self.postgres.password,
            dbname=self.postgres.database,
            autocommit=True,
            connect_timeout=10,
        ) as connection:
            cursor = connection.execute(sql, params or None)
            if cursor.description is None:
                return []
            rows = cursor.fetchall()
            if not with_columns:
                return rows
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in rows]

    def postgres_pid(self) -> int | None:
        try:
            return int((self.postgres.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def restart_cluster(self, down_seconds: float) -> None:
        """Stop the API server, wait, start it again (same port, data, CA, tokens)."""
        self.cluster.stop()
        time.sleep(down_seconds)
        self.cluster.start()
        wait_crd_served(self.cluster, timeout=120)


def make_cluster(kind: str, workdir: Path) -> ClusterLauncher:
    if kind == "devcluster":
        return DevCluster(workdir / "cluster", data_dir=workdir / "cluster-data")
    return RealCluster(workdir / "cluster", data_dir=workdir / "cluster-data")


def _web(workdir: Path, env: dict[str, str]) -> tuple[ChildProcess, str]:
    port = free_port()
    process = ChildProcess(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "--config",
            "python:sentinel_site.gunicorn_conf",
            "sentinel_site.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ],
        log=workdir / "web.log",
        env=env,
        cwd=REPO_ROOT,
        name="web",
    )
    process.start()
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if not process.running:
            raise RuntimeError(f"gunicorn exited; see {workdir / 'web.log'}")
        try:
            return requests.get(f"{url}/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    wait_until(healthy, timeout=120, what="the web app answers /healthz")
    return process, url


def _notify_env(workdir: Path, receiver: WebhookReceiver) -> dict[str, str]:
    """Return the notification settings of every process: one default JSON webhook channel.

    Short on purpose (docs/reliability.md): Prometheus faults of seconds become outages that
    send MetricsUnavailable and Recovered, and a receiver down for a fault's length is retried
    within it, or exhausts the tries and is recorded failed.
    """
    config = workdir / "notify.yaml"
    config.write_text(
        "channels:\n"
        f"  - name: {NOTIFY_CHANNEL}\n"
        f"    url: {receiver.apprise_url}\n"
        "    default: true\n"
    )
    return {
        "SENTINEL_NOTIFY_CONFIG": str(config),
        "SENTINEL_NOTIFY_OUTAGE_AFTER": f"{NOTIFY_OUTAGE_AFTER:g}s",
        "SENTINEL_NOTIFY_ATTEMPTS": str(NOTIFY_ATTEMPTS),
        "SENTINEL_NOTIFY_RETRY_AFTER": f"{NOTIFY_RETRY_AFTER:g}s",
        "SENTINEL_NOTIFY_RETRY_MAX": f"{NOTIFY_RETRY_MAX:g}s",
        "SENTINEL_NOTIFY_TIMEOUT": f"{NOTIFY_TIMEOUT:g}s",
    }


@contextlib.contextmanager
def soak_stack(kind: str, workdir: Path, namespace: str, *, workers: int) -> Iterator[Stack]:
    """Start everything but the operators' replicas (they are created, not started); stop all."""
    with contextlib.ExitStack() as exits:
        cluster = exits.enter_context(running_with_crd(make_cluster(kind, workdir), timeout=120))
        app = exits.enter_context(MetricsApp())
        prometheus = PrometheusServer(workdir / "prometheus", [app.target])
        prometheus.start()
        exits.callback(prometheus.stop)
        proxy = exits.enter_context(FaultProxy(prometheus.url))
        postgres = exits.enter_context(PostgresServer())
        redis = exits.enter_context(RedisServer(workdir / "redis"))
        receiver = WebhookReceiver(hang_seconds=RECEIVER_HANG_SECONDS).start()
        exits.callback(receiver.stop)
        notify = _notify_env(workdir, receiver)
        env = {
            **with_defaults(os.environ),
            "DATABASE_URL": postgres.url,
            "SENTINEL_BROKER_URL": redis.url,
            "KUBECONFIG": str(cluster.kubeconfig),
            "SENTINEL_NAMESPACES": namespace,
            "SENTINEL_ALLOWED_HOSTS": "127.0.0.1,localhost",
            **notify,
        }
        manage(env, "migrate", "--no-input", "-v0")
        manage(env, "shell", "-c", _USER_SCRIPT)
        token = manage(env, "create_api_token", "soak").strip()
        lease = f"sentinel-soak-{os.getpid()}"
        replicas = [
            Replica(
                OperatorProcess(
                    workdir / "operators",
                    kubeconfig=cluster.kubeconfig,
                    prometheus_url=proxy.url,
                    # Unused: DATABASE_URL in env names PostgreSQL.
                    database=workdir / "unused.sqlite3",
                    namespaces=[namespace],
                    lease_name=lease,
                    lease_duration=LEASE_SECONDS,
                    identity=f"operator-{index}",
                    env={
                        "DATABASE_URL": postgres.url,
                        "SENTINEL_BROKER_URL": redis.url,
                        "SENTINEL_Q_WORKERS": str(workers),
                        # What soak_faults and soak_invariants expect, whatever the caller's
                        # environment says.
                        "SENTINEL_CLAIM_TIMEOUT": str(DEFAULT_CLAIM_TIMEOUT),
                        **notify,
                    },
                )
            )
            for index in range(2)
        ]
        for replica in replicas:
            replica.process.metrics_timeout = 30.0
            exits.callback(replica.stop, 15)
        web, web_url = _web(workdir, env)
        exits.callback(web.stop, timeout=30)
        yield Stack(
            workdir,
            cluster,
            app,
            prometheus,
            proxy,
            postgres,
            redis,
            replicas,
            web,
            web_url,
            token,
            env,
            receiver=receiver,
        )


class ClusterApi:
    """GETs against the cluster with short timeouts; ``None`` when it cannot answer."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.session = requests.Session()
        self.session.trust_env = False

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            response = self.session.get(
                self.cluster.url + path,
                headers={"Authorization": f"Bearer {self.cluster.admin_token}"},
                verify=str(self.cluster.ca_file),
                timeout=5,
            )
        except requests.RequestException:
            return None
        if response.status_code != 200:
            return None
        return dict(response.json())

    def analyses(self, namespace: str) -> dict[str, tuple[str, dict[str, Any]]] | None:
        found = self.get(kube.analyses_path(namespace))
        if found is None:
            return None
        return {
            item["metadata"]["name"]: (item["metadata"]["uid"], item.get("status") or {})
            for item in found.get("items") or []
        }

    def deployments(self, namespace: str) -> dict[str, tuple[str, bool, str]] | None:
        found = self.get(f"/apis/apps/v1/namespaces/{namespace}/deployments")
        if found is None:
            return None
        result = {}
        for item in found.get("items") or []:
            annotations = item["metadata"].get("annotations") or {}
            result[item["metadata"]["name"]] = (
                item["metadata"]["uid"],
                (item.get("spec") or {}).get("paused") is True,
                annotations.get("sentinel.example.com/paused-by", ""),
            )
        return result

    def events(self, namespace: str) -> list[dict[str, Any]]:
        found = self.get(kube.events_path(namespace))
        return list((found or {}).get("items") or [])
