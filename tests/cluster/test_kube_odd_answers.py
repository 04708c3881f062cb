"""KubeClient against a server that answers 200 or an error with bodies no API server sends.

A real HTTP server on a free local port (not an API server: devcluster never answers like this)
sends a JSON list, JSON nested thousands deep, and error statuses whose ``message`` or
``details`` are not what the Status type says. The client raises its typed errors for all of
them; no ``RecursionError``, ``AttributeError`` or non-dict answer leaks to the caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client as k8s

from sentinel_cluster import kube
from testkit.serving import serve

DEEP = b"[" * 200_000
# path -> (status, body)
ANSWERS: dict[str, tuple[int, bytes]] = {
    "/list": (200, b"[1, 2]"),
    "/deep": (200, DEEP),
    "/error-deep": (500, DEEP),
    "/error-list": (422, b'["not", "a", "status"]'),
    "/error-odd-fields": (422, b'{"message": {"nested": [1]}, "reason": 7, "details": ["x"]}'),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, body = ANSWERS[self.path.split("?")[0]]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def client() -> Iterator[kube.KubeClient]:
    running = serve(ThreadingHTTPServer(("127.0.0.1", 0), _Handler), poll_interval=0.05)
    configuration = k8s.Configuration(host=f"http://127.0.0.1:{running.port}")
    configuration.retries = False
    try:
        yield kube.KubeClient(k8s.ApiClient(configuration))
    finally:
        running.stop()


@pytest.mark.parametrize("path", ["/list", "/deep"])
def test_a_200_that_is_no_json_object_is_unavailable(client: kube.KubeClient, path: str) -> None:
    with pytest.raises(kube.Unavailable, match="GET " + path):
        client.request("GET", path)


def test_an_error_nested_too_deeply_is_still_the_status_code(client: kube.KubeClient) -> None:
    with pytest.raises(kube.Unavailable, match="HTTP 500") as raised:
        client.request("GET", "/error-deep")
    assert raised.value.status == 500


@pytest.mark.parametrize("path", ["/error-list", "/error-odd-fields"])
def test_a_malformed_status_is_invalid_without_causes(client: kube.KubeClient, path: str) -> None:
    with pytest.raises(kube.Invalid, match="HTTP 422") as raised:
        client.request("GET", path)
    assert raised.value.status == 422
    assert raised.value.reason == ""
    assert raised.value.causes == []
