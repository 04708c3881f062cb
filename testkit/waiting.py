"""Poll until something holds: the one waiting helper of the tests, the benchmarks and the kit.

Used wherever a test or a launcher waits for a server, a status or a history row, instead of
sleeping a fixed time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns something truthy and return that; else fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate}")
        time.sleep(interval)
