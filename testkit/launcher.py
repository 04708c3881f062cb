"""The part every cluster launcher shares: one child process serving the Kubernetes API.

``DevCluster`` (``python -m devcluster``) and ``RealCluster`` (``python -m realcluster``) differ
only in the command they spawn, how long they get to start and stop, and devcluster's fault
hooks. The rest is here, once: spawn the child on a free port, wait until it has written its
admin kubeconfig and ``/version`` answers, stop it, and hand out a ``kubernetes`` client and a
``kubectl`` runner bound to that kubeconfig (``testkit.clusters.Cluster`` is the surface).
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from testkit.kubectl import popen_kubectl, run_kubectl
from testkit.lifecycle import StartStop
from testkit.paths import REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess

if TYPE_CHECKING:
    import kubernetes.client


class ClusterLauncher(StartStop):
    """A cluster child process owned by the caller; use as a context manager."""

    # Set by subclasses: the child's name in logs and errors, and how long it may take to stop.
    name = "cluster"
    stop_timeout = 10.0
    # A bound on waiting for the kubeconfig and /version, not a speed target: devcluster is up
    # in ~2 s on a quiet machine, but took over 30 s with four pytest-xdist workers starting
    # theirs at once on a loaded 2-core machine.
    default_start_timeout = 120.0

    def __init__(
        self,
        workdir: Path,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        new_session: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        # Its own session (the demo's choice): a terminal's Ctrl-C reaches only the caller,
        # which then stops the child in order.
        self.new_session = new_session
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "ca.crt"
        self.log_path = self.workdir / f"{self.name}.log"
        self.url = ""
        self.admin_token = ""
        self._child: ChildProcess | None = None

    def _command(self, port: int) -> list[str]:
        """Return the argv that serves the API on ``port`` and writes ``self.kubeconfig``."""
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float | None = None) -> None:
        """Spawn the child and wait until its kubeconfig is written and /version answers."""
        self.launch()
        self.wait_ready(timeout if timeout is not None else self.default_start_timeout)

    def launch(self) -> None:
        """Spawn the child without waiting for it (``wait_ready`` waits)."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running.")
        if self.port is None:
            self.port = free_port()
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        env = dict(os.environ)
        # `python -m devcluster` / `python -m realcluster` from any working directory.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        # A ChildProcess is SIGTERMed by the kernel when its parent dies: a killed test run or
        # demo leaves nothing behind.
        self._child = ChildProcess(
            self._command(self.port),
            log=self.log_path,
            env=env,
            name=self.name,
            new_session=self.new_session,
        )
        self._child.start()

    def wait_ready(self, timeout: float = 30, check: Callable[[], None] | None = None) -> None:
        """Wait until the kubeconfig is written and /version answers; ``check`` runs each poll."""
        child = self._child
        if child is None:
            raise RuntimeError(f"{self.name}: wait_ready before launch.")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check is not None:
                check()
            if not child.running:
                output = self.log_path.read_text(errors="replace")[-3000:]
                self._child = None
                raise RuntimeError(f"{self.name} exited during start-up:\n{output}")
            if self.kubeconfig.exists() and self._load_kubeconfig() and self._version_answers():
                return
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"{self.name} did not become ready within {timeout} seconds.")

    def terminate(self) -> None:
        """Send SIGTERM without waiting, so the caller can stop other children meanwhile."""
        if self._child is not None:
            self._child.terminate()

    def stop(self) -> None:
        """Terminate the child and wait for it to exit (SIGKILL after ``stop_timeout``)."""
        child, self._child = self._child, None
        if child is not None:
            child.stop(timeout=self.stop_timeout)

    def restart(self) -> None:
        """Stop and start again on the same port and data dir."""
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.running

    @property
    def returncode(self) -> int | None:
        """Return the exit code of a child that exited on its own (None while it runs)."""
        return None if self._child is None else self._child.returncode

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (None once stopped)."""
        return self._child.pid if self._child is not None else None

    # -- clients ---------------------------------------------------------------------------

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """Return a kubernetes client talking to this cluster as admin or as ``token``."""
        import kubernetes.client

        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = str(self.ca_file)
        configuration.verify_ssl = True
        configuration.api_key = {"authorization": token or self.admin_token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        token: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the venv's kubectl against this cluster."""
        return run_kubectl(
            args,
            kubeconfig=self.kubeconfig,
            cache_dir=self.workdir / "kube-cache",
            token=token,
            input=input,
            check=check,
            timeout=timeout,
        )

    def kubectl_popen(self, *args: str) -> subprocess.Popen[str]:
        """Start a long-running kubectl (``get -w``) against this cluster."""
        return popen_kubectl(
            args, kubeconfig=self.kubeconfig, cache_dir=self.workdir / "kube-cache"
        )

    # -- internals -------------------------------------------------------------------------

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def _load_kubeconfig(self) -> bool:
        try:
            config = yaml.safe_load(self.kubeconfig.read_text())
            cluster = config["clusters"][0]["cluster"]
            user = config["users"][0]["user"]
        except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
            return False
        self.url = cluster["server"]
        self.admin_token = user["token"]
        self.ca_file.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        return True

    def _version_answers(self) -> bool:
        request = urllib.request.Request(
            self.url + "/version", headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        try:
            with urllib.request.urlopen(
                request, context=self._ssl_context(), timeout=2
            ) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False
