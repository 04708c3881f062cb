"""Serve local HTTP servers from daemon threads and stop them cleanly.

The kit's ``MetricsApp`` and ``FaultProxy`` and the demo's checkout app (``demo.app``) use these
helpers, so the start/stop sequence of a background server is written once. Every server binds
127.0.0.1 on a free port (port 0), never a fixed one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import HTTPServer

from prometheus_client import CollectorRegistry, start_http_server

__all__ = ["DEFAULT_BUCKETS", "RunningServer", "serve", "serve_metrics"]

# prometheus-client's default histogram buckets (it appends +Inf itself).
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


@dataclass(frozen=True)
class RunningServer:
    """A server and the daemon thread running its ``serve_forever``."""

    server: HTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        """Return the TCP port the server is bound to."""
        return int(self.server.server_port)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, close the listening socket and wait for the thread to end."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=timeout)


def serve(server: HTTPServer, *, poll_interval: float = 0.5) -> RunningServer:
    """Run ``server.serve_forever`` in a daemon thread and return both."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
    )
    thread.start()
    return RunningServer(server, thread)


def serve_metrics(registry: CollectorRegistry) -> RunningServer:
    """Serve ``registry`` as ``/metrics`` on 127.0.0.1, on a free port."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    return RunningServer(server, thread)
