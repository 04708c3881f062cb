"""Turn evaluation history rows into dispatch-lag and missed-evaluation figures (pure functions).

``bench.operator_throughput`` reads the operator's ``analyses_evaluation`` rows and calls
``dispatch_stats``; it turns the operator's own ``sentinel_dispatch_lag_seconds`` histogram
into quantiles with ``histogram_quantile``.

Why the rows give the due times: the first evaluation of an analysis was due when it was
mirrored (unknown here: taken as its start, a few tenths of a second late at most on a quiet
operator); after each evaluation that got answers the reconciler sets the next due time with
``sentinel_core.requeue.requeue_at`` from the attempt's due time and the very ``started_at``
and ``finished_at`` it writes to the row, and the dispatcher never starts an analysis before its due
time. So walking an analysis's rows from its first, each due time follows from the one before
by the product's own rule: ``lag = next.started_at - due``. After an ``Error`` outcome the next
due time is a jittered backoff, unknown here: such pairs are counted as errors, not as lag, and
the attempt after one was due off the phase.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bench.harness import percentile
from sentinel_core.requeue import requeue_at


@dataclass(frozen=True)
class EvaluationRow:
    analysis_id: int
    started_at: datetime
    finished_at: datetime
    outcome: str


@dataclass(frozen=True)
class DispatchStats:
    # Due times that fell inside the window.
    due: int
    # ...of which started within 1 s, later than 1 s, or not at all by the end of the grace.
    on_time: int
    late: int
    missed: int
    # Whole intervals skipped (a lag longer than one interval skips a slot).
    skipped_slots: int
    lag_p50: float
    lag_p99: float
    lag_max: float
    errors: int
    evaluations_in_window: int
    analyses_seen: int
    min_per_analysis: int
    max_per_analysis: int


def dispatch_stats(
    rows: Iterable[EvaluationRow],
    intervals: Mapping[int, float],
    uids: Mapping[int, str],
    *,
    window_start: datetime,
    window_end: datetime,
    grace: timedelta,
) -> DispatchStats:
    """Account for every due time in ``[window_start, window_end]``.

    ``rows`` start at each analysis's first evaluation (its due times follow from there) and
    may extend up to ``window_end + grace``; a due time whose evaluation had not started by then
    is missed. ``intervals`` and ``uids`` are each analysis's, by id.
    """
    by_analysis: dict[int, list[EvaluationRow]] = {}
    for row in rows:
        by_analysis.setdefault(row.analysis_id, []).append(row)
    horizon = window_end + grace
    lags: list[float] = []
    late = missed = skipped = errors = due = 0
    counts: list[int] = []
    for analysis_id, history in by_analysis.items():
        history.sort(key=lambda row: row.started_at)
        interval = timedelta(seconds=intervals[analysis_id])
        counts.append(sum(1 for row in history if window_start <= row.started_at <= window_end))
        # The due time of the row at hand: None (unknown) for the first and after an Error (a
        # retry's jittered backoff).
        row_due: datetime | None = None
        for index, row in enumerate(history):
            if row.outcome == "Error":
                if window_start <= row.started_at <= window_end:
                    errors += 1
                row_due = None
                continue
            due_at = requeue_at(
                row_due,
                started=row.started_at,
                now=row.finished_at,
                interval=intervals[analysis_id],
                uid=uids[analysis_id],
            )
            row_due = due_at
            if not window_start <= due_at <= window_end:
                continue
            due += 1
            following = history[index + 1] if index + 1 < len(history) else None
            if following is None or following.started_at > horizon:
                missed += 1
                skipped += max(1, math.floor((horizon - due_at) / interval))
                continue
            lag = max(0.0, (following.started_at - due_at).total_seconds())
            lags.append(lag)
            if lag > 1.0:
                late += 1
            skipped += math.floor(lag / interval.total_seconds())
    return DispatchStats(
        due=due,
        on_time=len(lags) - late,
        late=late,
        missed=missed,
        skipped_slots=skipped,
        lag_p50=percentile(lags, 0.50),
        lag_p99=percentile(lags, 0.99),
        lag_max=max(lags, default=float("nan")),
        errors=errors,
        evaluations_in_window=sum(counts),
        analyses_seen=len(counts),
        min_per_analysis=min(counts, default=0),
        max_per_analysis=max(counts, default=0),
    )


def bucket_counts(samples: Mapping[str, float]) -> dict[float, float]:
    """Return ``{upper bound: cumulative count}`` from ``*_bucket`` samples keyed by labels."""
    counts: dict[float, float] = {}
    for labels, value in samples.items():
        for part in labels.split(","):
            key, _, raw = part.partition("=")
            if key.strip() == "le":
                counts[float(raw.strip('"'))] = value
    return counts


def histogram_quantile(
    fraction: float, before: Mapping[float, float], after: Mapping[float, float]
) -> float:
    """Estimate a quantile of the observations made between two bucket snapshots.

    Prometheus's own method: linear interpolation inside the bucket holding the rank; a rank
    in the +Inf bucket returns the largest finite bound.
    """
    bounds: Sequence[float] = sorted(after)
    cumulative = [after[b] - before.get(b, 0.0) for b in bounds]
    if not cumulative or cumulative[-1] <= 0:
        return float("nan")
    rank = fraction * cumulative[-1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in zip(bounds, cumulative, strict=True):
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound


def share_within(
    bound: float, before: Mapping[float, float], after: Mapping[float, float]
) -> float:
    """Return the fraction of observations between two snapshots that were ``<= bound``."""
    total = after.get(math.inf, 0.0) - before.get(math.inf, 0.0)
    if total <= 0:
        return float("nan")
    return (after.get(bound, 0.0) - before.get(bound, 0.0)) / total
