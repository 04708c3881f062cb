"""Claim due rows with a compare-and-set on their due column, give claims back, and poll.

The two pollers of the operator call these: ``sentinel_operator.dispatcher`` on
``Analysis.next_due_at`` and ``notifications.pump`` on ``Delivery.next_attempt_at``. A claim
moves a row's due time forward to ``until`` only if it still holds the time the poller read; so
a row is queued once even when two passes (or two replicas during a leader change) see it, and a
task lost with its worker is queued again when the claim runs out. When the queue refuses a
claimed row, ``release`` makes it due again at once, unless something else moved it meanwhile.
``poll`` is the loop both run on the leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from django.db import close_old_connections, models, transaction

# (primary key, the due time as read)
Due = tuple[int, datetime]


def claim(
    rows: models.QuerySet[models.Model], column: str, found: Sequence[Due], until: datetime
) -> list[Due]:
    """Move ``column`` of each of ``found`` to ``until`` unless it changed; return those moved.

    ``rows`` narrows what may be claimed (live analyses, pending deliveries). One write
    transaction for the whole pass, not one per row (docs/performance.md).
    """
    with transaction.atomic():
        return [
            (pk, at)
            for pk, at in found
            if rows.filter(pk=pk, **{column: at}).update(**{column: until})
        ]


def release(
    rows: models.QuerySet[models.Model], column: str, claimed: Sequence[Due], until: datetime
) -> None:
    """Make each of ``claimed`` due again at the time it was read, if it still holds the claim."""
    with transaction.atomic():
        for pk, at in claimed:
            rows.filter(pk=pk, **{column: until}).update(**{column: at})


def poll(
    stop: threading.Event,
    *,
    is_leader: Callable[[], bool],
    one_pass: Callable[[], bool],
    interval: float,
    log: logging.Logger,
    failed: str,
) -> None:
    """Run ``one_pass`` every ``interval`` until ``stop`` is set, while this replica leads.

    ``one_pass`` returns whether more are due at once (a full batch): then it runs again without
    waiting. A failed pass (a database hiccup) is logged as ``failed`` on ``log`` and retried
    after a second; it never ends the loop.
    """
    while not stop.is_set():
        busy = False
        if is_leader():
            try:
                busy = one_pass()
            except Exception:
                log.exception(failed)
                close_old_connections()
                stop.wait(1.0)
        if not busy:
            stop.wait(interval)
