"""Local TCP ports: a free one to listen on, and whether a chosen one is free.

Every server the kit starts (devcluster, Prometheus, the operator's ``/metrics``, PostgreSQL,
Redis, gunicorn) binds 127.0.0.1 on a port from ``free_port``; the demo asks ``port_is_free``
before it takes the port a person expects (6443, 8000).
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Return whether 127.0.0.1:``port`` can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
