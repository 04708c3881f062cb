"""devcluster authenticates before it reads a body, caps bodies as kube-apiserver does, and
creates its admin-token file private from the first byte (issue 9's devcluster findings)."""

from __future__ import annotations

import socket
import ssl
import stat
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from devcluster.server import MAX_BODY_BYTES
from testkit.devcluster import DevCluster

PATH = "/api/v1/namespaces/default/configmaps"


def _send_headers_only(cluster: DevCluster, headers: dict[str, str]) -> tuple[str, float]:
    """Send a POST's headers but none of its announced body; return the status line and wait."""
    url = urlsplit(cluster.url)
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    started = time.monotonic()
    with (
        socket.create_connection((url.hostname, url.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=url.hostname) as tls,
    ):
        lines = [f"POST {PATH} HTTP/1.1", f"Host: {url.netloc}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = tls.recv(4096).decode(errors="replace")
    return answer.split("\r\n", 1)[0], time.monotonic() - started


def test_an_unauthenticated_request_is_refused_before_its_body_is_read(
    devcluster: DevCluster,
) -> None:
    # Reading first would block here until the socket's 10 s timeout: the body never comes.
    status, waited = _send_headers_only(
        devcluster,
        {"Content-Type": "application/json", "Content-Length": str(50 * 1024 * 1024)},
    )
    assert status.split(" ")[1] == "401", status
    assert waited < 5


def test_a_body_over_the_cap_is_413_without_reading_it(devcluster: DevCluster) -> None:
    status, waited = _send_headers_only(
        devcluster,
        {
            "Authorization": f"Bearer {devcluster.admin_token}",
            "Content-Type": "application/json",
            "Content-Length": str(MAX_BODY_BYTES + 1),
        },
    )
    assert status.split(" ")[1] == "413", status
    assert waited < 5


@pytest.mark.server
def test_the_admin_token_file_is_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with DevCluster(tmp_path / "work", data_dir=data) as cluster:
        token_file = data / "admin-token"
        assert token_file.read_text().strip() == cluster.admin_token
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
