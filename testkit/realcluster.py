"""Run the real control plane in a child process for tests, the demo and other helpers.

``RealCluster`` spawns ``python -m realcluster`` on a free port, waits until it has written
its admin kubeconfig (which it does only once ``/readyz`` is ``ok``) and ``/version``
answers, and offers a configured ``kubernetes`` client and a ``kubectl`` runner. Its public
surface mirrors ``testkit.devcluster.DevCluster`` (without devcluster's fault hooks), so a
fixture can be parametrized over both clusters, and ``python -m demo`` (``make demo
CLUSTER=real``) starts it as it starts devcluster: ``launch``, then ``wait_ready``.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import yaml

from testkit.ports import free_port
from testkit.processes import ChildProcess

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
        new_session: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.controllers = controllers
        # Its own session (the demo's choice): a terminal's Ctrl-C reaches only the caller,
        # which then stops the launcher, and the launcher its three components, in order.
        self.new_session = new_session
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "ca.crt"
        self.log_path = self.workdir / "realcluster.log"
        self.url = ""
        self.admin_token = ""
        self._child: ChildProcess | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The launcher's process id while it runs."""
        return self._child.pid if self._child is not None else None

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.running

    @property
    def returncode(self) -> int | None:
        """Return the exit code of a launcher that exited on its own (None while it runs)."""
        return None if self._child is None else self._child.returncode

    def start(self, timeout: float = 120) -> None:
        """Spawn the launcher and wait until its kubeconfig is written and /version answers."""
        self.launch(ready_timeout=timeout)
        self.wait_ready(timeout + 5)

    def launch(self, ready_timeout: float = 120) -> None:
        """Spawn the launcher without waiting for it (``wait_ready`` waits).

        The launcher itself gives up, and says why in its log, after ``ready_timeout``.
        """
        if self.running:
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
            str(ready_timeout),
        ]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        if not self.controllers:
            command.append("--no-controllers")
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        # A ChildProcess is SIGTERMed by the kernel when its parent dies, and the launcher
        # answers SIGTERM by stopping its components: a killed test run or demo leaves nothing.
        self._child = ChildProcess(
            command, log=self.log_path, env=env, name="realcluster", new_session=self.new_session
        )
        self._child.start()

    def wait_ready(self, timeout: float = 125, check: Callable[[], None] | None = None) -> None:
        """Wait until the kubeconfig is written and /version answers; ``check`` runs each poll."""
        child = self._child
        if child is None:
            raise RuntimeError("RealCluster.wait_ready before launch.")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check is not None:
                check()
            if not child.running:
                output = self.log_path.read_text(errors="replace")[-3000:]
                self._child = None
                raise RuntimeError(f"realcluster exited during start-up:\n{output}")
            if self.kubeconfig.exists() and self._load_kubeconfig() and self._version_answers():
                return
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"realcluster did not become ready within {timeout} seconds.")

    def terminate(self) -> None:
        """Send SIGTERM without waiting, so the caller can stop other children meanwhile."""
        if self._child is not None:
            self._child.terminate()

    def stop(self) -> None:
        """SIGTERM the launcher (which stops all three components) and wait for it to exit."""
        child, self._child = self._child, None
        if child is not None:
            # SIGKILL after the timeout; the components then die with it (PR_SET_PDEATHSIG).
            child.stop(timeout=STOP_TIMEOUT)

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
