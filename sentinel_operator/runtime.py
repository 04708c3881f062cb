"""Run the whole operator in one process: ``python manage.py runoperator`` calls ``run``.

What runs, and where:

- the django-q2 cluster (``django_q.cluster.Cluster``): a sentinel process forking the worker
  processes that execute ``tasks.reconcile_batch_task`` and the periodic jobs. It is started first,
  before any thread exists, because it forks, and its processes die with this one, however this
  one dies (``_sentinel_of``, ``lifeline``);
- the leader elector, ticking in the main thread every ``retry_period``;
- the watch (one thread per namespace scope) and the due-time dispatcher (one thread), both
  active only while this replica holds the Lease;
- a ``/metrics`` HTTP endpoint on ``metrics_port``.

SIGTERM and SIGINT stop the threads and the cluster and release the Lease, so another replica
takes over at once. Misconfiguration is reported by raising ``StartupError`` with one sentence;
the command turns it into one line on stderr and exit code 2.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from django import db
from django.conf import settings
from django.db import DatabaseError
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import MetricsHandler

from notifications.pump import DeliveryPump
from sentinel_cluster import kube
from sentinel_operator import lifeline, metrics, tasks
from sentinel_operator.backtest_jobs import BacktestPump
from sentinel_operator.caches import Caches
from sentinel_operator.dispatcher import Dispatcher
from sentinel_operator.leader import LeaderElector
from sentinel_operator.periodic import Periodic
from sentinel_operator.watch import AnalysisWatch

log = logging.getLogger(__name__)


class _MetricsServer(ThreadingHTTPServer):
    """The operator's ``/metrics`` server: a thread per scrape, quiet about scrapers that left.

    A scraper whose timeout ran out (Prometheus's, or a probe's on a starved node) closes the
    connection while the answer is being written. That is the scraper's business, not an error
    of the operator: one debug line instead of ``socketserver``'s traceback on stderr, which
    read like a crash in the operator's log.
    """

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            log.debug("metrics: the scraper at %s hung up: %s", client_address[0], error)
            return
        log.exception("metrics: answering the scraper at %s failed", client_address[0])


class StartupError(Exception):
    """The operator cannot start; the message is one sentence for the person running it."""


@dataclass(frozen=True)
class Options:
    metrics_port: int = 9100
    metrics_address: str = "127.0.0.1"
    lease_name: str = "rollout-sentinel"
    lease_namespace: str = field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE") or "default"
    )
    identity: str = field(
        default_factory=lambda: (
            os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
        )
    )
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    kubeconfig: str | None = field(default_factory=lambda: os.environ.get("KUBECONFIG") or None)
    # Run the django-q2 workers here; off for a replica that only watches and dispatches.
    workers: bool = True


def _now() -> datetime:
    return datetime.now(UTC)


def connect(options: Options) -> kube.KubeClient:
    """Return a client for the configured cluster; raise ``StartupError`` if it cannot answer."""
    try:
        client = kube.KubeClient(kube.load_api_client(options.kubeconfig), timeout=10.0)
    except kube.KubeError as exc:
        raise StartupError(str(exc)) from exc
    host = client.api_client.configuration.host
    last: kube.KubeError | None = None
    # A few tries: an API server restarting along with us is not a configuration error.
    for _ in range(5):
        try:
            client.request("GET", "/version", timeout=5.0)
            return client
        except kube.Forbidden:
            return client  # reachable; RBAC problems are reported where they bite
        except kube.KubeError as exc:
            last = exc
            time.sleep(1.0)
    raise StartupError(f"cannot reach the Kubernetes API server at {host}: {last}")


class OperatorRuntime:
    """The operator's threads and processes, started and stopped together."""

    def __init__(self, options: Options, client: kube.KubeClient) -> None:
        self.options = options
        self.client = client
        self.stop_event = threading.Event()
        self.elector = LeaderElector(
            client,
            namespace=options.lease_namespace,
            name=options.lease_name,
            identity=options.identity,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            monotonic=time.monotonic,
            now=_now,
        )
        self._threads: list[threading.Thread] = []
        # A django_q.cluster.Cluster (untyped library).
        self._cluster: Any = None
        self._http: ThreadingHTTPServer | None = None
        self.caches: Caches | None = None

    def _is_leader(self) -> bool:
        return self.elector.is_leader

    def _leader_metrics(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "sentinel_leader",
            "1 when this replica holds the leader Lease and dispatches.",
            value=1.0 if self.elector.is_leader else 0.0,
        )

    def run(self) -> int:
        """Run until SIGTERM or SIGINT; return the exit code."""
        try:
            tasks.drop_schedules()
        except DatabaseError as exc:
            raise StartupError(
                f"the database is not ready ({exc}); run `python manage.py migrate` first"
            ) from exc
        # Bound now so that a busy port stops us before anything is forked; served later. The
        # forked processes close their copy at once (``_sentinel_of``): one of them outliving
        # us must not keep the port from our replacement.
        self._http = self._bind_metrics()
        if self.options.workers:
            preload_worker_modules()
            # Before any thread starts: forking a process with threads can copy a held lock.
            self._start_cluster()
        # Installed after the cluster: Cluster() takes SIGTERM/SIGINT for itself.
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self._spawn("metrics-http", self._http.serve_forever)
        self._start_threads()
        log.info(
            "operator %s running; lease %s/%s; metrics on :%d",
            self.options.identity,
            self.options.lease_namespace,
            self.options.lease_name,
            self._http.server_address[1],
        )
        code = 0
        try:
            while not self.stop_event.is_set():
                self.elector.tick()
                if self._cluster is not None and not self._cluster.sentinel.is_alive():
                    # Dispatching onto a queue nobody works off helps no one: exit, get restarted.
                    log.error("operator: the django-q2 cluster died; stopping")
                    code = 1
                    break
                self.stop_event.wait(self.options.retry_period)
        finally:
            self.shutdown()
        return code

    def shutdown(self) -> None:
        """Stop everything and give the Lease up."""
        self.stop_event.set()
        deadline = time.monotonic() + 1.0
        for thread in self._threads:
            # The watch may sit in a long read; its thread is a daemon and dies with us.
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._cluster is not None:
            if self._cluster.sentinel.is_alive():
                self._cluster.stop()
            self._cluster = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        self.elector.release()
        log.info("operator %s stopped", self.options.identity)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("operator: got signal %d, stopping", signum)
        self.stop_event.set()

    def _start_cluster(self) -> None:
        assert self._http is not None  # bound first: see run()
        # Children must not share the parent's database connections.
        db.connections.close_all()
        lifeline.open_pipe()
        cluster = _start_q_cluster(self._http.socket)
        self._cluster = cluster

    def _bind_metrics(self) -> ThreadingHTTPServer:
        registry = metrics.scrape_registry(self._leader_metrics)
        handler = MetricsHandler.factory(registry)
        try:
            server = _MetricsServer(
                (self.options.metrics_address, self.options.metrics_port), handler
            )
        except OSError as exc:
            raise StartupError(
                f"cannot serve /metrics on port {self.options.metrics_port}: {exc.strerror}"
            ) from exc
        return server

    def _start_threads(self) -> None:
        scopes: tuple[str | None, ...] = tuple(settings.SENTINEL.namespaces) or (None,)
        watches: dict[str, AnalysisWatch] = {}
        for scope in scopes:
            watch = AnalysisWatch(self.client, namespace=scope, now=_now)
            watches[scope or ""] = watch
            self._spawn(
                f"watch-{scope or 'all'}",
                lambda w=watch: w.run(self.stop_event, active=self._is_leader),
            )

        def analysis(namespace: str, name: str) -> dict[str, Any] | None:
            watch = watches.get(namespace) or watches.get("")
            return watch.cached(namespace, name) if watch is not None else None

        # Before the dispatcher: what the caches hold goes with each task, so that a worker
        # reads nothing else in the steady state (docs/architecture.md#reads-from-caches).
        self.caches = Caches(
            self.client, namespaces=settings.SENTINEL.namespaces, analysis=analysis
        )
        self._threads += self.caches.start(self.stop_event, self._is_leader)
        dispatcher = Dispatcher(
            now=_now,
            is_leader=self._is_leader,
            namespaces=settings.SENTINEL.namespaces,
            snapshot=self.caches.snapshot,
        )
        self._spawn("dispatcher", lambda: dispatcher.run(self.stop_event))
        # Notifications are sent by workers, queued by the leader like reconciles
        # (docs/notifications.md).
        pump = DeliveryPump(now=_now, is_leader=self._is_leader)
        self._spawn("notify-pump", lambda: pump.run(self.stop_event))
        # Backtests asked through the REST API, one at a time (docs/backtest.md).
        backtests = BacktestPump(now=_now, is_leader=self._is_leader)
        self._spawn("backtest-pump", lambda: backtests.run(self.stop_event))
        # The full resync and the pruning: queued by the leader, never by django-q2's scheduler.
        periodic = Periodic(is_leader=self._is_leader)
        self._spawn("periodic", lambda: periodic.run(self.stop_event))

    def _spawn(self, name: str, target: Callable[[], object]) -> None:
        def body() -> None:
            try:
                target()
            finally:
                db.connections.close_all()

        thread = threading.Thread(target=body, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)


