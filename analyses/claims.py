"""Claim due rows with a compare-and-set on their due column, and give claims back.

The two pollers of the operator call these: ``sentinel_operator.dispatcher`` on
``Analysis.next_due_at`` and ``notifications.pump`` on ``Delivery.next_attempt_at``. A claim
moves a row's due time forward to ``until`` only if it still holds the time the poller read; so
a row is queued once even when two passes (or two replicas during a leader change) see it, and a
task lost with its worker is queued again when the claim runs out. When the queue refuses a
claimed row, ``release`` makes it due again at once, unless something else moved it meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import models, transaction

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
