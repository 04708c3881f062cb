"""Run the real control plane in a child process for tests, the demo and other helpers.

``RealCluster`` spawns ``python -m realcluster`` on a free port (with ``nodes`` simulated
nodes, default 1, where pods that tolerate them run: docs/realcluster.md), waits until it has
written its admin kubeconfig (which it does only once ``/readyz`` is ``ok``, the controllers
run and the nodes are Ready) and ``/version`` answers, and offers a configured ``kubernetes``
client and a ``kubectl`` runner. Its public surface mirrors ``testkit.devcluster.DevCluster``
(without devcluster's fault hooks), so a fixture can be parametrized over both clusters, and
``python -m demo`` (``make demo CLUSTER=real``) starts it as it starts devcluster:
``launch``, then ``wait_ready``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from testkit.launcher import ClusterLauncher


class RealCluster(ClusterLauncher):
    """A ``python -m realcluster`` process owned by the caller; use as a context manager."""

    name = "realcluster"
    # The launcher stops kwok, kube-scheduler, kube-controller-manager, kube-apiserver and etcd
    # one after the other, each with its own grace period; leave it room before killing it (its
    # components then die with it: PR_SET_PDEATHSIG).
    stop_timeout = 90.0
    default_start_timeout = 120.0

    def __init__(
        self,
        workdir: Path,
        *,
        data_dir: Path | None = None,
        port: int | None = None,
        controllers: bool = True,
        nodes: int = 1,
        new_session: bool = False,
        controller_qps: float | None = None,
    ) -> None:
        super().__init__(workdir, data_dir=data_dir, port=port, new_session=new_session)
        self.controllers = controllers
        self.nodes = nodes if controllers else 0
        # kube-controller-manager's client rate (None: upstream's 20/s); bench.operator_throughput
        # raises it to create thousands of Deployments.
        self.controller_qps = controller_qps
        # The launcher itself gives up, and says why in its log, after this many seconds.
        self.ready_timeout = self.default_start_timeout

    def start(self, timeout: float | None = None) -> None:
        """Spawn the launcher and wait until its kubeconfig is written and /version answers."""
        self.ready_timeout = timeout if timeout is not None else self.default_start_timeout
        self.launch()
        self.wait_ready(self.ready_timeout + 5)

    def _command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "realcluster", "--port", str(port)]
        command += ["--kubeconfig", str(self.kubeconfig)]
        command += ["--ready-timeout", str(self.ready_timeout)]
        if self.data_dir is not None:
            command += ["--data-dir", str(self.data_dir)]
        if not self.controllers:
            command.append("--no-controllers")
        else:
            command += ["--nodes", str(self.nodes)]
            if self.controller_qps is not None:
                command += ["--controller-qps", f"{self.controller_qps:g}"]
        return command
