"""The series a pod exports under each metric convention the template library reads.

``testkit.pod_server.PodServer`` serves, for a pod labelled ``EXPORTS_LABEL: <convention>``,
the series that convention's software would export for that pod's traffic, with the metric
names, label names and histogram buckets each project documents (docs/templates.md, "The
library"), instead of the test kit's own ``http_requests_total``/``http_request_errors_total``:

- ``istio``: what the pod's sidecar reports for the requests it received:
  ``istio_requests_total`` and ``istio_request_duration_milliseconds`` with
  ``reporter="destination"``, ``destination_workload``, ``destination_workload_namespace``,
  ``response_code``.
- ``linkerd``: the proxy's inbound ``response_total`` (``classification``, ``status_code``)
  and ``response_latency_ms``. Linkerd's Prometheus adds ``deployment`` from the pod; here the
  test's pods carry a ``deployment`` label, which the test Prometheus copies likewise.
- ``http-server``: a Prometheus client library's ``http_requests_total{code, method}`` and
  ``http_request_duration_seconds``.
- ``ingress-nginx``: ``nginx_ingress_controller_requests`` (a counter without ``_total``) and
  ``nginx_ingress_controller_request_duration_seconds`` with the controller's labels, among them
  ``namespace`` (the Ingress's), which a scrape not honouring labels keeps as
  ``exported_namespace``.
- ``envoy-gateway``: Envoy's ``envoy_cluster_upstream_rq_xx{envoy_response_code_class}``,
  ``envoy_cluster_upstream_rq_total`` and ``envoy_cluster_upstream_rq_time`` for the cluster
  Envoy Gateway names after the route (``httproute/NAMESPACE/NAME/rule/0``).

Those of a gateway (ingress-nginx, Envoy) are really the gateway pod's; here the service's own
pods export them, which the templates cannot tell apart: they sum the series of the service.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

from testkit.serving import DEFAULT_BUCKETS

__all__ = ["CONVENTIONS", "EXPORTS_LABEL", "Exporter"]

# The pod label naming the convention a pod's series follow.
EXPORTS_LABEL = "testkit.example.com/exports"
# Envoy's and Istio's default histogram buckets (milliseconds).
_ENVOY_MS = (0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
             300000, 600000, 1800000, 3600000)  # fmt: skip
# The Linkerd proxy's latency buckets (milliseconds).
_LINKERD_MS = (1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500, 1000, 2000, 3000,
               4000, 5000, 10000, 20000, 30000, 40000, 50000)  # fmt: skip


@dataclass(frozen=True)
class _Convention:
    counter: str
    histogram: str
    # The histogram's unit in seconds (0.001 for milliseconds) and its boundaries in that unit.
    unit: float
    buckets: Sequence[float]


CONVENTIONS: Mapping[str, _Convention] = {
    "istio": _Convention(
        "istio_requests_total", "istio_request_duration_milliseconds", 0.001, _ENVOY_MS
    ),
    "linkerd": _Convention("response_total", "response_latency_ms", 0.001, _LINKERD_MS),
    "http-server": _Convention(
        "http_requests_total", "http_request_duration_seconds", 1.0, DEFAULT_BUCKETS
    ),
    "ingress-nginx": _Convention(
        "nginx_ingress_controller_requests",
        "nginx_ingress_controller_request_duration_seconds",
        1.0,
        DEFAULT_BUCKETS,
    ),
    "envoy-gateway": _Convention(
        "envoy_cluster_upstream_rq_xx", "envoy_cluster_upstream_rq_time", 0.001, _ENVOY_MS
    ),
}


class Exporter:
    """A prometheus_client collector of one pod's requests under one convention."""

    def __init__(self, convention: str, app: str, namespace: str) -> None:
        if convention not in CONVENTIONS:
            raise ValueError(f"{EXPORTS_LABEL}: {convention!r} is none of {sorted(CONVENTIONS)}")
        self.name = convention
        self._convention = CONVENTIONS[convention]
        self._app = app
        self._namespace = namespace
        self._lock = threading.Lock()
        self._requests = {False: 0, True: 0}  # by failed
        # Per failed: count per bucket (the last is +Inf) and the sum, in the unit.
        self._buckets = {f: [0] * (len(self._convention.buckets) + 1) for f in (False, True)}
        self._sums = {False: 0.0, True: 0.0}

    def observe(self, seconds: float, failed: bool) -> None:
        """Count one request that took ``seconds`` and failed (5xx) or not."""
        value = seconds / self._convention.unit
        with self._lock:
            self._requests[failed] += 1
            self._sums[failed] += value
            index = next(
                (i for i, bound in enumerate(self._convention.buckets) if value <= bound),
                len(self._convention.buckets),
            )
            self._buckets[failed][index] += 1

    # -- the series ----------------------------------------------------------------------------

    def _labels(self, failed: bool) -> dict[str, str]:
        app, namespace, status = self._app, self._namespace, "503" if failed else "200"
        host = f"{app}.{namespace}.svc.cluster.local"
        if self.name == "istio":
            return {
                "reporter": "destination",
                "source_workload": "frontend",
                "destination_workload": app,
                "destination_workload_namespace": namespace,
                "destination_service": host,
                "request_protocol": "http",
                "response_code": status,
            }
        if self.name == "linkerd":
            return {
                "direction": "inbound",
                "authority": f"{host}:8080",
                "tls": "true",
                "status_code": status,
            }
        if self.name == "http-server":
            return {"code": status, "method": "get"}
        if self.name == "ingress-nginx":
            return {
                "controller_class": "k8s.io/ingress-nginx",
                "controller_namespace": "ingress-nginx",
                "controller_pod": "ingress-nginx-controller",
                "host": f"{app}.example.com",
                "ingress": app,
                "method": "GET",
                "namespace": namespace,
                "path": "/",
                "service": app,
                "status": status,
                "canary": "",
            }
        return {"envoy_cluster_name": f"httproute/{namespace}/{app}/rule/0"}

    def _counter_labels(self, failed: bool) -> dict[str, str]:
        labels = self._labels(failed)
        if self.name == "linkerd":
            labels["classification"] = "failure" if failed else "success"
        elif self.name == "envoy-gateway":
            labels["envoy_response_code_class"] = "5" if failed else "2"
        return labels

    def collect(self) -> Iterator[Metric]:
        """The families, as prometheus_client's registry asks a collector."""
        with self._lock:
            requests = dict(self._requests)
            buckets = {f: list(counts) for f, counts in self._buckets.items()}
            sums = dict(self._sums)
        convention = self._convention
        counter = _family(convention.counter)
        for failed in (False, True):
            counter.add_sample(
                convention.counter, self._counter_labels(failed), float(requests[failed])
            )
        yield counter
        # Envoy's histogram and total are per cluster, not per response class.
        sides = [(self._labels(False), [a + b for a, b in zip(*buckets.values(), strict=True)],
                  sums[False] + sums[True])] if self.name == "envoy-gateway" else [
            (self._labels(failed), buckets[failed], sums[failed]) for failed in (False, True)
        ]  # fmt: skip
        histogram = Metric(convention.histogram, "Request latency.", "histogram")
        bounds = [*map(floatToGoString, convention.buckets), "+Inf"]
        for labels, counts, total in sides:
            cumulative = 0
            for bound, count in zip(bounds, counts, strict=True):
                cumulative += count
                histogram.add_sample(
                    f"{convention.histogram}_bucket", {**labels, "le": bound}, float(cumulative)
                )
            histogram.add_sample(f"{convention.histogram}_count", labels, float(cumulative))
            histogram.add_sample(f"{convention.histogram}_sum", labels, total)
        yield histogram
        if self.name == "envoy-gateway":
            rq_total = _family("envoy_cluster_upstream_rq_total")
            rq_total.add_sample(
                "envoy_cluster_upstream_rq_total",
                self._labels(False),
                float(requests[False] + requests[True]),
            )
            yield rq_total


def _family(name: str) -> Metric:
    """A counter family whose samples are exposed under exactly ``name``.

    prometheus_client writes a counter's TYPE line as ``<family>_total``, so a name without
    that suffix (ingress-nginx's, Envoy's ``_xx``) is exposed untyped, as Prometheus reads it
    all the same.
    """
    if name.endswith("_total"):
        return Metric(name.removesuffix("_total"), "Requests.", "counter")
    return Metric(name, "Requests.", "unknown")
