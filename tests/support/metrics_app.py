"""A small application exposing metrics for the real Prometheus to scrape.

Tests (through the ``metrics_app`` fixture) and the demo run one ``MetricsApp`` in a thread of
their own process and steer its series from Python: a gauge ``sentinel_test_value{case=...}``
set directly, and a latency histogram ``http_request_duration_seconds{app=...}`` fed with
observations so that ``histogram_quantile(0.99, rate(..._bucket[...]))`` is evaluated for real.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from types import TracebackType
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server

# Prometheus client's defaults; 0.25 s is a bucket bound, as the section-3 example threshold.
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)


class MetricsApp:
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
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Serve /metrics on 127.0.0.1 on a free port, in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("MetricsApp is already running.")
        server, thread = start_http_server(0, addr="127.0.0.1", registry=self.registry)
        self._server, self._thread = server, thread
        self.port = int(server.server_port)

    def stop(self) -> None:
        """Stop serving; the recorded series are kept for a later start()."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None

    def __enter__(self) -> MetricsApp:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

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