def _sentinel_of(parent: int, listener: socket.socket, stop_event: Any, *args: Any) -> None:
    """Run django-q2's Sentinel, its processes tied to the operator process's life.

    django-q2's sentinel never checks its parent, and outside a container nothing kills the
    orphans of a killed process. So, before the sentinel forks anything:

    - the operator's ``/metrics`` listener and the write end of the lifeline pipe, inherited
      by the fork, are closed: only the operator holds them;
    - the kernel sends SIGUSR1 when the operator dies (PR_SET_PDEATHSIG), which sets the
      cluster's stop event: the pusher takes no more tasks, a running task finishes and no
      worker starts another (``lifeline.no_task_once_gone``), and the processes exit as on a
      normal stop. Should that stop hang, the sentinel exits once a task's time limit has
      passed;
    - every process the sentinel forks is SIGKILLed by the kernel when the sentinel dies.
    """
    from django_q.cluster import Sentinel

    listener.close()
    lifeline.drop_write_end()
    lifeline.no_task_once_gone()
    # Time for the running tasks to end: django-q2's own limit on one, and a little.
    grace = float(settings.Q_CLUSTER.get("timeout") or 60) + 5.0

    def on_parent_death(signum: int, frame: FrameType | None) -> None:
        # Not set() right here: the handler interrupts the guard loop inside
        # stop_event.wait(), and a multiprocessing Event's notify waits for that very sleeper.
        threading.Thread(target=stop_event.set, daemon=True).start()
        threading.Thread(target=_exit_after, args=(grace,), daemon=True).start()

    signal.signal(signal.SIGUSR1, on_parent_death)
    lifeline.die_with_parent(signal.SIGUSR1)
    if os.getppid() != parent:  # the parent died before the prctl took effect
        on_parent_death(signal.SIGUSR1, None)
    lifeline.children_die_with_this_process()
    Sentinel(stop_event, *args)


