"""The demo's ``checkout`` service: a latency histogram fed by synthetic requests.

``python -m demo`` (``demo.runner``) runs one ``CheckoutApp`` in a thread of its own process. It
serves ``/metrics`` (prometheus-client) on a free local port with
``http_request_duration_seconds{app="checkout"}``, and a background thread records
``requests_per_second`` synthetic requests: healthy (p99 about 0.09 s) until ``regression_after``
seconds have passed, then a regression where 3 % of requests take 0.3-0.45 s, which
``histogram_quantile(0.99, rate(...))`` reports as a p99 of about 0.4 s — above the analysis's 0.25
s. On the real control plane the Deployment's own pods serve theirs (``testkit.pod_server``),
and this app, whose ``regression_after`` is then never reached, is the service's front door.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Histogram

from testkit.lifecycle import StartStop
from testkit.serving import DEFAULT_BUCKETS, RunningServer, serve_metrics

APP_LABEL = "checkout"

# prometheus-client's default buckets: 0.25 s, the threshold, is a bucket bound, so the
# quantile interpolation puts the healthy p99 below it and the regressed p99 well above it.
BUCKETS: tuple[float, ...] = DEFAULT_BUCKETS

# Share of requests that are slow during the regression. With 3 % in (0.25, 0.5] the 99th
# percentile lands 2/3 into that bucket: 0.25 + (0.99 - 0.97) / 0.03 * 0.25 ≈ 0.42 s.
SLOW_SHARE = 0.03


def sample_latency(rng: random.Random, *, regressed: bool) -> float:
    """Return one synthetic request duration in seconds."""
    draw = rng.random()
    if regressed and draw < SLOW_SHARE:
        return rng.uniform(0.3, 0.45)
    if draw < 0.97:
        return rng.uniform(0.01, 0.06)
    if draw < 0.995:
        return rng.uniform(0.06, 0.1)
    return rng.uniform(0.1, 0.2)


class CheckoutApp(StartStop):
    """Serve the checkout histogram and feed it; use as a context manager."""

    def __init__(
        self,
        *,
        regression_after: float,
        clock: Callable[[], float],
        rng: random.Random,
        requests_per_second: int = 50,
        on_regression: Callable[[], None] | None = None,
    ) -> None:
        # Its own registry: only the checkout series, not this process's default collectors.
        self.registry = CollectorRegistry()
        self._latency = Histogram(
            "http_request_duration_seconds",
            "Duration of checkout's HTTP requests (synthetic, from the demo).",
            ["app"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.regression_after = regression_after
        self._clock = clock
        self._rng = rng
        self._requests_per_second = requests_per_second
        self._on_regression = on_regression
        self._stop = threading.Event()
        self._feeder: threading.Thread | None = None
        self._server: RunningServer | None = None
        self._started_at = 0.0
        self.regressed = False
        self.port = 0

    @property
    def target(self) -> str:
        """Return the ``host:port`` Prometheus scrapes."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve /metrics on a free port and start the synthetic traffic."""
        self._server = serve_metrics(self.registry)
        self.port = self._server.port
        # Create the series at once so rate() has a first sample before traffic counts.
        self._latency.labels(app=APP_LABEL)
        self._started_at = self._clock()
        self._feeder = threading.Thread(target=self._feed, name="checkout-traffic", daemon=True)
        self._feeder.start()

    def stop(self) -> None:
        """Stop the traffic and the HTTP server."""
        self._stop.set()
        if self._feeder is not None:
            self._feeder.join(timeout=5)
        if self._server is not None:
            self._server.stop()
        self._feeder = self._server = None

    def _feed(self) -> None:
        tick = 0.1
        per_tick = max(1, round(self._requests_per_second * tick))
        child = self._latency.labels(app=APP_LABEL)
        while not self._stop.wait(tick):
            if not self.regressed and self._clock() - self._started_at >= self.regression_after:
                self.regressed = True
                if self._on_regression is not None:
                    self._on_regression()
            for _ in range(per_tick):
                child.observe(sample_latency(self._rng, regressed=self.regressed))
