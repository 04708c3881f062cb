"""Claim due rows with a compare-and-set on their due column, give claims back, and poll.

The pollers of the operator call these: ``sentinel_operator.dispatcher`` on
``Analysis.next_due_at``, ``notifications.pump`` on ``Delivery.next_attempt_at`` and
``sentinel_operator.backtest_jobs`` on ``BacktestJob.next_attempt_at``. A claim
moves a row's due time forward to ``until`` only if it still holds the time the poller read; so
a row is queued once even when two passes (or two replicas during a leader change) see it, and a
task lost with its worker is queued again when the claim runs out. When the queue refuses a
claimed row, ``release`` makes it due again at once, unless something else moved it meanwhile.
``queue_claimed`` is the two pumps' claim-and-queue step, ``poll`` the loop they all run on the
leader, and ``DueRead`` (``sentinel_db.sql``) the read each of their passes starts with.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.db import close_old_connections, models, transaction

from sentinel_db import sql
from sentinel_db.sql import DueRead

__all__ = ["Due", "DueRead", "claim", "poll", "queue_claimed", "release"]

# (primary key, the due time as read)
Due = tuple[int, datetime]


def claim(
    rows: models.QuerySet[models.Model], column: str, found: Sequence[Due], until: datetime
) -> list[Due]:
    """Move ``column`` of each of ``found`` to ``until`` unless it changed; return those moved.

    ``rows`` narrows what may be claimed (live analyses, pending deliveries): its WHERE, compiled
    by Django, is the UPDATE's, so a caller says it in the ORM as it reads. The whole pass is
    ONE statement (``sql.compare_and_set``; docs/performance.md, "Cuts 7 and 8"); each row is
    still a compare-and-set on the time it was read with. The order of ``found`` is kept.
    """
    if not found:
        return []
    moved = sql.compare_and_set(rows, column, found, until)
    return [(key, at) for key, at in found if key in moved]


def release(
    rows: models.QuerySet[Any],
    column: str,
    claimed: Sequence[tuple[Any, datetime]],
    until: datetime,
    *,
    key: str = "pk",
) -> int:
    """Make each ``(key, at)`` of ``claimed`` due at ``at`` again if it still holds the claim.

    ``key`` names the column the pairs are keyed by (a unique one). Return how many moved; a row
    something else moved meanwhile (claimed again, rescheduled) is left alone.
    """
    released = 0
    with transaction.atomic():
        for value, at in claimed:
            released += rows.filter(**{key: value, column: until}).update(**{column: at})
    return released


def queue_claimed(
    rows: models.QuerySet[Any],
    column: str,
    found: Sequence[Due],
    until: datetime,
    enqueue: Callable[[int, datetime], None],
    *,
    log: logging.Logger,
    refused: str,
) -> int:
    """Claim ``found`` and queue each row claimed with ``enqueue(pk, until)``; return how many.

    A row the queue refuses (``enqueue`` raises) is logged as ``refused`` (with its key) on ``log``
    and given back at once (``release``), so the next pass finds it due; the others are still
    queued.
    """
    queued = 0
    for pk, at in claim(rows, column, found, until):
        try:
            enqueue(pk, until)
        except Exception:
            log.exception(refused, pk)
            release(rows.model._default_manager.all(), column, [(pk, at)], until)
            continue
        queued += 1
    return queued


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
