"""Run the real Prometheus server for tests, bench and the demo.

Debian's ``/usr/bin/prometheus`` (2.x) by default; the real tier runs the Prometheus 3.x that
``make realcluster`` builds (:func:`built_prometheus`), which has Kubernetes service discovery
(Debian's is built without it). ``PrometheusServer`` writes a config scraping the given
targets every second and, with ``kubernetes=KubernetesPods(...)``, the pods it discovers
through a cluster's API server (``kubernetes_sd_configs``, role ``pod``), labelled with their
``namespace``, ``pod`` and pod labels (``pod_template_hash``, ``app``) as kube-prometheus
does. It starts the server on a free local port with its storage in a work directory, and
waits for ``/-/ready``.
``stop()`` and ``start()`` again reuse the same port and storage, which is how outage tests
take Prometheus away and bring it back. ``wait_for`` polls the real query API so tests wait
for a value to be visible instead of sleeping.

The ``prometheus`` and ``isolated_prometheus`` fixtures (``tests.support.fixtures``), the
benchmarks' stack (``bench.harness``) and ``python -m demo`` each run one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import yaml

from testkit.lifecycle import StartStop
from testkit.ports import free_port
from testkit.processes import ChildProcess

if TYPE_CHECKING:
    from testkit.clusters import Cluster

PROMETHEUS_BINARY = "/usr/bin/prometheus"
# The container port name testkit.pod_server's pods declare: the one target kept per pod.
METRICS_PORT_NAME = "metrics"

# Values of an instant query: one float per series of a vector, or the single scalar.
Values = list[float]


def built_prometheus() -> str:
    """Return the Prometheus 3.x built by ``make realcluster`` (raises ``NotBuilt`` if not)."""
    from realcluster.binaries import prometheus

    return str(prometheus())


@dataclass(frozen=True)
class KubernetesPods:
    """Scrape the pods a cluster's API server lists (``kubernetes_sd_configs``, role pod).

    Only Running pods with a container port named ``metrics`` are targets. ``namespaces``
    limits discovery (default: all). The token is written to a file of the server's work
    directory; Prometheus reads it from there, as from a mounted ServiceAccount token.
    """

    api_server: str
    ca_file: Path
    token: str
    namespaces: Sequence[str] = ()
    job: str = "kubernetes-pods"

    @classmethod
    def of(cls, cluster: Cluster, namespaces: Sequence[str] = ()) -> KubernetesPods:
        """Discover the pods of ``cluster`` as its admin."""
        return cls(cluster.url, cluster.ca_file, cluster.admin_token, tuple(namespaces))

    def scrape_config(self, token_file: Path) -> dict[str, Any]:
        """Return the scrape job for Prometheus's configuration."""
        discovery: dict[str, Any] = {
            "role": "pod",
            "api_server": self.api_server,
            "tls_config": {"ca_file": str(self.ca_file)},
            "authorization": {"credentials_file": str(token_file)},
        }
        if self.namespaces:
            discovery["namespaces"] = {"names": list(self.namespaces)}
        return {
            "job_name": self.job,
            "scrape_interval": "1s",
            "scrape_timeout": "1s",
            "kubernetes_sd_configs": [discovery],
            "relabel_configs": [
                {
                    "source_labels": ["__meta_kubernetes_pod_container_port_name"],
                    "regex": METRICS_PORT_NAME,
                    "action": "keep",
                },
                {
                    "source_labels": ["__meta_kubernetes_pod_phase"],
                    "regex": "Running",
                    "action": "keep",
                },
                # pod-template-hash -> pod_template_hash, app -> app: the labels users'
                # queries select on and compare splits by.
                {"action": "labelmap", "regex": "__meta_kubernetes_pod_label_(.+)"},
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            ],
        }


def discovering_pods(
    workdir: Path, cluster: Cluster, namespaces: Sequence[str] = ()
) -> PrometheusServer:
    """Return (not started) the built Prometheus 3.x discovering ``cluster``'s pods."""
    return PrometheusServer(
        workdir, kubernetes=KubernetesPods.of(cluster, namespaces), binary=built_prometheus()
    )


