"""Run a devcluster (``python -m devcluster``) in a child process: the kit's fast cluster.

``DevCluster`` spawns the server on a free port, waits until it has written its admin
kubeconfig and answers ``/version``, and offers what every cluster launcher offers
(``testkit.clusters.Cluster``: a configured ``kubernetes`` client and a ``kubectl`` runner),
plus the devcluster-only fault hooks (injected 5xx, latency, forced 409s). Used by the test
fixtures, ``bench`` and ``demo``; the demo starts it with ``launch`` and waits with
``wait_ready`` so the rest of its stack boots meanwhile.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from testkit.kubectl import popen_kubectl, run_kubectl
from testkit.lifecycle import StartStop
from testkit.paths import REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess

if TYPE_CHECKING:
    import kubernetes.client


class DevCluster(StartStop):
    """A devcluster process owned by the caller; use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        args: Sequence[str] = (),
        new_session: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        # Extra server flags, e.g. ("--watch-history", "5").
        self.args = list(args)
        self.new_session = new_session
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "ca.crt"
        self.log_path = self.workdir / "devcluster.log"
        self.url = ""
        self.admin_token = ""
        self._child: ChildProcess | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        """Spawn the server and wait until its kubeconfig is written and /version answers."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> None:
        """Spawn the server without waiting for it (``wait_ready`` waits)."""
        if self.running:
            raise RuntimeError("DevCluster is already running.")
        if self.port is None:
            self.port = free_port()
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        command = [sys.executable, "-m", "devcluster", "--port", str(self.port)]
        command += ["--kubeconfig", str(self.kubeconfig), *self.args]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        env = dict(os.environ)
        # `python -m devcluster` from any working directory.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        self._child = ChildProcess(
            command, log=self.log_path, env=env, name="devcluster", new_session=self.new_session
        )
        self._child.start()

    def wait_ready(self, timeout: float = 30, check: Callable[[], None] | None = None) -> None:
        """Wait until the kubeconfig is written and /version answers; ``check`` runs each poll."""
        child = self._child
        if child is None:
            raise RuntimeError("DevCluster.wait_ready before launch.")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check is not None:
                check()
            if not child.running:
                output = child.tail(40)
                self._child = None
                raise RuntimeError(f"devcluster exited during start-up:\n{output}")
            if self.kubeconfig.exists() and self._load_kubeconfig() and self._version_answers():
                return
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"devcluster did not become ready within {timeout} seconds.")

    def terminate(self) -> None:
        """Send SIGTERM without waiting, so the caller can stop other children meanwhile."""
        if self._child is not None:
            self._child.terminate()

    def stop(self) -> None:
        """Terminate the server process and wait for it to exit."""
        child, self._child = self._child, None
        if child is not None:
            child.stop(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port and data dir."""
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.running

    @property
    def returncode(self) -> int | None:
        """Return the exit code of a server that exited on its own (None while it runs)."""
        return None if self._child is None else self._child.returncode

    @property
    def pid(self) -> int:
        if self._child is None:
            raise RuntimeError("devcluster is not running")
        return self._child.pid

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

    # -- faults (devcluster only) ----------------------------------------------------------

    def inject_fault(
        self,
        *,
        path_regex: str = ".*",
        methods: Sequence[str] = (),
        status: int | None = None,
        latency: float = 0.0,
        times: int | None = None,
    ) -> None:
        """Make matching requests fail with ``status`` and/or wait ``latency`` seconds."""
        body = {
            "pathRegex": path_regex,
            "methods": [method.upper() for method in methods],
            "status": status,
            "latencySeconds": latency,
            "times": times,
        }
        self._request("POST", "/devcluster/faults", body)

    def clear_faults(self) -> None:
        """Remove every injected fault."""
        self._request("DELETE", "/devcluster/faults", None)

    @contextlib.contextmanager
    def faults_cleared_after(self) -> Iterator[DevCluster]:
        """Yield this cluster for ``inject_fault``; clear every fault on the way out."""
        try:
            yield self
        finally:
            self.clear_faults()

    # -- internals -------------------------------------------------------------------------

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

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def _version_answers(self) -> bool:
        try:
            with urllib.request.urlopen(
                self.url + "/version", context=self._ssl_context(), timeout=2
            ) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _request(self, method: str, path: str, body: Any) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.admin_token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, context=self._ssl_context(), timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None
