"""Run a devcluster (``python -m devcluster``) in a child process: the kit's fast cluster.

``DevCluster`` spawns the server on a free port, waits until it has written its admin
kubeconfig and answers ``/version``, and offers what every cluster launcher offers
(``testkit.clusters.Cluster``: a configured ``kubernetes`` client and a ``kubectl`` runner),
plus the devcluster-only fault hooks (injected 5xx, latency, forced 409s). Used by the test
fixtures, ``bench`` and ``demo``; the demo starts it with ``launch`` and waits with
``wait_ready`` so the rest of its stack boots meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from testkit.launcher import ClusterLauncher


class DevCluster(ClusterLauncher):
    """A devcluster process owned by the caller; use as a context manager."""

    name = "devcluster"

    def __init__(
        self,
        workdir: Path,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        args: Sequence[str] = (),
        new_session: bool = False,
    ) -> None:
        super().__init__(workdir, data_dir=data_dir, port=port, new_session=new_session)
        # Extra server flags, e.g. ("--watch-history", "5").
        self.args = list(args)

    def _command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "devcluster", "--port", str(port)]
        command += ["--kubeconfig", str(self.kubeconfig), *self.args]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        return command

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
