"""Serve each Running pod's metrics at the pod's own IP, for pods simulated by kwok.

On realcluster (``python -m realcluster --nodes N``, docs/realcluster.md) kwok makes pods
Running and Ready without running a container, and gives each one an IP from its node's
loopback ``podCIDR``. ``PodServer`` is what would run in those containers: one thread of the
test's process watches the pods of a namespace (list, then watch from that resourceVersion)
and, for every Running pod with an IP, serves ``/metrics`` on ``<pod IP>:<port>``, the
container port its Deployment declares (named ``metrics``). Another thread plays each pod's
traffic: requests per second, a lognormal latency and a per-request error draw, following the
``Behaviour`` the test gives the pod's ReplicaSet (by ``pod-template-hash``) or image.

A Prometheus with Kubernetes service discovery (``testkit.prometheus.KubernetesPods``) finds
the same pods through the API server and scrapes them, so the series carry the labels the
real ReplicaSets gave them: nothing here writes a hash into a series.

Series of each pod: ``http_request_duration_seconds`` (histogram), ``http_requests_total``
and ``http_request_errors_total`` (counters); a pod labelled ``testkit.example.com/exports``
serves instead the series of that convention (Istio's, Linkerd's, ingress-nginx's...:
``testkit.exporters``).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import kubernetes.client
import kubernetes.watch
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from testkit.exporters import EXPORTS_LABEL, Exporter
from testkit.lifecycle import StartStop
from testkit.manifests import deployment_manifest
from testkit.ports import free_port
from testkit.serving import DEFAULT_BUCKETS, RunningServer

if TYPE_CHECKING:
    from testkit.clusters import Cluster

__all__ = [
    "METRICS_PORT_NAME",
    "Behaviour",
    "PodServer",
    "kwok_deployment",
    "kwok_pod_spec",
    "replica_set_hashes",
]

# The container port name the pods declare and Prometheus's relabelling keeps.
METRICS_PORT_NAME = "metrics"
TEMPLATE_HASH = "pod-template-hash"
# The taint and label of realcluster's simulated nodes (realcluster.nodes).
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
KWOK_NODE_SELECTOR = {"type": "kwok"}


@dataclass(frozen=True)
class Behaviour:
    """How a pod's traffic looks: requests per second, median latency, its spread, errors."""

    latency: float = 0.1
    # The sigma of the lognormal around the median: 0.1 is about ±10 %.
    spread: float = 0.1
    error_rate: float = 0.0
    rps: float = 20.0


def kwok_pod_spec(spec: dict[str, Any], port: int) -> dict[str, Any]:
    """Return a pod template's ``spec`` made to run on kwok's nodes and serve ``port``.

    The simulated nodes are tainted so that only pods meant for them land there; the first
    container declares the metrics port that Prometheus's discovery keeps.
    """
    spec = dict(spec)
    spec["tolerations"] = [*spec.get("tolerations", []), KWOK_TOLERATION]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **KWOK_NODE_SELECTOR}
    containers = [dict(c) for c in spec["containers"]]
    containers[0]["ports"] = [
        *containers[0].get("ports", []),
        {"name": METRICS_PORT_NAME, "containerPort": port},
    ]
    spec["containers"] = containers
    return spec


