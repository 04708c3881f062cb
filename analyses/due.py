"""``Analysis.next_due_at``: the one module that writes it, for everyone who moves a due time.

The due time is what the operator's dispatcher polls (docs/architecture.md, "Due-time
dispatch"). Everything that moves it asks here:

- the dispatcher reads what is due (``read``), ``claim``s it and, when the queue refuses,
  ``release``s it; a batch task gives back the members it will not start (``release``);
- the reconciler's outcome sets the next due time (``reschedule``; in the steady state as part
  of the mirror's one UPDATE, whose due columns ``rescheduled`` names); after an evaluation
  that got answers that time is ``sentinel_core.requeue.requeue_at``'s, from the attempt's
  due time (the rule is pure, so the benchmarks check the operator against it too);
- the mirror makes a new, revived or edited analysis due at once (``due_now``) and takes a
  deleted one out of the queue (``mark_deleted``);
- the web app's "evaluate now" (``evaluate_now``).

It lives in ``analyses`` because the mirror and the web app's services move due times too, and
``analyses`` may not import the operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import models

from analyses.models import Analysis
from sentinel_db import claims
from sentinel_db.sql import DueRead

# The claim's and the release's column.
_COLUMN = "next_due_at"


class DueRow(NamedTuple):
    """One due analysis as the dispatcher reads it."""

    pk: int
    namespace: str
    name: str
    due_at: datetime
    uid: str


def read(*, batch: int, namespaces: Sequence[str] = ()) -> DueRead[DueRow]:
    """Return the dispatcher's read: live rows due by a time, the most overdue first.

    One statement, compiled once, so ``batch`` and ``namespaces`` (empty: every namespace) are
    fixed here. Filtered in the query, so rows out of scope never fill a batch either.
    """
    scope = {"namespace__in": list(namespaces)} if namespaces else {}
    return DueRead(
        lambda at: (
            Analysis.objects.due(at)
            .filter(**scope)
            .values_list("pk", "namespace", "name", "next_due_at", "uid")[:batch]
        ),
        DueRow._make,
    )


def claim(due: Sequence[DueRow], until: datetime) -> list[DueRow]:
    """Move each live row of ``due`` to ``until`` unless it moved since it was read; return those.

    A concurrent claim or reschedule wins: only rows still at the due time read are taken.
    """
    live = Analysis.objects.filter(deleted_at__isnull=True)
    found = [(row.pk, row.due_at) for row in due]
    taken = {pk for pk, _ in claims.claim(live, _COLUMN, found, until)}
    return [row for row in due if row.pk in taken]


def release(members: Sequence[tuple[str, datetime]], claimed_until: datetime) -> int:
    """Make each ``(uid, due_at)`` due again at ``due_at`` if it still holds the claim.

    The dispatcher gives back what the queue refused, and a batch task past half its time limit
    its unstarted members, so that they are taken at once instead of when the claim runs out.
    The compare-and-set on the claim leaves alone a row something else moved meanwhile (the
    watch after an edit). Return how many were given back.
    """
    return claims.release(Analysis.objects.all(), _COLUMN, members, claimed_until, key="uid")


def rescheduled(due_at: datetime, backoff_attempt: int) -> dict[str, Any]:
    """Return the due columns ``reschedule`` sets, for a caller that writes them in its UPDATE.

    ``mirror.refresh_status`` does, with ``reschedule``'s guard (the same live row and
    ``generation``): the steady state's one statement.
    """
    return {_COLUMN: due_at, "backoff_attempt": backoff_attempt}


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
    return rows.update(**rescheduled(due_at, backoff_attempt)) == 1


def due_now(row: Analysis, now: datetime, *, revived: bool) -> None:
    """Make the mirror's ``row`` (unsaved) due at ``now``, or keep an earlier due time.

    A new row, a spec change (new ``generation``) or a row brought back from deleted
    (``revived``: its old due time is the queue's no more) is evaluated at once.
    """
    due = row.next_due_at if not revived else None
    row.next_due_at = min(due, now) if due else now


def mark_deleted(rows: models.QuerySet[Analysis], at: datetime) -> int:
    """Mark ``rows`` deleted at ``at`` and take them out of the queue; return how many.

    One UPDATE: a row marked deleted never has a due time (docs/operator.md#deleted-analysis).
    """
    return rows.update(deleted_at=at, **{_COLUMN: None})


def evaluate_now(analysis_pk: int, moment: datetime) -> bool:
    """Make the live analysis due at ``moment``; return whether it is still live."""
    return Analysis.objects.live().filter(pk=analysis_pk).update(**{_COLUMN: moment}) == 1
