"""The HTTPS server: request pipeline authenticate -> authorize -> faults -> handle.

``ApiServer`` is a ThreadingHTTPServer; ``_Handler`` parses each request (routing.py),
checks the bearer token (auth.py) and RBAC (rbac.py), applies injected faults
(faults.py) and dispatches to handlers.Cluster, discovery, OpenAPI, tables and watch.
Built by __main__.py.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from devcluster import nonresource, protobuf, rbac, representations, reviews, watch
from devcluster.auth import Authenticator, UserInfo
from devcluster.faults import Faults
from devcluster.handlers import Cluster, parse_json
from devcluster.impersonation import impersonate
from devcluster.results import Result
from devcluster.routing import Route, not_found, parse
from devcluster.status import ApiError, conflict, status_body

_PUBLIC_PATHS = ("/version", "/healthz", "/readyz", "/livez")
_FAULT_PATH = "/devcluster/faults"
# kube-apiserver refuses request bodies over 3 MiB (its MaxRequestBodyBytes) with 413.
MAX_BODY_BYTES = 3 * 1024 * 1024


@dataclass
class App:
    """Everything a request handler needs."""

    cluster: Cluster
    authenticator: Authenticator
    faults: Faults
    address: str = ""
    verbose: bool = False


class ApiServer(ThreadingHTTPServer):
    """Threaded HTTPS server whose TLS handshake runs in the request thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App, context: ssl.SSLContext) -> None:
        self.app = app
        self._context = context
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        # Headers and body go out in separate writes; without this, Nagle's algorithm
        # and delayed ACKs add ~40 ms to every response.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        wrapped = self._context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return wrapped, address


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiServer
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 120

    def setup(self) -> None:
        super().setup()
        try:
            self.request.do_handshake()
        except (OSError, ssl.SSLError):
            self.close_connection = True
            self.rfile = self.wfile = None  # type: ignore[assignment]

    def handle(self) -> None:
        if self.rfile is None:
            return
        with contextlib.suppress(ConnectionError, ssl.SSLError, TimeoutError):
            super().handle()

    def finish(self) -> None:
        if self.rfile is None:
            return
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.app.verbose:
            sys.stderr.write("devcluster: " + (format % args) + "\n")

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    # -- pipeline ------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        app = self.server.app
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            user = app.authenticator.authenticate(
                self.headers.get("Authorization"), app.cluster.serviceaccount_uid
            )
            if user is None and url.path.rstrip("/") not in _PUBLIC_PATHS:
                # Never read what an unauthenticated client sends; an unread body would
                # desynchronise a kept-alive connection, so that one is closed after the answer.
                if self._announces_body():
                    self.close_connection = True
                raise ApiError(401, "Unauthorized")
            body = self._read_body()
            if user is not None and self.headers.get("Impersonate-User"):
                user = impersonate(
                    user,
                    self.headers.get("Impersonate-User", ""),
                    self.headers.get_all("Impersonate-Group") or (),
                    self.headers.get("Impersonate-Uid", ""),
                    app.cluster.store,
                )
            if url.path == _FAULT_PATH:
                self._faults(user, body)
                return
            if url.path.rstrip("/") != "/version":
                self._apply_fault(url.path, query)
            route = parse(self.command, url.path, query, app.cluster.registry)
            if user is not None:
                self._authorize(user, route)
            self._route(route, query, body, user)
        except ApiError as error:
            self._send_json(error.code, error.body())
        except (ConnectionError, ssl.SSLError):
            self.close_connection = True
        except Exception as exc:
            import traceback

            traceback.print_exc()
            self._send_json(500, status_body(500, f"Internal error occurred: {exc}"))

    def _apply_fault(self, path: str, query: dict[str, str]) -> None:
        app = self.server.app
        outcome = app.faults.match(self.command, self.path)
        if outcome is None:
            return
        if outcome.latency:
            time.sleep(outcome.latency)
        if outcome.error is None:
            return
        if outcome.error.code == 409:
            try:
                route = parse(self.command, path, query, app.cluster.registry)
            except ApiError:
                raise outcome.error from None
            if route.rtype is not None:
                raise conflict(route.rtype.plural, route.rtype.group, route.name) from None
        raise outcome.error

    def _announces_body(self) -> bool:
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"
        return chunked or (self.headers.get("Content-Length") or "0").strip() != "0"

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                total += size
                if total > MAX_BODY_BYTES:
                    self.close_connection = True
                    raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length else b""

    def _decode(self, raw: bytes) -> Any:
        if self.headers.get("Content-Type", "").startswith(protobuf.MEDIA_TYPE):
            return protobuf.decode(raw)
        return parse_json(raw)

    def _authorize(self, user: UserInfo, route: Route) -> None:
        rtype = route.rtype
        if rtype is None:
            attrs = rbac.Attributes(
                user=user, verb=route.verb, path=route.path, resource_request=False
            )
        else:
            attrs = rbac.Attributes(
                user=user,
                verb=route.verb,
                namespace=route.namespace or "",
                api_group=rtype.group,
                resource=rtype.plural,
                subresource=route.subresource,
                name=route.name,
            )
        allowed, reason = rbac.authorize(attrs, self.server.app.cluster.store)
        if not allowed:
            raise rbac.forbidden(attrs, reason)

    def _faults(self, user: UserInfo | None, body: bytes) -> None:
        if user is None or "system:masters" not in user.groups:
            raise ApiError(403, "forbidden: fault hooks are for system:masters only")
        faults = self.server.app.faults
        if self.command == "POST":
            faults.add(parse_json(body))
        elif self.command == "DELETE":
            faults.clear()
        else:
            raise ApiError(405, "use POST or DELETE", reason="MethodNotAllowed")
        self._send_json(200, status_body(200, ""))

    # -- dispatch ------------------------------------------------------------------------------

    def _route(
        self, route: Route, query: dict[str, str], raw: bytes, user: UserInfo | None
    ) -> None:
        if route.rtype is None:
            self._nonresource(route)
            return
        cluster = self.server.app.cluster
        rtype = route.rtype
        namespace = route.namespace if rtype.namespaced else ""
        ns = namespace or ""
        if route.verb == "watch":
            self._watch(route, query)
            return
        if route.verb == "get":
            result = cluster.get(rtype, ns, route.name, route.subresource)
        elif route.verb == "list":
            result = cluster.list(rtype, namespace if rtype.namespaced else None, query)
        elif route.verb == "create":
            result = self._create(route, query, raw, user)
        elif route.verb == "update":
            result = cluster.update(
                rtype, ns, route.name, route.subresource, self._decode(raw), query
            )
        elif route.verb == "patch":
            result = cluster.patch(
                rtype,
                ns,
                route.name,
                route.subresource,
                raw,
                self.headers.get("Content-Type", ""),
                query,
            )
        elif route.verb == "delete":
            result = cluster.delete(rtype, ns, route.name, self._decode(raw), query)
        else:
            result = cluster.delete_collection(rtype, namespace, query)
        self._send_result(route, result, query)

    def _create(
        self, route: Route, query: dict[str, str], raw: bytes, user: UserInfo | None
    ) -> Result:
        cluster = self.server.app.cluster
        rtype = route.rtype
        assert rtype is not None and user is not None
        body = self._decode(raw)
        if route.subresource == "token":
            return cluster.create_token(route.namespace or "", route.name, body, query)
        if route.name:
            raise ApiError(
                405, "POST to a named object is not supported", reason="MethodNotAllowed"
            )
        if reviews.is_review(rtype):
            return reviews.review(rtype, route.namespace or "", body, user, cluster.store)
        return cluster.create(rtype, route.namespace or "", body, query)

    def _nonresource(self, route: Route) -> None:
        app = self.server.app
        if nonresource.is_health(route.path):
            self._send_bytes(200, b"ok", "text/plain; charset=utf-8")
            return
        body = nonresource.body_for(route, app.cluster.registry, app.address)
        if body is None:
            raise not_found()
        self._send_json(200, body)

    # -- responses -------------------------------------------------------------------------------

    def _accept(self) -> str:
        return self.headers.get("Accept", "")

    def _send_result(self, route: Route, result: Result, query: Mapping[str, str]) -> None:
        body = representations.response_body(route, result.body, query, self._accept())
        self._send_json(result.code, body, warnings=result.warnings)

    def _send_json(
        self, code: int, body: Mapping[str, Any], warnings: tuple[str, ...] = ()
    ) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        extra = [("Warning", f'299 - "{_escape(text)}"') for text in warnings]
        self._send_bytes(code, data, "application/json", extra)

    def _send_bytes(
        self, code: int, data: bytes, content_type: str, extra: list[tuple[str, str]] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in extra or []:
            self.send_header(key, value)
        if self.close_connection:
            # Tell the client, so that it does not send its next request on this connection.
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _watch(self, route: Route, query: Mapping[str, str]) -> None:
        rtype = route.rtype
        assert rtype is not None
        cluster = self.server.app.cluster
        as_table = representations.wants_table(self._accept())
        as_metadata = representations.wants_metadata(self._accept())

        def start() -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.wfile.flush()

        def send(event: Mapping[str, Any]) -> bool:
            event = representations.watch_event(
                rtype, event, query, as_table=as_table, as_metadata=as_metadata
            )
            line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            except (OSError, ssl.SSLError):
                return False
            return True

        watch.stream(
            cluster,
            rtype,
            route.namespace if rtype.namespaced else None,
            route.name,
            query,
            send,
            alive=self._alive,
            start=start,
        )
        # A watch that ran out its timeoutSeconds ends like any response: the connection stays
        # open for the client's next request, which HTTP clients with a pool send on it. Asked
        # before the last chunk goes out: once it has, a pooled client may send its next request
        # at once, and those bytes would read as a client gone away (the connection closed under
        # an unanswered request: RemoteDisconnected at the client).
        self.close_connection = not self._alive()
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (OSError, ssl.SSLError):
            self.close_connection = True

    def _alive(self) -> bool:
        # A watch client sends nothing after its request; readable means it went away.
        try:
            readable, _, _ = select.select([self.request], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
