"""When an analysis is due again after an evaluation that got answers: from its due time.

docs/status.md#requeue-and-backoff. A requeue keeps the time an attempt was due, so neither the
time it waited for a worker nor the time it took is added to every later due time. Every
analysis also has a phase, a point in each ``interval`` counted from the Unix epoch, drawn from
a hash of its uid: an attempt that had to wait for a backlog (analyses created or edited
together, a burst of retries) is moved onto it, so a backlog falls due spread over the interval
from the next evaluation on. ``analyses.due`` writes the time; the benchmarks and the soak
check the operator against it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

# Where every analysis's phase is counted from.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# A due time this close to the analysis's phase is on it; anything else (a creation, an edit,
# an "evaluate now", a retry's jittered delay) is not, whatever a database's rounding does.
_ON_PHASE_TOLERANCE_US = 1_000
# An attempt that started later than this after its due time waited for a backlog. A quiet
# operator starts within 0.2 s (docs/performance.md); half of the dispatcher's one-second
# promise keeps the first served of a burst from staying a clump at one instant.
LATE = timedelta(seconds=0.5)


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


def requeue_at(
    due_at: datetime | None,
    *,
    started: datetime,
    now: datetime,
    interval: float,
    uid: str,
) -> datetime:
    """Return the next due time after an evaluation that got answers (docs/status.md).

    ``due_at`` is when the attempt was due (None: not known, taken as ``started``); ``started``
    and ``now`` when it started and ended. An attempt is due again one ``interval`` after its
    due time when it ended within an interval of it and either started within ``LATE`` of it
    or was due on the analysis's phase: the time it waited or took is not added to every later
    due time. Any other attempt (one that waited for a backlog, such as a burst of new
    analyses or edits, off its phase; one that ended more than an interval late) is due at the
    first time on its phase at least one interval from ``now``, so a backlog spreads evenly over
    the interval instead of staying a clump.
    """
    _period_us(interval)  # refuses an interval that is not positive, on every path
    step = timedelta(seconds=interval)
    due = started if due_at is None else due_at
    if now - due <= step and (started - due <= LATE or on_phase(due, uid, interval)):
        return due + step
    return next_slot(now + step, uid, interval)


def _period_us(interval: float) -> int:
    if interval <= 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}.")
    return max(1, round(interval * 1_000_000))


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICROSECOND
