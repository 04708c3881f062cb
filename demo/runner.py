"""Orchestrate ``python -m demo``: start everything, print the banner and the status log, stop.

Order: check the ports, wipe the work dir, start the cluster (devcluster, or with
``SENTINEL_DEMO_CLUSTER=real`` the real control plane; it boots while the rest starts), the
checkout app and the real Prometheus, migrate the database and create the ``admin`` user,
apply the CRD, the Deployment and the analysis with kubectl, then start the operator and the
web UI. On the real control plane the Deployment's pods run on kwok's node, the pod server
(``testkit.pod_server``) serves their metrics, the built Prometheus 3.x discovers them (it
starts once the cluster is ready, whose address and credentials it needs), and
``regression_after`` seconds after the banner the demo rolls out ``NEXT_IMAGE``, whose pods
are slower. Ctrl-C or SIGTERM stops everything in reverse order; a child that dies early stops
the demo with its last log lines and exit code 1. ``main`` is called by ``demo.__main__``.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TextIO

import kubernetes.client
import requests

from demo import manifests
from demo.app import CheckoutApp
from demo.banner import banner, hint
from demo.children import Child
from demo.notify import DemoNotifications
from demo.preflight import check_prerequisites, choose_cluster_port, prepare_work_dir
from demo.settings import REALCLUSTER, DemoError, DemoSettings
from demo.status import Snapshot, describe_change, read_snapshot
from realcluster.binaries import pinned_versions
from testkit.devcluster import DevCluster
from testkit.kubectl import kubectl_command
from testkit.manifests import CRD_NAME
from testkit.paths import CRD_PATHS
from testkit.pod_server import Behaviour, PodServer
from testkit.ports import free_port
from testkit.processes import tail
from testkit.prometheus import PROMETHEUS_BINARY, KubernetesPods, PrometheusServer, built_prometheus
from testkit.realcluster import RealCluster

PROJECT_DIR = Path(__file__).resolve().parent.parent
STATUS_POLL_SECONDS = 2.0
# How long the operator and the web server may take to stop on Ctrl-C, together, before they are
# SIGKILLed (demo/children.py: a notification being rendered can take longer).
CHILDREN_STOP_SECONDS = 4.0
# Seconds each cluster may take to become ready: devcluster needs about two, the real control
# plane about four on an idle machine and more on a busy one.
READY_TIMEOUT = {"devcluster": 60.0, "realcluster": 120.0}


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM arrived while the demo was starting."""


