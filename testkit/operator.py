"""Run ``manage.py runoperator`` in child processes, each on its own copy of a migrated database.

``migrate_database`` makes the template once; ``OperatorProcess`` is one operator (its own
SQLite copy, ``/metrics`` port, Lease name and identity) whose history rows (``evaluations``,
``mirror_row``, ``query``) and ``/metrics`` samples (``metric``, ``samples``) tests read
directly; ``OperatorStarter`` starts several for one test and stops them all; ``ProxiedStart``
starts them watching the test's namespace through its fault proxy; ``SharedOperator`` is one
operator watching a pool of namespaces, shared by a test module. Used by the fixtures of
``tests/support`` and ``tests/operator``, ``tests/deploy`` and ``bench.harness``.
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.fault_proxy import FaultProxy
from testkit.paths import MANAGE, REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess
from testkit.site_env import with_defaults
from testkit.waiting import wait_until


def migrate_database(path: Path) -> Path:
    """Create a migrated SQLite database at ``path``, fold its WAL into the file; return it."""
    env = with_defaults(dict(os.environ, DATABASE_URL=f"sqlite:///{path}"))
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "-v0"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    # Fold the WAL into the main file so a plain copy is complete.
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


class OperatorProcess:
    """``manage.py runoperator`` in a child process, with its own database and metrics port."""

    # Seconds a read of /metrics may take. Prometheus's own default scrape timeout is 10 s; a
    # read beside another copy of the suite (load 30-47 on two cores) took more than 5.
    metrics_timeout = 30.0

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
        # Each process its own multiprocess-metrics directory.
        self.metrics_dir = self.workdir / f"{self.identity}-metrics"
        self.env = {
            **with_defaults(os.environ),
            "DATABASE_URL": f"sqlite:///{database}",
            "KUBECONFIG": str(kubeconfig),
            "SENTINEL_PROMETHEUS_URL": prometheus_url,
            "SENTINEL_NAMESPACES": ",".join(namespaces),
            "POD_NAME": self.identity,
            "POD_NAMESPACE": "default",
            "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
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
        self._child: ChildProcess | None = None

    # lifecycle

    def start(self, *, wait: bool = True, timeout: float = 90) -> OperatorProcess:
        """Start it; with ``wait``, return once it serves ``/metrics``.

        ``timeout`` bounds a start that fails; a start took over 30 s beside another copy of
        the suite (docs/testkit.md#parallel-runs).
        """
        if self._child is not None:
            raise RuntimeError("the operator is already running")
        self._child = ChildProcess(
            [sys.executable, str(MANAGE), "runoperator", *self.args],
            log=self.log_path,
            env=self.env,
            cwd=REPO_ROOT,
            name="runoperator",
        )
        self._child.start()
        if wait:
            wait_until(
                self._serving,
                timeout=timeout,
                what=lambda: f"runoperator serves /metrics\n{self.log}",
            )
        return self

    def _serving(self) -> bool:
        if self._child is not None and self._child.returncode is not None:
            raise AssertionError(f"runoperator exited with {self._child.returncode}:\n{self.log}")
        try:
            self.metrics_text()
        except OSError:
            return False
        return True

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` and return the exit code (SIGKILL after ``timeout``)."""
        child, self._child = self._child, None
        if child is None:
            return 0
        code = child.stop(sig, timeout=timeout)
        return int(code or 0)

    def kill(self) -> None:
        """SIGKILL the main process (its django-q2 children follow through the pipe breaking)."""
        self.stop(signal.SIGKILL)

    def restart(self) -> OperatorProcess:
        self.stop()
        return self.start()

    @property
    def pid(self) -> int:
        if self._child is None:
            raise RuntimeError("the operator is not running")
        return self._child.pid

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.running

    @property
    def exited(self) -> bool:
        """Return whether it was started and has exited without ``stop`` (a crash)."""
        return self._child is not None and self._child.returncode is not None

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    # what it exposes

    def metrics_text(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=self.metrics_timeout) as response:
            return str(response.read().decode())

    def samples(self, name: str, text: str | None = None) -> dict[str, float]:
        """Return every sample of ``name`` keyed by its label text (``le="1.0"``, or "").

        ``text`` is one scrape (``metrics_text()``) to read several samples from at one instant.
        """
        return {
            label_text: value
            for metric_name, label_text, value in _parse_samples(text or self.metrics_text())
            if metric_name == name
        }

    def metric(
        self, name: str, labels: Mapping[str, str] | None = None, text: str | None = None
    ) -> float | None:
        """Return the value of one sample of ``/metrics`` (None when absent), or of ``text``."""
        wanted = dict(labels or {})
        for label_text, value in self.samples(name, text).items():
            found = dict(part.split("=", 1) for part in label_text.split(",") if "=" in part)
            found = {key: raw.strip('"') for key, raw in found.items()}
            if all(found.get(key) == val for key, val in wanted.items()):
                return value
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


def _parse_samples(text: str) -> list[tuple[str, str, float]]:
    """Return (name, label text, value) of every sample in Prometheus exposition ``text``."""
    found = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        metric_name, _, label_text = series.partition("{")
        found.append((metric_name, label_text.rstrip("}"), float(value)))
    return found


StartOperator = Callable[..., OperatorProcess]


@dataclass(frozen=True)
class ProxiedStart:
    """Start ``runoperator`` processes watching one namespace, asking Prometheus via a proxy.

    For tests that hold or break the operator's Prometheus queries through ``fault_proxy`` and
    set the rest through environment variables: ``start(SENTINEL_Q_WORKERS="1")``.
    """

    start_operator: StartOperator
    fault_proxy: FaultProxy
    namespace: str

    def __call__(self, **env: str) -> OperatorProcess:
        return self.start_operator(
            prometheus_url=self.fault_proxy.url, namespaces=[self.namespace], env=env
        )


class OperatorStarter:
    """Start ``runoperator`` processes for one test; ``stop_all`` stops every one of them.

    Keyword arguments go to ``OperatorProcess``, over ``defaults`` (``env`` is merged);
    ``database`` defaults to a fresh copy of ``template``, so pass one process's ``database``
    to another to run two replicas on one database.
    """

    def __init__(self, workdir: Path, template: Path, **defaults: Any) -> None:
        self.workdir = workdir
        self.template = template
        self.defaults = defaults
        self.started: list[OperatorProcess] = []

    def __call__(self, *, wait: bool = True, **kwargs: Any) -> OperatorProcess:
        options = {**self.defaults, **kwargs}
        options["env"] = {**self.defaults.get("env", {}), **kwargs.get("env", {})}
        if "database" not in options:
            database = self.workdir / f"operator-{len(self.started)}.sqlite3"
            shutil.copyfile(self.template, database)
            options["database"] = database
        process = OperatorProcess(self.workdir / "operators", **options)
        self.started.append(process)
        return process.start(wait=wait)

    def stop_all(self) -> None:
        for process in self.started:
            process.stop()


# Namespaces a shared operator watches; a module using it has at most this many tests.
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