def kwok_deployment(
    name: str,
    namespace: str,
    image: str,
    port: int,
    *,
    replicas: int,
    min_ready_seconds: int = 0,
    container: str = "app",
    one_pod_at_a_time: bool = False,
) -> dict[str, Any]:
    """Return a Deployment whose pods run on kwok's nodes and declare the metrics ``port``.

    ``min_ready_seconds`` holds a rolling update open: a new pod counts as available only
    that long after it is Ready, so the rollout moves one step per that many seconds.
    ``one_pod_at_a_time`` makes each step one new pod and then one old pod less (``maxSurge``
    1, ``maxUnavailable`` 0), so a pause finds both ReplicaSets serving.
    """
    deployment = deployment_manifest(name, namespace, image, replicas=replicas, container=container)
    spec = deployment["spec"]
    spec["template"]["spec"] = kwok_pod_spec(spec["template"]["spec"], port)
    if min_ready_seconds:
        spec["minReadySeconds"] = min_ready_seconds
    if one_pod_at_a_time:
        spec["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        }
    return deployment


def replica_set_hashes(cluster: Cluster, namespace: str, name: str) -> list[tuple[int, str, int]]:
    """Return (revision, pod-template-hash, spec.replicas) of a Deployment's ReplicaSets,
    newest first, as the API server lists them."""
    listed = cluster.kubectl("get", "rs", "-n", namespace, "-l", f"app={name}", "-o", "json")
    found = [
        (
            int(item["metadata"]["annotations"]["deployment.kubernetes.io/revision"]),
            item["metadata"]["labels"][TEMPLATE_HASH],
            int(item["spec"]["replicas"]),
        )
        for item in json.loads(listed.stdout)["items"]
    ]
    return sorted(found, reverse=True)


@dataclass
class _Pod:
    """One served pod: its endpoint and series."""

    name: str
    ip: str
    template_hash: str
    image: str
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    server: RunningServer | None = None
    exporter: Exporter | None = None

    def __post_init__(self) -> None:
        if self.exporter is not None:
            self.registry.register(self.exporter)
            return
        self.latency = Histogram(
            "http_request_duration_seconds",
            "Request latency of the simulated pod.",
            buckets=DEFAULT_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "http_requests", "Requests the simulated pod served.", registry=self.registry
        )
        self.errors = Counter(
            "http_request_errors", "Requests that failed (5xx).", registry=self.registry
        )

    def observe(self, seconds: float, failed: bool) -> None:
        """Count one request of the pod's traffic."""
        if self.exporter is not None:
            self.exporter.observe(seconds, failed)
            return
        self.latency.observe(seconds)
        self.requests.inc()
        if failed:
            self.errors.inc()


class PodServer(StartStop):
    """Metrics endpoints for the Running pods of one namespace; use as a context manager."""

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        namespace: str,
        *,
        default: Behaviour | None = None,
        seed: int = 0,
        tick: float = 0.25,
    ) -> None:
        self.namespace = namespace
        self.port = _free_port()
        self.default = default or Behaviour()
        self._core = kubernetes.client.CoreV1Api(api)
        self._by_hash: dict[str, Behaviour] = {}
        self._by_image: dict[str, Behaviour] = {}
        self._pods: dict[str, _Pod] = {}
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._tick = tick
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watch: kubernetes.watch.Watch | None = None
        self.errors: list[str] = []

    # -- what the test steers ----------------------------------------------------------------

    def behave(
        self,
        behaviour: Behaviour,
        *,
        template_hash: str | None = None,
        image: str | None = None,
    ) -> None:
        """Make the pods of one ReplicaSet (its hash) or of one image behave so from now on."""
        if (template_hash is None) == (image is None):
            raise ValueError("name exactly one of template_hash and image")
        with self._lock:
            if template_hash is not None:
                self._by_hash[template_hash] = behaviour
            else:
                assert image is not None
                self._by_image[image] = behaviour

    def pod_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Return a Deployment's pod spec made to run on kwok and serve this server's port."""
        return kwok_pod_spec(spec, self.port)

    def served(self) -> dict[str, tuple[str, str]]:
        """The pods served right now: name -> (IP, pod-template-hash)."""
        with self._lock:
            return {pod.name: (pod.ip, pod.template_hash) for pod in self._pods.values()}

    def wait_served(
        self, predicate: Callable[[dict[str, tuple[str, str]]], bool], timeout: float = 30
    ) -> dict[str, tuple[str, str]]:
        """Wait until ``predicate(served())`` holds and return what was served."""
        deadline = time.monotonic() + timeout
        while True:
            served = self.served()
            if predicate(served):
                return served
            if time.monotonic() > deadline:
                raise AssertionError(f"pods served: {served}; errors: {self.errors[-3:]}")
            time.sleep(0.1)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching the namespace and playing traffic, each in a daemon thread."""
        if self._threads:
            raise RuntimeError("PodServer is already running.")
        self._stop.clear()
        for target in (self._watch_pods, self._play_traffic):
            thread = threading.Thread(target=target, daemon=True, name=f"pods-{target.__name__}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stop both threads and every pod's endpoint."""
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()
        for thread in self._threads:
            thread.join(10)
        self._threads = []
        with self._lock:
            pods, self._pods = list(self._pods.values()), {}
        for pod in pods:
            _close(pod)

    # -- watching the pods -------------------------------------------------------------------

    def _watch_pods(self) -> None:
        resource_version = ""
        while not self._stop.is_set():
            try:
                if not resource_version:
                    listed = self._core.list_namespaced_pod(self.namespace)
                    self._sync([pod.to_dict() for pod in listed.items])
                    resource_version = listed.metadata.resource_version
                self._watch = kubernetes.watch.Watch()
                # Short watches, so stop() never waits long for the stream to end.
                for event in self._watch.stream(
                    self._core.list_namespaced_pod,
                    self.namespace,
                    resource_version=resource_version,
                    timeout_seconds=2,
                    _request_timeout=10,
                ):
                    pod = event["object"].to_dict()
                    resource_version = pod["metadata"]["resource_version"]
                    self._apply(event["type"], pod)
                    if self._stop.is_set():
                        break
            except ApiException as exc:
                if exc.status == 410:  # resourceVersion too old: list again
                    resource_version = ""
                    continue
                self._note(f"watch: HTTP {exc.status} {exc.reason}")
                self._stop.wait(0.5)
            except Exception as exc:  # the thread must survive a dropped connection
                if not self._stop.is_set():
                    self._note(f"watch: {type(exc).__name__}: {exc}")
                    self._stop.wait(0.5)
            # Endpoints that could not bind yet (an IP still held by a pod going away) retry.
            self._retry_binds()

    def _sync(self, pods: Sequence[dict[str, Any]]) -> None:
        names = {pod["metadata"]["name"] for pod in pods}
        with self._lock:
            gone = [name for name in self._pods if name not in names]
        for name in gone:
            self._drop(name)
        for pod in pods:
            self._apply("MODIFIED", pod)

    def _apply(self, kind: str, pod: Mapping[str, Any]) -> None:
        metadata, status = pod["metadata"], pod.get("status") or {}
        name = metadata["name"]
        running = (
            kind != "DELETED"
            and status.get("phase") == "Running"
            and bool(status.get("pod_ip"))
            and metadata.get("deletion_timestamp") is None
        )
        with self._lock:
            current = self._pods.get(name)
        if not running:
            if current is not None:
                self._drop(name)
            return
        if current is not None and current.ip == status["pod_ip"]:
            return
        if current is not None:
            self._drop(name)
        labels = metadata.get("labels") or {}
        exports = labels.get(EXPORTS_LABEL)
        served = _Pod(
            name=name,
            ip=status["pod_ip"],
            template_hash=labels.get(TEMPLATE_HASH, ""),
            image=pod["spec"]["containers"][0]["image"],
            exporter=(
                Exporter(exports, labels.get("app", ""), self.namespace) if exports else None
            ),
        )
        self._bind(served)
        with self._lock:
            self._pods[name] = served

    def _bind(self, pod: _Pod) -> None:
        try:
            server, thread = start_http_server(self.port, addr=pod.ip, registry=pod.registry)
        except OSError as exc:
            self._note(f"{pod.name}: cannot listen on {pod.ip}:{self.port}: {exc}")
            return
        pod.server = RunningServer(server, thread)

    def _retry_binds(self) -> None:
        with self._lock:
            unbound = [pod for pod in self._pods.values() if pod.server is None]
        for pod in unbound:
            self._bind(pod)

    def _drop(self, name: str) -> None:
        with self._lock:
            pod = self._pods.pop(name, None)
        if pod is not None:
            # Shutting a server down waits for its poll loop (up to half a second): not in the
            # watch thread, which would serve the next pods that much later.
            threading.Thread(target=_close, args=(pod,), daemon=True).start()

    def _note(self, message: str) -> None:
        self.errors.append(message)

    # -- playing the traffic -----------------------------------------------------------------

    def _play_traffic(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self._tick):
            now = time.monotonic()
            elapsed, last = now - last, now
            with self._lock:
                pods = [(pod, self._behaviour(pod)) for pod in self._pods.values() if pod.server]
            for pod, behaviour in pods:
                for _ in range(self._count(behaviour.rps * elapsed)):
                    seconds = behaviour.latency * math.exp(self._rng.gauss(0, behaviour.spread))
                    pod.observe(seconds, self._rng.random() < behaviour.error_rate)

    def _behaviour(self, pod: _Pod) -> Behaviour:
        return self._by_hash.get(pod.template_hash) or self._by_image.get(pod.image, self.default)

    def _count(self, expected: float) -> int:
        """Requests in one tick: the expected number, its fraction drawn at random."""
        whole = int(expected)
        return whole + (1 if self._rng.random() < expected - whole else 0)


def _close(pod: _Pod) -> None:
    if pod.server is not None:
        with contextlib.suppress(OSError):
            pod.server.stop()


def _free_port() -> int:
    """A port free on every address right now (pods' IPs are bound one by one later)."""
    return free_port("")