class Demo:
    """One run of the demo; ``run`` returns the process exit code."""

    def __init__(
        self,
        settings: DemoSettings,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        out: TextIO,
    ) -> None:
        self.settings = settings
        self.work = settings.work_dir
        self._clock = clock
        self._rng = rng
        self._out = out
        self._print_lock = threading.Lock()
        self._stop = threading.Event()
        self._starting = True
        self._started_at = clock()
        self._children: list[Child] = []
        self._cluster: DevCluster | RealCluster | None = None
        self._cluster_name = "realcluster" if settings.cluster == REALCLUSTER else "devcluster"
        self._app: CheckoutApp | None = None
        self._pods: PodServer | None = None
        self._pods_api: kubernetes.client.ApiClient | None = None
        self._rolled_out = False
        self._up_at = 0.0
        self._prometheus: PrometheusServer | None = None
        self.kubeconfig = self.work / "kubeconfig"
        self.password = ""
        self._kubectl_binary = "kubectl"
        self._notifications = DemoNotifications(self.work, self._say)

    # -- the whole run ---------------------------------------------------------------------

    def run(self) -> int:
        """Start everything, log until stopped; return 0 on Ctrl-C/SIGTERM, 1 on a failure."""
        try:
            ports = self._preflight()
        except DemoError as exc:
            self._say(f"demo: {exc}")
            return 1
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        code = 0
        try:
            self._start(*ports)
            self._starting = False
            self._up_at = self._clock()
            self._banner()
            code = self._watch()
        except Interrupted:
            code = 0
        except DemoError as exc:
            self._say(f"demo: {exc}")
            code = 1
        finally:
            self._starting = False
            self._say("demo: stopping…")
            self._stop_all()
            self._say("demo: stopped.")
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return code

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()
        if self._starting:
            self._starting = False  # raise once; a second signal must not break the clean-up
            raise Interrupted()

    # -- start-up --------------------------------------------------------------------------

    def _preflight(self) -> tuple[int, int]:
        """Check the ports and prepare the work dir; return the web and cluster ports."""
        self._kubectl_binary = check_prerequisites(self.settings)
        cluster_port = choose_cluster_port(self.settings)
        prepare_work_dir(self.work)
        return self.settings.web_port, cluster_port

    def _start(self, web_port: int, cluster_port: int) -> None:
        self._say(f"demo: starting in {self.work} …")
        env = self._environment()

        # It boots while the rest starts; _wait_for_cluster waits for it.
        self._cluster = self._new_cluster(cluster_port)
        self._cluster.launch()

        real = self._cluster_name == "realcluster"
        # On the real control plane the regression comes with the new version's pods instead.
        self._app = CheckoutApp(
            regression_after=math.inf if real else self.settings.regression_after,
            clock=self._clock,
            rng=self._rng,
            on_regression=self._on_regression,
        )
        self._app.start()
        operator_metrics_port = free_port()
        scraped = [self._app.target, f"127.0.0.1:{operator_metrics_port}"]
        if not real:
            self._start_prometheus(scraped, env)
        env.update(self._notifications.start(f"http://127.0.0.1:{web_port}"))
        self._say(
            f"demo: notifications go to a local webhook ({self._notifications.url}); each "
            f"picture is written to {self._notifications.directory}/"
        )

        self._manage("migrate", ["migrate", "--noinput"], env).run(timeout=120)
        self.password = secrets.token_urlsafe(12)
        self._manage(
            "createsuperuser",
            ["createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com"],
            dict(env, DJANGO_SUPERUSER_PASSWORD=self.password),
        ).run(timeout=60)

        self._wait_for_cluster(timeout=READY_TIMEOUT[self._cluster_name])
        if real:
            self._start_pods()
            self._start_prometheus(scraped, env)
        self._apply()

        (self.work / "operator-metrics").mkdir()
        self._manage(
            "operator",
            [
                "runoperator",
                "--metrics-port",
                str(operator_metrics_port),
                "--metrics-address",
                "127.0.0.1",
            ],
            dict(env, PROMETHEUS_MULTIPROC_DIR=str(self.work / "operator-metrics")),
        ).start()
        web = self._manage("web", ["runserver", f"127.0.0.1:{web_port}", "--noreload"], env)
        web.start()
        self._wait_for_web(web, timeout=60)

    def _start_prometheus(self, scraped: list[str], env: dict[str, str]) -> None:
        """Start Prometheus scraping ``scraped``; on the real control plane, the built 3.x
        that also discovers the checkout pods through the API server."""
        kubernetes, binary = None, PROMETHEUS_BINARY
        if self._cluster_name == "realcluster":
            assert self._cluster is not None
            kubernetes = KubernetesPods.of(self._cluster, [manifests.NAMESPACE])
            binary = built_prometheus()
        self._prometheus = PrometheusServer(
            self.work / "prometheus",
            scraped,
            job=manifests.APP_JOB,
            kubernetes=kubernetes,
            binary=binary,
            new_session=True,
        )
        try:
            self._prometheus.start()
        except RuntimeError as exc:
            raise DemoError(str(exc)) from exc
        env["SENTINEL_PROMETHEUS_URL"] = self._prometheus.url

    def _start_pods(self) -> None:
        """Serve the checkout pods' metrics at their IPs: NEXT_IMAGE's pods are slower, and
        every pod fails the same share of its requests."""
        assert self._cluster is not None
        self._pods_api = self._cluster.api_client()
        self._pods = PodServer(
            self._pods_api,
            manifests.NAMESPACE,
            default=Behaviour(latency=manifests.POD_LATENCY, error_rate=manifests.POD_ERROR_RATE),
        )
        slower = Behaviour(latency=manifests.NEXT_POD_LATENCY, error_rate=manifests.POD_ERROR_RATE)
        self._pods.behave(slower, image=manifests.NEXT_IMAGE)
        self._pods.start()

    def _new_cluster(self, port: int) -> DevCluster | RealCluster:
        if self._cluster_name == "realcluster":
            # Its data in a temporary directory that the launcher removes when it stops; its
            # own log (naming the components' logs) is realcluster.log in the work dir.
            return RealCluster(self.work, port=port, new_session=True)
        return DevCluster(self.work, port=port, new_session=True)

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="sentinel_site.settings",
            DATABASE_URL=f"sqlite:///{self.work / 'sentinel.sqlite3'}",
            KUBECONFIG=str(self.kubeconfig),
            # runserver serves the admin's static files itself only in debug mode.
            SENTINEL_DEBUG="true",
            PYTHONUNBUFFERED="1",
        )
        env.pop(_MULTIPROC, None)
        return env

    def _child(self, name: str, argv: list[str], env: dict[str, str]) -> Child:
        child = Child(name, argv, env=env, cwd=PROJECT_DIR, log=self.work / f"{name}.log")
        self._children.append(child)
        return child

    def _manage(self, name: str, args: list[str], env: dict[str, str]) -> Child:
        return self._child(name, [sys.executable, str(PROJECT_DIR / "manage.py"), *args], env)

    def _kubectl(self, name: str, args: list[str], input_text: str | None = None) -> None:
        argv = kubectl_command(args, kubeconfig=self.kubeconfig, cache_dir=self.work / "kube-cache")
        self._child(name, argv, dict(os.environ)).run(timeout=60, input_text=input_text)

    def _apply(self) -> None:
        self._kubectl("kubectl", ["apply", *(f"--filename={path}" for path in CRD_PATHS)])
        self._kubectl(
            "kubectl", ["wait", "--for=condition=Established", "--timeout=30s", f"crd/{CRD_NAME}"]
        )
        workload = manifests.workload(
            interval=self.settings.interval,
            rate_window=self.settings.rate_window,
            pods_port=None if self._pods is None else self._pods.port,
        )
        (self.work / "checkout.yaml").write_text(workload)
        self._kubectl("kubectl", ["apply", "-f", "-"], input_text=workload)

    def _wait_for_cluster(self, timeout: float) -> None:
        assert self._cluster is not None
        try:
            self._cluster.wait_ready(timeout, check=self._raise_if_a_child_died)
        except TimeoutError as exc:
            raise DemoError(f"{self._cluster_name} was not ready within {timeout:.0f} s.") from exc
        except RuntimeError as exc:  # it exited; the message ends with its last log lines
            raise DemoError(str(exc)) from exc

    def _wait_for_web(self, web: Child, timeout: float) -> None:
        url = f"http://127.0.0.1:{self.settings.web_port}/admin/login/"
        deadline = self._clock() + timeout
        while self._clock() < deadline:
            self._raise_if_a_child_died()
            try:
                if requests.get(url, timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise DemoError(f"the web UI did not answer {url} within {timeout:.0f} s.")

    def _raise_if_a_child_died(self) -> None:
        failed = self._first_dead_child()
        if failed is not None:
            raise DemoError(failed)

    # -- running ---------------------------------------------------------------------------

    def _banner(self) -> None:
        assert self._prometheus is not None
        self._say(
            banner(
                self.settings,
                elapsed=self._elapsed(),
                password=self.password,
                kubeconfig=self.kubeconfig,
                kubectl_dir=_missing_from_path(Path(self._kubectl_binary).parent),
                prometheus_url=self._prometheus.url,
                cluster=self._cluster_line(),
            )
        )

    def _watch(self) -> int:
        import kubernetes.config

        api = kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))
        previous: Snapshot | None = None
        try:
            while not self._stop.is_set():
                failed = self._first_dead_child()
                if failed is not None:
                    self._say(f"demo: {failed}")
                    return 1
                self._roll_out_when_due()
                try:
                    current = read_snapshot(api, manifests.NAMESPACE, manifests.NAME)
                except Exception as exc:  # the log must not die on one failed read
                    self._say(f"[{self._elapsed()}] could not read the analysis: {exc}")
                else:
                    line = describe_change(previous, current)
                    if line is not None:
                        self._say(f"[{self._elapsed()}] {line}")
                        extra = hint(previous, current)
                        if extra is not None:
                            self._say(extra)
                    previous = current
                self._stop.wait(STATUS_POLL_SECONDS)
        finally:
            api.close()
        return 0

    def _first_dead_child(self) -> str | None:
        cluster = self._cluster
        if cluster is not None and cluster.returncode is not None:
            return (
                f"{self._cluster_name} exited with code {cluster.returncode}; last lines of "
                f"{cluster.log_path}:\n{tail(cluster.log_path)}"
            )
        for child in self._children:
            code = child.returncode
            if child.name in _LONG_RUNNING and child.process is not None and code is not None:
                return (
                    f"{child.name} exited with code {code}; last lines of {child.log}:\n"
                    f"{tail(child.log)}"
                )
        if self._prometheus is not None and not self._prometheus.running:
            return f"Prometheus exited; last lines of its log:\n{tail(self._prometheus.log_file)}"
        return None

    def _roll_out_when_due(self) -> None:
        """On the real control plane, release NEXT_IMAGE once the healthy time is over."""
        due = self._up_at + self.settings.regression_after
        if self._pods is None or self._rolled_out or self._clock() < due:
            return
        self._rolled_out = True
        image = f"{manifests.NAME}={manifests.NEXT_IMAGE}"
        self._kubectl(
            "rollout",
            ["-n", manifests.NAMESPACE, "set", "image", f"deployment/{manifests.NAME}", image],
        )
        slower = round((manifests.NEXT_POD_LATENCY / manifests.POD_LATENCY - 1) * 100)
        self._say(
            f"[{self._elapsed()}] rolling out {manifests.NEXT_IMAGE}: its pods answer {slower} % "
            f"slower; one new pod every {manifests.MIN_READY_SECONDS} s (kubectl get rs,pods -w)."
        )

    def _on_regression(self) -> None:
        self._say(
            f"[{self._elapsed()}] checkout's latency regresses now: 3 % of requests take "
            "0.3-0.45 s (p99 ≈ 0.4 s)."
        )

    # -- stopping --------------------------------------------------------------------------

    def _stop_all(self) -> None:
        # The web UI and the operator first (they talk to the cluster), together to save
        # time; then the pod server, then the cluster and Prometheus, also together
        # (realcluster's launcher stops kwok, kube-scheduler, kube-controller-manager,
        # kube-apiserver and etcd in that order).
        for child in self._children:
            child.terminate()
        deadline = time.monotonic() + CHILDREN_STOP_SECONDS
        for child in self._children:
            child.stop_by(deadline)
        if self._pods is not None:
            self._pods.stop()
        if self._pods_api is not None:
            self._pods_api.close()
        if self._cluster is not None:
            self._cluster.terminate()
        if self._prometheus is not None:
            self._prometheus.stop()
        if self._cluster is not None:
            self._cluster.stop()
        if self._app is not None:
            self._app.stop()
        self._notifications.stop()

    # -- helpers ---------------------------------------------------------------------------

    def _cluster_line(self) -> str:
        assert self._cluster is not None
        if self._cluster_name == "realcluster":
            kind = f"Kubernetes {pinned_versions().kubernetes} (realcluster, pods on 1 kwok node)"
        else:
            kind = "devcluster (the project's double of the API server)"
        return f"{kind} at {self._cluster.url}"

    def _elapsed(self) -> str:
        seconds = int(self._clock() - self._started_at)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def _say(self, text: str) -> None:
        with self._print_lock:
            print(text, file=self._out, flush=True)


_LONG_RUNNING = frozenset({"operator", "web"})
_MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"


def _missing_from_path(directory: Path) -> Path | None:
    """Return ``directory`` unless the user's PATH already holds it (then None)."""
    entries = os.environ.get("PATH", "").split(os.pathsep)
    return None if str(directory) in entries else directory


def main() -> int:
    """Run the demo with the settings in the environment; return the exit code."""
    try:
        settings = DemoSettings.from_env(os.environ, PROJECT_DIR)
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    demo = Demo(settings, clock=time.monotonic, rng=random.Random(), out=sys.stdout)
    return demo.run()