class PrometheusServer(StartStop):
    """One Prometheus process owned by the caller; use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[str] = (),
        *,
        kubernetes: KubernetesPods | None = None,
        port: int | None = None,
        job: str = "metrics-app",
        binary: str = PROMETHEUS_BINARY,
        new_session: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.targets = list(targets)
        self.kubernetes = kubernetes
        self.job = job
        self.port = port or free_port()
        self.binary = binary
        self.new_session = new_session
        self.config_file = self.workdir / "prometheus.yml"
        self.storage = self.workdir / "data"
        self.log_file = self.workdir / "prometheus.log"
        command = [
            self.binary,
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.storage}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]
        # The demo stops its children itself: a terminal's Ctrl-C must reach only it.
        self._child = ChildProcess(
            command, log=self.log_file, name="Prometheus", new_session=new_session
        )
        self._session = requests.Session()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._child.running

    @property
    def pid(self) -> int:
        return self._child.pid

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Start the server (same port and storage as before) and wait until it is ready."""
        if self.running:
            raise RuntimeError("Prometheus is already running.")
        self._write_config()
        self._child.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._child.running:
                raise RuntimeError(
                    f"Prometheus exited with {self._child.returncode} on start; "
                    f"see {self.log_file}:\n{self._child.tail(20)}"
                )
            try:
                if self._session.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self._terminate()
        raise RuntimeError(f"Prometheus was not ready within {timeout} s; see {self.log_file}.")

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server gracefully (SIGTERM), killing it if it does not exit in time."""
        self._terminate(timeout)

    def terminate(self) -> None:
        """Send SIGTERM without waiting, so the caller can stop other children meanwhile."""
        self._child.terminate()

    def _terminate(self, timeout: float = 15.0) -> None:
        self._child.stop(timeout=timeout)

    def restart(self, timeout: float = 30.0) -> None:
        """Stop and start again on the same port with the same storage."""
        self.stop()
        self.start(timeout=timeout)

    def _release(self) -> None:
        # The HTTP session outlives stop() so that restart() reuses it; only leaving the
        # with-block ends it.
        self._session.close()

    # -- queries ---------------------------------------------------------------------------

    def values(self, query: str) -> Values:
        """Run an instant query and return its sample values; raise if Prometheus refuses."""
        response = self._session.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5)
        payload = response.json()
        if payload.get("status") != "success":
            raise AssertionError(f"Prometheus refused {query!r}: {payload}")
        data = payload["data"]
        if data["resultType"] == "scalar":
            return [float(data["result"][1])]
        if data["resultType"] == "vector":
            return [float(item["value"][1]) for item in data["result"]]
        raise AssertionError(f"{query!r} returned a {data['resultType']}, not a vector")

    def wait_for(
        self,
        query: str,
        predicate: Callable[[Values], bool] | None = None,
        timeout: float = 15.0,
    ) -> Values:
        """Poll ``query`` until ``predicate(values)`` holds (default: a non-NaN value exists).

        Return the values that satisfied it; raise AssertionError with the last values seen
        when ``timeout`` passes first.
        """
        check = predicate or _has_number
        deadline = time.monotonic() + timeout
        last: Values | str = "no answer yet"
        while True:
            try:
                values = self.values(query)
            except (requests.RequestException, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if check(values):
                    return values
                last = values
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{query!r} did not satisfy the predicate within {timeout} s; last: {last}"
                )
            time.sleep(0.1)

    def wait_scraped(
        self, namespace: str, pods: int, seconds: int, at_least: int, timeout: float = 90.0
    ) -> None:
        """Wait until each of the namespace's ``pods`` was scraped ``at_least`` times in the
        last ``seconds`` (every 1 s): a window over them then has data for every pod.

        A pod Ready in the API server is found by Prometheus's discovery a few seconds later,
        more under load; a query over a window starting before that misses the pod.
        """
        self.wait_for(
            f'count(count_over_time(up{{namespace="{namespace}"}}[{seconds}s]) >= {at_least})',
            lambda values: values == [pods],
            timeout=timeout,
        )

    # -- helpers ---------------------------------------------------------------------------

    def _write_config(self) -> None:
        jobs: list[dict[str, Any]] = []
        if self.targets:
            jobs.append(
                {
                    "job_name": self.job,
                    "scrape_interval": "1s",
                    "scrape_timeout": "1s",
                    "static_configs": [{"targets": self.targets}],
                }
            )
        if self.kubernetes is not None:
            token_file = self.workdir / "kubernetes.token"
            descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(self.kubernetes.token)
            jobs.append(self.kubernetes.scrape_config(token_file))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": jobs,
        }
        self.config_file.write_text(yaml.safe_dump(config, sort_keys=False))

    # -- discovery -------------------------------------------------------------------------

    def active_targets(self) -> list[dict[str, Any]]:
        """Return the active targets (``/api/v1/targets``), each with its labels and health."""
        response = self._session.get(
            f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=5
        )
        payload = response.json()
        if payload.get("status") != "success":
            raise AssertionError(f"Prometheus refused /api/v1/targets: {payload}")
        return list(payload["data"]["activeTargets"])


def _has_number(values: Values) -> bool:
    return any(not math.isnan(value) for value in values)
