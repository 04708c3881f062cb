"""Write an analysis's next due time: the one column the dispatcher reads and the reconciler sets.

``outcome.record`` calls ``reschedule`` once per attempt, inside its bookkeeping transaction, to
replace the dispatcher's claim with the real next due time; a batch task (``tasks``) that gives
members back unstarted calls ``release``. It lives below both the dispatcher
and the reconciler so that neither has to import the other (the layers contract in
``pyproject.toml`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from analyses.models import Analysis


def reschedule(
    analysis_pk: int,
    *,
    generation: int,
    due_at: datetime,
    backoff_attempt: int,
) -> bool:
    """Set the next due time unless the row moved on; return whether it was set.

    The reconciler's outcome replaces the dispatch claim with this. A row marked deleted stays
    out of the queue. A row whose spec changed while the attempt ran (the watch saw a newer
    ``generation`` and made it due at once) keeps that earlier due time, so the new spec is
    evaluated without waiting a whole interval.
    """
    rows = Analysis.objects.filter(pk=analysis_pk, deleted_at__isnull=True, generation=generation)
    return rows.update(next_due_at=due_at, backoff_attempt=backoff_attempt) == 1


def release(members: Sequence[tuple[str, datetime]], claimed_until: datetime) -> int:
    """Make each ``(uid, due_at)`` due again at ``due_at`` if it still holds the claim.

    A batch task past half its time limit gives its unstarted members back this way, so another
    worker takes them at once instead of when the claim runs out. The compare-and-set on the
    claim leaves alone a row something else moved meanwhile (the watch after an edit).
    """
    released = 0
    with transaction.atomic():
        for uid, due_at in members:
            rows = Analysis.objects.filter(uid=uid, next_due_at=claimed_until)
            released += rows.update(next_due_at=due_at)
    return released
