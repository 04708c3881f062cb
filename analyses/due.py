"""``Analysis.next_due_at``: the one module that writes it, for everyone who moves a due time.

The due time is what the operator's dispatcher polls (docs/architecture.md, "Due-time
dispatch"). Everything that moves it asks here:

- the dispatcher reads what is due (``read``), ``claim``s it and, when the queue refuses,
  ``release``s it; a batch task gives back the members it will not start (``release``);
- the reconciler's outcome sets the next due time (``reschedule``; in the steady state as part
  of the mirror's one UPDATE, whose due columns ``rescheduled`` names); after an evaluation
  that got answers that time is ``requeue_at``'s, on the analysis's own phase;
- the mirror makes a new, revived or edited analysis due at once (``due_now``) and takes a
  deleted one out of the queue (``mark_deleted``);
- the web app's "evaluate now" (``evaluate_now``).

It lives in ``analyses`` because the mirror and the web app's services move due times too, and
``analyses`` may not import the operator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from django.db import models

from analyses.models import Analysis
from sentinel_db import claims
from sentinel_db.sql import DueRead

# The claim's and the release's column.
_COLUMN = "next_due_at"

# Where every analysis's phase is counted from.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# A due time this close to the analysis's phase is on it; anything else (a creation, an edit,
# an "evaluate now", a retry's jittered delay) is not, whatever a database's rounding does.
_ON_PHASE_TOLERANCE_US = 1_000


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


def phase(uid: str, interval: float) -> timedelta:
    """Return the analysis's phase: where in each ``interval`` since the Unix epoch it is due.

    A hash of the uid, the same in every process and replica and for the analysis's whole
    life, spread evenly over the interval (as Prometheus spreads its scrape targets by a hash
    of their labels): analyses created together fall due apart.
    """
    period = _period_us(interval)
    digest = hashlib.blake2b(uid.encode(), digest_size=8).digest()
    return timedelta(microseconds=int.from_bytes(digest, "big") % period)


def next_slot(at: datetime, uid: str, interval: float) -> datetime:
    """Return the first time at or after ``at`` on the analysis's phase."""
    period = _period_us(interval)
    offset = (_micros(at) - _micros(_EPOCH + phase(uid, interval))) % period
    return at if offset == 0 else at + timedelta(microseconds=period - offset)


def on_phase(at: datetime, uid: str, interval: float) -> bool:
    """Return whether ``at`` is one of the analysis's due times on its phase."""
    period = _period_us(interval)
    offset = (_micros(at) - _micros(_EPOCH + phase(uid, interval))) % period
    return min(offset, period - offset) <= _ON_PHASE_TOLERANCE_US


def requeue_at(due_at: datetime | None, *, now: datetime, interval: float, uid: str) -> datetime:
    """Return the next due time after an evaluation that got answers (docs/status.md).

    ``due_at`` is when the attempt was due (None: not known, a direct call). An attempt due on
    the analysis's phase and finished at most one ``interval`` after it is due again one
    interval after its due time: the phase is kept, so the time an attempt waited or took is
    not added to every later one. Every other attempt (the first, the first of a new spec, an
    "evaluate now", the first answer after retries, one later than an interval) is due at the
    first time on its phase at least one interval from ``now``: between one and two intervals.
    So a burst of new analyses spreads over the interval after their first evaluation, and
    backoff's jitter does not move the phase for good.
    """
    step = timedelta(seconds=interval)
    if due_at is not None and now - due_at <= step and on_phase(due_at, uid, interval):
        return due_at + step
    return next_slot(now + step, uid, interval)


def _period_us(interval: float) -> int:
    if interval <= 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}.")
    return max(1, round(interval * 1_000_000))


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICROSECOND


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
