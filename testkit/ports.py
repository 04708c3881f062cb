"""Local TCP ports: a free one to listen on, and whether a chosen one is free.

Every server the kit starts (devcluster, Prometheus, the operator's ``/metrics``, PostgreSQL,
Redis, gunicorn, the demo's web port) binds 127.0.0.1 on a port from ``free_port``; the demo asks
``port_is_free`` before it takes the port a person expects (6443, 8000).

A port is chosen *below* the kernel's ephemeral range (``net.ipv4.ip_local_port_range``, 32768 and
up on Linux): a port the kernel hands out for ``bind(0)`` or for an outgoing connection's source
may be taken by anything on the machine between the moment it was free and the moment the server
binds it — a full parallel run once lost the demo's web port that way, five seconds after choosing
it. Below the range only the kit chooses ports, and each pytest-xdist worker chooses from a slice
of its own, walking it from a random start, so two servers never race for one.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

_FIRST = 10_000
_SLICE = 2_000
_SLICES = 11  # 10,000-31,999: below 32,768, where the ephemeral range starts


def _slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    start = _FIRST + (index % _SLICES) * _SLICE
    return range(start, start + _SLICE)


def _walk() -> itertools.cycle[int]:
    ports = _slice()
    offset = random.randrange(len(ports))  # processes of one worker start apart
    return itertools.cycle([*ports[offset:], *ports[:offset]])


_ports = _walk()


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that is free now and that no other server of the kit takes."""
    for _ in range(_SLICE):
        port = next(_ports)
        if port_is_free(port, host):
            return port
    raise RuntimeError(f"no free port in {_slice()}")


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Return whether ``host``:``port`` can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
