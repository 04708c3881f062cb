"""A small application exposing metrics for the real Prometheus to scrape.

Tests (through the ``metrics_app`` fixture) and the benchmarks run one ``MetricsApp`` in a
thread of their own process and steer its series from Python: a gauge
``sentinel_test_value{case=...}`` set directly, and a latency histogram
``http_request_duration_seconds{app=...}`` fed with observations so that
``histogram_quantile(0.99, rate(..._bucket[...]))`` is evaluated for real.
``GaugeSetter`` sets a test's gauge and waits until Prometheus has scraped the new value.
``sentinel_test_pod_value{case, pod_template_hash, pod}`` plays pods' series for compare
(docs/analysis.md): no kubelet runs pods on realcluster, so the app serves their traffic,
labelled with the real ReplicaSets' hashes. ``sentinel_test_pod_requests_total`` and
``sentinel_test_pod_errors_total`` (same labels) are pods' request counters whose every event
the test knows (``serve_pod``), for the sequential kind's exact step counts; ``restart_pod``
resets a pod's counters to zero, as a restarted process does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from testkit.lifecycle import StartStop

# DEFAULT_BUCKETS are prometheus-client's defaults; 0.25 s is a bucket bound, as the section-3
# example threshold.
from testkit.serving import DEFAULT_BUCKETS, RunningServer, serve_metrics

if TYPE_CHECKING:
    from testkit.prometheus import PrometheusServer


class MetricsApp(StartStop):
    """An HTTP ``/metrics`` endpoint on a free local port; use as a context manager."""

    def __init__(self, *, buckets: Sequence[float] = DEFAULT_BUCKETS) -> None:
        # Its own registry, so the process's other metrics (the operator's) are not scraped.
        self.registry = CollectorRegistry()
        self._value = Gauge(
            "sentinel_test_value",
            "A value set directly by a test, one series per case.",
            ["case"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "http_request_duration_seconds",
            "Request latency fed by a test or the demo, one series set per app.",
            ["app"],
            buckets=tuple(buckets),
            registry=self.registry,
        )
        self._pod_value = Gauge(
            "sentinel_test_pod_value",
            "A value per pod set by a test, labelled with its ReplicaSet's pod-template-hash.",
            ["case", "pod_template_hash", "pod"],
            registry=self.registry,
        )
        pod_labels = ["case", "pod_template_hash", "pod"]
        self._pod_requests = Counter(
            "sentinel_test_pod_requests",
            "Requests a test's pod served, labelled as sentinel_test_pod_value.",
            pod_labels,
            registry=self.registry,
        )
        self._pod_errors = Counter(
            "sentinel_test_pod_errors",
            "Requests a test's pod failed, labelled as sentinel_test_pod_value.",
            pod_labels,
            registry=self.registry,
        )
        self._server: RunningServer | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Serve /metrics on 127.0.0.1 on a free port, in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("MetricsApp is already running.")
        self._server = serve_metrics(self.registry)
        self.port = self._server.port

    def stop(self) -> None:
        """Stop serving; the recorded series are kept for a later start()."""
        if self._server is None:
            return
        self._server.stop()
        self._server = None

    @property
    def target(self) -> str:
        """Return the ``host:port`` Prometheus scrapes."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.target}/metrics"

    # -- the gauge -------------------------------------------------------------------------

    def set(self, case: str, value: float) -> None:
        """Set ``sentinel_test_value{case=case}``; NaN and ±Inf are exposed as such."""
        self._value.labels(case=case).set(value)

    def clear(self, case: str) -> None:
        """Remove the case's series; Prometheus marks it stale at the next scrape."""
        with contextlib.suppress(KeyError):
            self._value.remove(case)

    def set_pod(self, case: str, template_hash: str, pod: str, value: float) -> None:
        """Set ``sentinel_test_pod_value`` of one pod of the ReplicaSet ``template_hash``."""
        self._pod_value.labels(case=case, pod_template_hash=template_hash, pod=pod).set(value)

    def serve_pod(
        self, case: str, template_hash: str, pod: str, requests: int, errors: int = 0
    ) -> None:
        """Count ``requests`` more requests of one pod, ``errors`` of them failed (0: create)."""
        labels = {"case": case, "pod_template_hash": template_hash, "pod": pod}
        self._pod_requests.labels(**labels).inc(requests)
        self._pod_errors.labels(**labels).inc(errors)

    def restart_pod(self, case: str, template_hash: str, pod: str) -> None:
        """Reset one pod's request counters to zero, as its process restarting would."""
        for counter in (self._pod_requests, self._pod_errors):
            with contextlib.suppress(KeyError):
                counter.remove(case, template_hash, pod)
            counter.labels(case=case, pod_template_hash=template_hash, pod=pod)

    def clear_pods(self, case: str) -> None:
        """Remove every pod series of ``case``."""
        for labels in list(self._pod_value._metrics):  # prometheus-client keeps them by labels
            if labels[0] == case:
                with contextlib.suppress(KeyError):
                    self._pod_value.remove(*labels)

    # -- the latency histogram -------------------------------------------------------------

    def observe(self, app: str, seconds: float, n: int = 1) -> None:
        """Record ``n`` requests of ``app`` that took ``seconds``; n=0 only creates the series.

        ``rate()`` needs the counters to rise between two scrapes, so create the series
        (n=0), let Prometheus scrape it once, then observe.
        """
        child = self._latency.labels(app=app)
        for _ in range(n):
            child.observe(seconds)

    def clear_app(self, app: str) -> None:
        """Remove the app's histogram series."""
        with contextlib.suppress(KeyError):
            self._latency.remove(app)


class GaugeSetter:
    """Set the test's ``sentinel_test_value{case=...}`` and wait until Prometheus has it."""

    def __init__(self, app: MetricsApp, prometheus: PrometheusServer, case: str) -> None:
        self.app, self.prometheus, self.case = app, prometheus, case

    def __call__(self, value: float) -> None:
        self.app.set(self.case, value)
        self.prometheus.wait_for(
            f'sentinel_test_value{{case="{self.case}"}}', lambda values: values == [value], 20
        )
