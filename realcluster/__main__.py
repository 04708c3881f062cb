"""Command line: ``python -m realcluster --port PORT --kubeconfig PATH [--data-dir DIR]
[--nodes N] [--no-controllers] [--controller-qps Q]``.

Runs the real control plane built by ``make realcluster`` with devcluster's interface
(docs/realcluster.md): etcd on free loopback ports, kube-apiserver on ``127.0.0.1:PORT``,
kube-controller-manager and, for ``--nodes N`` (default 1), kube-scheduler and kwok with N
simulated Nodes whose pods run without containers, until SIGTERM or Ctrl-C. The admin
kubeconfig is written once ``/readyz`` answers ``ok``, the ServiceAccount controller has made
``default/default`` and every Node is Ready and schedulable, so its appearance means "ready".
``--no-controllers`` runs only etcd and kube-apiserver. Used by developers directly and by
:class:`testkit.realcluster.RealCluster`.

Exit codes: 0 after a requested stop, 2 for a problem found before anything started (binaries
not built, port busy, bad arguments), 1 when a component fails or exits on its own.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import NoReturn

from realcluster import binaries as binaries_module
from realcluster import kubeconfig, nodes, pki, processes
from realcluster.binaries import Binaries, NotBuilt
from realcluster.client import ApiClient
from realcluster.processes import Child

PROG = "realcluster"
SCRATCH_PREFIX = "realcluster-"
PID_FILE = "launcher.pid"
# Canonical names; the old short ones (deployment, replicaset, garbagecollector, serviceaccount,
# serviceaccount-token, namespace) are still accepted as aliases.
CONTROLLERS = ",".join(
    [
        "deployment-controller",
        "replicaset-controller",
        # The other kinds a RolloutAnalysis guards (docs/status.md#pausing-each-kind).
        "statefulset-controller",
        "daemonset-controller",
        "garbage-collector-controller",
        "serviceaccount-controller",
        "serviceaccount-token-controller",
        "namespace-controller",
    ]
)
SERVICE_CIDR = "10.0.0.0/24"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
STOP_TIMEOUT = 15.0


class Failure(Exception):
    """A start-up or run-time failure, reported as one line (plus a log tail) on stderr."""

    def __init__(self, message: str, code: int = 1, detail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail


class Stopped(Exception):
    """SIGTERM or SIGINT arrived while starting."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m realcluster",
        description="The real Kubernetes control plane, built by `make realcluster` "
        "(docs/realcluster.md).",
    )
    parser.add_argument("--port", type=int, required=True, help="apiserver port (0: any free)")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write it")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="keep etcd data, keys and logs here"
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"simulated nodes run by kwok, with kube-scheduler (default 1; 0: none, "
        f"pods stay Pending; at most {nodes.MAX_NODES})",
    )
    parser.add_argument(
        "--no-controllers",
        action="store_true",
        help="only etcd and kube-apiserver: no controller manager (no ReplicaSets, no token "
        "secrets), no scheduler, no nodes",
    )
    parser.add_argument(
        "--ready-timeout", type=float, default=90.0, help="seconds to wait for readiness"
    )
    parser.add_argument(
        "--controller-qps",
        type=float,
        default=None,
        help="kube-controller-manager's --kube-api-qps (burst twice that; default upstream's "
        "20, burst 30): raise it to create thousands of Deployments in minutes, as large "
        "clusters do",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the control plane until stopped; return the process exit code."""
    args = _parser().parse_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Installed before any child exists, so a signal during start-up still cleans up.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    scratch: Path | None = None
    try:
        if not 0 <= args.port <= 65535:
            raise Failure(f"invalid port {args.port}", code=2)
        if args.no_controllers and args.nodes:
            raise Failure("--nodes needs the controllers: drop --no-controllers", code=2)
        if args.nodes is None:
            args.nodes = 0 if args.no_controllers else 1
        if not 0 <= args.nodes <= nodes.MAX_NODES:
            raise Failure(f"--nodes must be between 0 and {nodes.MAX_NODES}", code=2)
        if args.controller_qps is not None and args.controller_qps <= 0:
            raise Failure("--controller-qps must be positive", code=2)
        try:
            found = binaries_module.locate()
        except NotBuilt as exc:
            raise Failure(str(exc), code=2) from None
        port = args.port or processes.free_port()
        if processes.port_in_use(port):
            raise Failure(f"port {port} is already in use", code=2)
        if args.data_dir is not None:
            state = args.data_dir.resolve()
            state.mkdir(parents=True, exist_ok=True)
        else:
            _reap_stale_scratch()
            scratch = state = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
            (scratch / PID_FILE).write_text(f"{os.getpid()}\n")
        return _run(args, found, port, state, stop)
    except Failure as failure:
        sys.stderr.write(f"{PROG}: {failure}\n")
        if failure.detail:
            sys.stderr.write(failure.detail.rstrip() + "\n")
        return failure.code
    except Stopped:
        sys.stderr.write(f"{PROG}: stopped during start-up\n")
        return 0
    except OSError as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 2
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _run(
    args: argparse.Namespace, found: Binaries, port: int, state: Path, stop: threading.Event
) -> int:
    started = time.monotonic()
    versions = binaries_module.pinned_versions()
    creds = pki.ensure(state / "pki")
    url = f"https://127.0.0.1:{port}"
    children: list[Child] = []

    def wait(ready: Callable[[], bool], what: str) -> None:
        _wait(ready, children, stop, args.ready_timeout, what)

    try:
        etcd_client, etcd_peer = processes.free_ports(2)
        children.append(_start_etcd(found, state, etcd_client, etcd_peer))
        children.append(_start_apiserver(found, state, creds, port, etcd_client))
        client = ApiClient(url, creds.admin_token, creds.ca_cert)
        wait(lambda: client.text("/readyz") == "ok", "kube-apiserver /readyz")
        if not args.no_controllers:
            # Started after /readyz: it gives up if the apiserver is not healthy within 10 s.
            children.append(
                _start_controller_manager(
                    found,
                    state,
                    creds,
                    _component_kubeconfig(
                        state, "controller-manager", url, creds, pki.CONTROLLER_MANAGER_USER
                    ),
                    args.controller_qps,
                )
            )
            # The ServiceAccount controller's first object: proof the controllers are running.
            wait(
                lambda: client.status("/api/v1/namespaces/default/serviceaccounts/default") == 200,
                "kube-controller-manager (default ServiceAccount)",
            )
        network = nodes.pod_network(port)
        if args.nodes:
            children.append(
                _start_scheduler(
                    found,
                    state,
                    _component_kubeconfig(state, "scheduler", url, creds, pki.SCHEDULER_USER),
                )
            )
            children.append(
                _start_kwok(
                    found,
                    state,
                    _component_kubeconfig(state, "kwok", url, creds, pki.KWOK_USER),
                    network,
                )
            )
            nodes.create(client, args.nodes, network)
            wait(lambda: nodes.ready(client, args.nodes), f"{args.nodes} kwok node(s) Ready")
        kubeconfig.write(args.kubeconfig, url, creds.ca_pem, creds.admin_token)
        with_nodes = f", {nodes.describe(network, args.nodes)}" if args.nodes else ""
        sys.stderr.write(
            f"{PROG}: Kubernetes {versions.kubernetes} (etcd {versions.etcd}{with_nodes}) "
            f"serving on {url}, ready in {time.monotonic() - started:.1f} s; "
            f"logs in {state / 'logs'}\n"
        )
        while not stop.wait(0.5):
            for child in children:
                code = child.exited()
                if code is not None:
                    raise Failure(
                        f"{child.name} exited on its own with code {code}", detail=child.tail()
                    )
    except nodes.NodeError as exc:
        raise Failure(str(exc)) from None
    finally:
        # Reverse order: kwok and the scheduler first, etcd last, so nobody logs errors about
        # a dependency that went away before it did.
        for child in reversed(children):
            child.stop(STOP_TIMEOUT)
    sys.stderr.write(f"{PROG}: stopped\n")
    return 0


def _component_kubeconfig(state: Path, name: str, url: str, creds: pki.Pki, user: str) -> Path:
    """Write the kubeconfig a component talks to the API server with, as its own identity."""
    token = {
        pki.CONTROLLER_MANAGER_USER: creds.controller_manager_token,
        pki.SCHEDULER_USER: creds.scheduler_token,
        pki.KWOK_USER: creds.kwok_token,
    }[user]
    path = state / f"{name}.kubeconfig"
    kubeconfig.write(path, url, creds.ca_pem, token, user=user)
    return path


def _wait(
    ready: Callable[[], bool],
    children: list[Child],
    stop: threading.Event,
    timeout: float,
    what: str,
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if stop.is_set():
            raise Stopped
        for child in children:
            code = child.exited()
            if code is not None:
                raise Failure(
                    f"{child.name} exited with code {code} during start-up; its last lines:",
                    detail=child.tail(),
                )
        if time.monotonic() > deadline:
            raise Failure(f"{what} not ready within {timeout:.0f} s; see {children[-1].log}")
        time.sleep(0.1)


def _start_etcd(found: Binaries, state: Path, client_port: int, peer_port: int) -> Child:
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return processes.spawn(
        "etcd",
        [
            str(found.etcd),
            "--name=realcluster",
            f"--data-dir={state / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=realcluster={peer}",
            # fsync only protects against a machine crash; a killed process loses nothing
            # (the page cache survives it), and without fsync etcd is much faster on test disks.
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
        state / "logs" / "etcd.log",
    )


def _start_apiserver(
    found: Binaries, state: Path, creds: pki.Pki, port: int, etcd_port: int
) -> Child:
    return processes.spawn(
        "kube-apiserver",
        [
            str(found.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={state / 'apiserver-certs'}",
            f"--tls-cert-file={creds.serving_cert}",
            f"--tls-private-key-file={creds.serving_key}",
            f"--client-ca-file={creds.ca_cert}",
            f"--token-auth-file={creds.token_file}",
            "--authorization-mode=Node,RBAC",
            # TokenRequest (`kubectl create token`) needs an issuer and a signing key.
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={creds.sa_pub}",
            f"--service-account-signing-key-file={creds.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # Otherwise the apiserver writes this host's non-loopback address into the
            # `kubernetes` Service's endpoints.
            "--endpoint-reconciler-type=none",
            # As kubeadm configures it; ValidatingAdmissionPolicy is on by default since 1.30.
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            "--profiling=false",
        ],
        state / "logs" / "kube-apiserver.log",
    )


def _start_controller_manager(
    found: Binaries, state: Path, creds: pki.Pki, config: Path, qps: float | None
) -> Child:
    # Each controller's client is limited to this many requests per second (upstream: 20, burst
    # 30), which makes 5,000 new Deployments take ~17 min (docs/realcluster.md).
    limits = [] if qps is None else [f"--kube-api-qps={qps:g}", f"--kube-api-burst={2 * qps:g}"]
    return processes.spawn(
        "kube-controller-manager",
        [
            str(found.kube_controller_manager),
            f"--kubeconfig={config}",
            f"--controllers={CONTROLLERS}",
            f"--service-account-private-key-file={creds.sa_key}",
            f"--root-ca-file={creds.ca_cert}",
            # Each controller acts as its own ServiceAccount, as kubeadm sets it up, so RBAC
            # is exercised the way a real cluster exercises it.
            "--use-service-account-credentials=true",
            # One instance only; leader election would also make a restart wait for the old
            # lease to expire.
            "--leader-elect=false",
            # No HTTPS endpoint of its own: nothing to leave open, no port to pick.
            "--secure-port=0",
            *limits,
        ],
        state / "logs" / "kube-controller-manager.log",
    )


def _start_scheduler(found: Binaries, state: Path, config: Path) -> Child:
    return processes.spawn(
        "kube-scheduler",
        [
            str(found.kube_scheduler),
            f"--kubeconfig={config}",
            # As for the controller manager: one instance, no lease to wait for on a restart,
            # no HTTPS port of its own.
            "--leader-elect=false",
            "--secure-port=0",
        ],
        state / "logs" / "kube-scheduler.log",
    )


def _start_kwok(
    found: Binaries, state: Path, config: Path, network: ipaddress.IPv4Network
) -> Child:
    return processes.spawn(
        "kwok",
        [
            str(found.kwok),
            f"--kubeconfig={config}",
            # Its stages (node and pod lifecycles) as a file: the standalone binary has none
            # built in. Naming it also keeps kwok from reading ~/.kwok/kwok.yaml.
            f"--config={found.kwok_stages}",
            # Only the Nodes the launcher made; --manage-single-node would conflict with this.
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={nodes.KWOK_KEY}={nodes.KWOK_VALUE}",
            # The fallback for a Node without podCIDR (ours all have one).
            f"--cidr={network}",
        ],
        state / "logs" / "kwok.log",
    )


def _reap_stale_scratch() -> None:
    """Remove temporary state of launchers that died without cleaning up (SIGKILL)."""
    for candidate in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        try:
            pid = int((candidate / PID_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if not processes.alive(pid):
            shutil.rmtree(candidate, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