def _exit_after(seconds: float) -> None:
    # os._exit: the workers still there are SIGKILLed by the kernel as this process ends.
    time.sleep(seconds)
    log.error(
        "django-q2 sentinel: its operator died %.0f s ago and it has not stopped; exiting", seconds
    )
    os._exit(1)


def preload_worker_modules() -> None:
    """Import what the workers send notifications with, once, before they are forked.

    Apprise, matplotlib and its font cache imported in each worker on its first message are a
    private copy per worker; imported here they are pages every forked worker shares, which keeps
    both replicas within the budget of docs/operations.md#memory (found by the soak,
    docs/reliability.md; the figures are in docs/performance.md). Without a channel configured
    the workers never send, so neither is imported at all.
    """
    if not settings.SENTINEL_NOTIFY.channels:
        return
    from matplotlib import font_manager

    import notifications.tasks  # noqa: F401  (Apprise, matplotlib, the message composer)

    font_manager.fontManager.get_default_size()


def _start_q_cluster(listener: socket.socket) -> Any:
    """Start a django-q2 ``Cluster`` whose processes stop when this process dies.

    The same steps as ``Cluster.start``, with the sentinel wrapped by ``_sentinel_of``, which
    closes its copy of ``listener``.
    """
    from django_q.cluster import Cluster, get_mp_context

    cluster = Cluster()
    ctx = get_mp_context()
    cluster.stop_event = ctx.Event()
    cluster.start_event = ctx.Event()
    cluster.sentinel = ctx.Process(
        target=_sentinel_of,
        name="sentinel-q-cluster",
        args=(
            os.getpid(),
            listener,
            cluster.stop_event,
            cluster.start_event,
            cluster.cluster_id,
            None,
            None,
        ),
    )
    cluster.sentinel.start()
    while not cluster.start_event.is_set():
        if not cluster.sentinel.is_alive():
            raise StartupError(
                f"the django-q2 cluster failed to start (exit code {cluster.sentinel.exitcode}); "
                "see the log above"
            )
        time.sleep(0.05)
    return cluster


def prepare_metrics_dir() -> Path:
    """Switch this process (and the workers it forks) to multiprocess metrics."""
    configured = os.environ.get(metrics.MULTIPROC_ENV)
    directory = (
        Path(configured) if configured else Path(tempfile.mkdtemp(prefix="sentinel-metrics-"))
    )
    metrics.enable_multiprocess(directory)
    return directory


def run(options: Options) -> int:
    """Start the operator with ``options``; raise ``StartupError`` on misconfiguration."""
    client = connect(options)
    prepare_metrics_dir()
    random.seed()
    return OperatorRuntime(options, client).run()
