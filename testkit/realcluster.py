"""Run the real control plane in a child process for tests, the demo and other helpers.

``RealCluster`` spawns ``python -m realcluster`` on a free port, waits until it has written
its admin kubeconfig (which it does only once ``/readyz`` is ``ok``) and ``/version``
answers, and offers a configured ``kubernetes`` client and a ``kubectl`` runner. Its public
surface mirrors ``devcluster.testing.DevCluster`` (without devcluster's fault hooks), so a
fixture can be parametrized over both clusters.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import yaml

from testkit.ports import free_port

if TYPE_CHECKING:
    import kubernetes.client

# The launcher stops kube-controller-manager, kube-apiserver and etcd one after the other, each
# with its own grace period; leave it room for all three before killing it.
STOP_TIMEOUT = 60.0


def _kubectl_binary() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found next to the Python interpreter or on PATH.")
    return found


class RealCluster:
    """A ``python -m realcluster`` process owned by the caller; use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        controllers: bool = True,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.controllers = controllers
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "ca.crt"
        self.url = ""
        self.admin_token = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = self.workdir / "realcluster.log"

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The launcher's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self, timeout: float = 120) -> None:
        """Spawn the launcher and wait until its kubeconfig is written and /version answers."""
        if self._process is not None:
            raise RuntimeError("RealCluster is already running.")
        if self.port is None:
            self.port = free_port()
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        command = [
            sys.executable,
            "-m",
            "realcluster",
            "--port",
            str(self.port),
            "--kubeconfig",
            str(self.kubeconfig),
            "--ready-timeout",
            str(timeout),
        ]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        if not self.controllers:
            command.append("--no-controllers")
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        log = self._log_path.open("ab")
        self._process = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + timeout + 5
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = self._log_path.read_text(errors="replace")[-3000:]
                self._process = None
                raise RuntimeError(f"realcluster exited during start-up:\n{output}")
            if self.kubeconfig.exists() and self._load_kubeconfig() and self._version_answers():
                return
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"realcluster did not become ready within {timeout} seconds.")

    def stop(self) -> None:
        """SIGTERM the launcher (which stops all three components) and wait for it to exit."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                # The children die with it (PR_SET_PDEATHSIG).
                process.kill()
                process.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port and data dir."""
        self.stop()
        self.start()

    def __enter__(self) -> RealCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

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
        command = [_kubectl_binary(), f"--cache-dir={self.workdir / 'kube-cache'}"]
        if token is not None:
            command.append(f"--token={token}")
        command += list(args)
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        return subprocess.run(
            command,
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
            env=env,
        )

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

    def _version_answers(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(
            self.url + "/version", headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        try:
            with urllib.request.urlopen(request, context=context, timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False
