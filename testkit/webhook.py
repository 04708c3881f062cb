"""A JSON webhook receiver on loopback: the destination of Apprise's ``json://`` channels.

Tests and the demo point a notification channel at ``WebhookReceiver.apprise_url`` and read what
arrived (``messages``: the decoded JSON bodies, with the PNG attachments as bytes). ``mode`` makes
it misbehave for the channel sabotage tests (docs/notifications.md): ``"error"`` answers 500,
``"hang"`` holds the request longer than any client timeout. ``refused_url`` names a port where
nothing listens. ``on_message`` (the demo's) is called with every accepted message.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testkit.ports import free_port
from testkit.serving import RunningServer, serve


@dataclass(frozen=True)
class Received:
    """One POST that reached the receiver, answered or not."""

    at: float  # time.monotonic()
    path: str
    body: dict[str, Any]
    status: int

    @property
    def title(self) -> str:
        return str(self.body.get("title", ""))

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))

    @property
    def attachments(self) -> list[tuple[str, str, bytes]]:
        """Return (filename, mimetype, content) of every attachment."""
        return [
            (a.get("filename", ""), a.get("mimetype", ""), base64.b64decode(a.get("base64", "")))
            for a in self.body.get("attachments") or []
        ]


@dataclass
class WebhookReceiver:
    """The receiver; ``start`` it, ``stop`` it; ``mode`` may change at any time."""

    mode: str = "ok"  # ok | error | hang
    hang_seconds: float = 30.0
    # 0: a free one. ``stop`` then ``start`` again keeps the port (nothing listens meanwhile:
    # connections are refused), so a channel's URL stays valid.
    bind_port: int = 0
    on_message: Callable[[Received], None] | None = None
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _running: RunningServer | None = None

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unparsed": raw.decode(errors="replace")}
                mode = receiver.mode
                # 0: held past the client's timeout, so never an answer it saw.
                status = {"ok": 200, "error": 500}.get(mode, 0)
                receiver._record(Received(time.monotonic(), self.path, body, status))
                if mode == "hang":
                    time.sleep(receiver.hang_seconds)
                try:
                    self.send_response(status or 200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    return  # "hang": the client gave up long ago, which is the point
                if mode == "ok" and receiver.on_message is not None:
                    receiver.on_message(receiver.received[-1])

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.bind_port), Handler)
        server.daemon_threads = True
        self._running = serve(server, poll_interval=0.1)
        self.bind_port = self._running.port
        return self

    def _record(self, item: Received) -> None:
        with self._lock:
            self.received.append(item)

    def stop(self) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None

    @property
    def port(self) -> int:
        assert self._running is not None, "start() the receiver first"
        return self._running.port

    @property
    def apprise_url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook"

    @property
    def messages(self) -> list[Received]:
        """Return the POSTs answered 200, in arrival order."""
        with self._lock:
            return [r for r in self.received if r.status == 200]


def refused_url() -> str:
    """Return a json:// URL whose port refuses connections (nothing listens there)."""
    return f"json://127.0.0.1:{free_port()}/hook"
