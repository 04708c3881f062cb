"""Run a devcluster in a child process for tests, the demo and other helpers.

``DevCluster`` spawns ``python -m devcluster`` on a free port, waits until it has
written its admin kubeconfig and answers ``/version``, and offers a configured
``kubernetes`` client, a ``kubectl`` runner and the fault hooks.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import kubernetes.client


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _kubectl_binary() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found next to the Python interpreter or on PATH.")
    return found


class DevCluster:
    """A devcluster process owned by the caller; use as a context manager."""

    def __init__(
        self, workdir: Path, *, data_dir: Path | None = None, port: int | None = None
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.kubeconfig = self.workdir / "kubeconfig"
        self.ca_file = self.workdir / "ca.crt"
        self.url = ""
        self.admin_token = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = self.workdir / "devcluster.log"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        """Spawn the server and wait until its kubeconfig is written and /version answers."""
        if self._process is not None:
            raise RuntimeError("DevCluster is already running.")
        if self.port is None:
            self.port = _free_port()
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        command = [
            sys.executable,
            "-m",
            "devcluster",
            "--port",
            str(self.port),
            "--kubeconfig",
            str(self.kubeconfig),
        ]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        log = self._log_path.open("ab")
        self._process = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = self._log_path.read_text(errors="replace")[-2000:]
                self._process = None
                raise RuntimeError(f"devcluster exited during start-up:\n{output}")
            if self.kubeconfig.exists() and self._load_kubeconfig() and self._version_answers():
                return
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"devcluster did not become ready within {timeout} seconds.")

    def stop(self) -> None:
        """Terminate the server process and wait for it to exit."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port and data dir."""
        self.stop()
        self.start()

    def __enter__(self) -> DevCluster:
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

    # -- faults ----------------------------------------------------------------------------

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
