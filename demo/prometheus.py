"""Run the real Prometheus server (Debian's /usr/bin/prometheus) for the demo and the tests.

``PrometheusServer`` writes a config scraping the given targets every second, starts the
server on a free local port with its storage in a work directory, and waits for ``/-/ready``.
``stop()`` and ``start()`` again reuse the same port and storage, which is how outage tests
take Prometheus away and bring it back. ``wait_for`` polls the real query API so tests wait
for a value to be visible instead of sleeping.

``python -m demo`` (``demo.runner``) runs one; the ``prometheus`` and ``isolated_prometheus``
fixtures in ``tests.support.fixtures`` use it through the re-export in
``tests.support.prometheus`` (product code never imports from ``tests``).
"""

from __future__ import annotations

import ctypes
import math
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import requests
import yaml

from demo.lifecycle import StartStop

PROMETHEUS_BINARY = "/usr/bin/prometheus"

# Values of an instant query: one float per series of a vector, or the single scalar.
Values = list[float]


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """Ask the kernel to SIGTERM this (forked, not yet exec'd) child when its parent dies."""
    # Linux PR_SET_PDEATHSIG: a Prometheus outliving a killed pytest would hold its port and
    # a core of a shared machine. (Tied to the forking thread; we start from the caller's.)
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class PrometheusServer(StartStop):
    """One Prometheus process owned by the caller; use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[str],
        *,
        port: int | None = None,
        job: str = "metrics-app",
        binary: str = PROMETHEUS_BINARY,
        new_session: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.targets = list(targets)
        self.job = job
        self.port = port or free_port()
        self.binary = binary
        self.new_session = new_session
        self.config_file = self.workdir / "prometheus.yml"
        self.storage = self.workdir / "data"
        self.log_file = self.workdir / "prometheus.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._session = requests.Session()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Start the server (same port and storage as before) and wait until it is ready."""
        if self.running:
            raise RuntimeError("Prometheus is already running.")
        self._write_config()
        command = [
            self.binary,
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.storage}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
                # The demo stops its children itself: a terminal's Ctrl-C must reach only it.
                start_new_session=self.new_session,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"Prometheus exited with {self._process.returncode} on start; "
                    f"see {self.log_file}:\n{self._log_tail()}"
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

    def _terminate(self, timeout: float = 15.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

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

    # -- helpers ---------------------------------------------------------------------------

    def _write_config(self) -> None:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {
                    "job_name": self.job,
                    "scrape_interval": "1s",
                    "scrape_timeout": "1s",
                    "static_configs": [{"targets": self.targets}],
                }
            ],
        }
        self.config_file.write_text(yaml.safe_dump(config, sort_keys=False))

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _has_number(values: Values) -> bool:
    return any(not math.isnan(value) for value in values)
