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
    predicate: Callable[[], T],
    timeout: float = 10.0,
    interval: float = 0.05,
    what: str | Callable[[], str] = "",
) -> T:
    """Poll ``predicate`` until it returns something truthy and return that; else fail.

    ``what`` describes the wait in the failure; a callable is called only then, so that a
    log it reads is the log as it is when the wait gives up, not as it was when it began.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            raise AssertionError(f"not within {timeout} s: {described or predicate}")
        time.sleep(interval)
