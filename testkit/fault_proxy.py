"""An HTTP proxy in front of Prometheus that breaks answers on purpose.

Outage tests (the ``fault_proxy`` fixture) point the operator at this proxy
and switch its mode from Python: pass-through, a fixed 5xx status, a slow answer, an answer held
until the test lets it go (to interleave a test's own write with an evaluation), an HTML
page, truncated JSON, a connection cut mid-body, a Prometheus ``"status":"error"`` body, a
body given byte for byte, or a huge answer (generated as it is sent, never held in memory).
It counts the ``/api/v1/query`` requests it sees and records their Authorization header, so
tests can assert the query cadence during an outage and that the bearer token was sent.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from testkit.lifecycle import StartStop
from testkit.serving import RunningServer, serve

QUERY_PATH = "/api/v1/query"

FaultKind = Literal[
    "pass", "status", "slow", "held", "html", "truncated", "cut", "error", "huge", "body"
]

# The HTTP status Prometheus itself uses for each errorType.
_ERROR_STATUS = {
    "bad_data": 400,
    "execution": 422,
    "timeout": 503,
    "canceled": 503,
    "unavailable": 503,
    "internal": 500,
    "not_found": 404,
}

_HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n"
    b"<body><h1>Sign in to continue</h1><form method='post'></form></body></html>\n"
)


@dataclass(frozen=True)
class Fault:
    """What the proxy does with the next requests; build one with the FaultProxy methods."""

    kind: FaultKind = "pass"
    status: int = 200
    delay: float = 0.0
    error_type: str = ""
    error: str = ""
    # "huge": how many bytes to send, and whether to announce them in Content-Length.
    size: int = 0
    declare_length: bool = False
    # "body": the exact bytes to answer with.
    body: bytes = b""


@dataclass(frozen=True)
class SeenRequest:
    """One request the proxy received."""

    method: str
    path: str
    params: dict[str, list[str]] = field(default_factory=dict)
    authorization: str | None = None
    # Every header as received (a metric provider's tenant header, docs/operations.md).
    headers: dict[str, str] = field(default_factory=dict)


class FaultProxy(StartStop):
    """A threaded proxy on a free local port in front of ``upstream``; a context manager."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream {upstream!r} must be http://host:port")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self._fault = Fault()
        self._seen: list[SeenRequest] = []
        # Client ports of the requests being answered right now (the soak finds the worker
        # that is mid-query by its socket).
        self._in_flight: set[int] = set()
        self._lock = threading.Lock()
        # Set on stop() so that handlers sleeping in "slow" mode give up at once.
        self._stopping = threading.Event()
        # Set by let_go(): requests held in "held" mode are forwarded.
        self._let_go = threading.Event()
        # hold(after=n): how many more requests "held" mode forwards before it holds.
        self._pass_before_hold = 0
        self._server: RunningServer | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("FaultProxy is already running.")
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.proxy = self
        self._server = serve(server, poll_interval=0.05)
        self.port = self._server.port

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._let_go.set()
        self._server.stop()
        self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- modes -----------------------------------------------------------------------------

    @property
    def fault(self) -> Fault:
        return self._fault

    def set_fault(self, fault: Fault) -> None:
        self._fault = fault

    def pass_through(self) -> None:
        """Forward every request to Prometheus unchanged."""
        self.set_fault(Fault())

    def fail(self, status: int = 502) -> None:
        """Answer every request with ``status`` and an nginx-like HTML error page."""
        self.set_fault(Fault("status", status=status))

    def slow(self, seconds: float) -> None:
        """Wait ``seconds`` before forwarding (a client with a shorter timeout gives up)."""
        self.set_fault(Fault("slow", delay=seconds))

    def hold(self, *, after: int = 0) -> None:
        """Keep every request waiting until ``let_go`` (or stop), then forward it.

        ``in_flight`` says when a request is being held, so a test can write in between an
        evaluation's read and its write without guessing how long either takes. ``after``
        requests are forwarded first (one member of a batch answered, the next one held).
        """
        self._let_go.clear()
        with self._lock:
            self._pass_before_hold = after
        self.set_fault(Fault("held"))

    def let_go(self) -> None:
        """Forward the held requests, and every later one unchanged."""
        self.set_fault(Fault())
        self._let_go.set()

    def html(self) -> None:
        """Answer 200 with an HTML page, as a login portal in front of Prometheus would."""
        self.set_fault(Fault("html"))

    def truncated(self) -> None:
        """Forward, then answer 200 with only the first half of Prometheus's JSON."""
        self.set_fault(Fault("truncated"))

    def cut(self) -> None:
        """Forward, announce the full length, send half the body and close the connection."""
        self.set_fault(Fault("cut"))

    def error(self, error_type: str, error: str = "", status: int | None = None) -> None:
        """Answer a Prometheus ``"status":"error"`` body of ``error_type``."""
        code = status if status is not None else _ERROR_STATUS.get(error_type, 500)
        text = error or f"injected {error_type} error"
        self.set_fault(Fault("error", status=code, error_type=error_type, error=text))

    def huge(self, size: int, *, declare_length: bool = False) -> None:
        """Answer 200 with a Prometheus-shaped vector of ``size`` bytes (~80 bytes per series).

        Only its size counts: the body is cut at ``size`` and need not end as valid JSON.

        Without ``declare_length`` the body ends when the connection closes, so a client
        learns its size only by reading it.
        """
        self.set_fault(Fault("huge", size=size, declare_length=declare_length))

    def body(self, content: bytes, *, status: int = 200) -> None:
        """Answer ``status`` with exactly ``content`` as JSON (e.g. JSON nested 100,000 deep)."""
        self.set_fault(Fault("body", status=status, body=content))

    # -- what it saw -----------------------------------------------------------------------

    @property
    def requests(self) -> list[SeenRequest]:
        with self._lock:
            return list(self._seen)

    @property
    def query_count(self) -> int:
        """Return how many ``/api/v1/query`` requests arrived since the last reset()."""
        with self._lock:
            return sum(1 for seen in self._seen if seen.path == QUERY_PATH)

    @property
    def in_flight(self) -> set[int]:
        """Return the local client ports of the requests the proxy is answering right now."""
        with self._lock:
            return set(self._in_flight)

    def reset(self) -> None:
        """Forget the requests seen so far (the mode stays)."""
        with self._lock:
            self._seen.clear()

    def _record(self, seen: SeenRequest) -> None:
        with self._lock:
            self._seen.append(seen)

    def _passes_one(self) -> bool:
        """Return whether "held" mode forwards this request at once (``hold(after=n)``)."""
        with self._lock:
            if self._pass_before_hold <= 0:
                return False
            self._pass_before_hold -= 1
            return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Handlers sleeping in "slow" mode must not delay server_close().
    block_on_close = False
    proxy: FaultProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out and hang up are the point of several modes; stay quiet.
        return


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _handle(self) -> None:
        proxy = self.server.proxy
        port = int(self.client_address[1])
        with proxy._lock:
            proxy._in_flight.add(port)
        try:
            self._answer_request(proxy)
        finally:
            with proxy._lock:
                proxy._in_flight.discard(port)

    def _answer_request(self, proxy: FaultProxy) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        params = parse_qs(parts.query)
        if body and "form-urlencoded" in (self.headers.get("Content-Type") or ""):
            params.update(parse_qs(body.decode("utf-8", "replace")))
        proxy._record(
            SeenRequest(
                self.command,
                parts.path,
                params,
                self.headers.get("Authorization"),
                dict(self.headers.items()),
            )
        )
        fault = proxy.fault
        if fault.kind == "status":
            self._answer(fault.status, _status_page(fault.status), "text/html")
        elif fault.kind == "html":
            self._answer(200, _HTML_PAGE, "text/html; charset=utf-8")
        elif fault.kind == "error":
            error = {"status": "error", "errorType": fault.error_type, "error": fault.error}
            payload = json.dumps(error).encode()
            self._answer(fault.status, payload, "application/json")
        elif fault.kind == "huge":
            self._huge(fault)
        elif fault.kind == "body":
            self._answer(fault.status, fault.body, "application/json")
        else:
            if fault.kind == "slow" and proxy._stopping.wait(fault.delay):
                # The proxy is stopping: hang up instead of answering late.
                self.close_connection = True
                return
            if fault.kind == "held" and not proxy._passes_one():
                proxy._let_go.wait()
                if proxy._stopping.is_set():
                    self.close_connection = True
                    return
            self._forward(body, fault)

    def _forward(self, body: bytes, fault: Fault) -> None:
        proxy = self.server.proxy
        connection = http.client.HTTPConnection(
            proxy.upstream_host, proxy.upstream_port, timeout=30
        )
        headers = {"Accept": self.headers.get("Accept", "*/*")}
        if self.headers.get("Content-Type"):
            headers["Content-Type"] = self.headers["Content-Type"]
        # A hop in front of an authenticating backend (vmauth) passes the credentials and the
        # tenant on, as a real proxy would.
        for name in ("Authorization", "X-Scope-OrgID"):
            if self.headers.get(name):
                headers[name] = self.headers[name]
        try:
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            status, content = response.status, response.read()
            content_type = response.getheader("Content-Type", "application/json")
        except OSError:
            # Prometheus is down behind us: answer as nginx would.
            self._answer(502, _status_page(502), "text/html")
            return
        finally:
            connection.close()
        if fault.kind == "truncated":
            self._answer(200, content[: len(content) // 2], content_type)
        elif fault.kind == "cut":
            self._answer(200, content[: len(content) // 2], content_type, length=len(content))
            self.close_connection = True
        else:
            self._answer(status, content, content_type)

    def _huge(self, fault: Fault) -> None:
        head = b'{"status":"success","data":{"resultType":"vector","result":['
        tail = b"]}}"
        series = b'{"metric":{"__name__":"sentinel_test_value","case":"huge"},"value":[1,"1"]},'
        # One MiB of series per write; the body is generated as it goes out.
        block = series * (1024 * 1024 // len(series))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if fault.declare_length:
            self.send_header("Content-Length", str(fault.size))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        remaining = fault.size - len(head) - len(tail)
        try:
            self.wfile.write(head)
            while remaining > 0:
                piece = block[:remaining] if remaining < len(block) else block
                self.wfile.write(piece)
                remaining -= len(piece)
            self.wfile.write(tail)
            self.wfile.flush()
        except OSError:
            # The client stopped reading at its cap and hung up: the point of this mode.
            return

    def _answer(
        self, status: int, content: bytes, content_type: str, *, length: int | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(content) if length is None else length))
        self.end_headers()
        self.wfile.write(content)
        self.wfile.flush()


def _status_page(status: int) -> bytes:
    reason = http.client.responses.get(status, "Error")
    return (
        f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()
