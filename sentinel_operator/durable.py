"""Bookkeeping that outlives a database restart.

Once a status write has reached the API server, the decision has happened: the target may be
paused, the failure counted. Its history row, its notification rows and the next due time must
then be written too, or the history lies (a pause with no row, failures jumping by two) and the
``Paused`` message is never sent. The chaos soak saw exactly that when PostgreSQL restarted in
the second between a pause and its bookkeeping (docs/reliability.md). So those writes wait for
the database, for a bounded time, instead of failing the attempt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Long enough for a database restart or a failover of a managed PostgreSQL; a worker holding
# the task meanwhile is the price, and the dispatch claim (120 s) outlasts it.
PATIENCE_SECONDS = 60.0
_FIRST_DELAY = 0.5
_MAX_DELAY = 5.0


def durably(write: Callable[[], T], *, what: str, patience: float = PATIENCE_SECONDS) -> T:
    """Return ``write()``, retried while the database cannot be reached, for up to ``patience``.

    Only connection-level failures (``OperationalError``, ``InterfaceError``: refused, reset,
    shutting down, SQLite's ``database is locked``) are retried; anything else is a bug and
    raises at once. ``write`` must be safe to run again after a failure, as one transaction is.
    """
    deadline = time.monotonic() + patience
    delay = _FIRST_DELAY
    while True:
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + delay > deadline:
                raise
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc)
            logger.warning(
                "database unavailable while recording %s (%s); retrying in %.1f s",
                what,
                first_line,
                delay,
            )
            # A connection that failed is unusable; the next try opens a new one.
            connection.close()
            time.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
