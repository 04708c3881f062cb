"""Turn evaluation history rows into dispatch-lag and missed-evaluation figures (pure functions).

``bench.operator_throughput`` reads the operator's ``analyses_evaluation`` rows and calls
``dispatch_stats``; it turns the operator's own ``sentinel_dispatch_lag_seconds`` histogram
into quantiles with ``histogram_quantile``.

Each row keeps when its attempt was due (``due_at``, as the dispatcher handed it:
docs/status.md#history-outcomes), so a row's lag is ``started_at - due_at``. The one due time
no row holds is the one after an analysis's last row: the product's own rule gives it
(``sentinel_core.requeue.requeue_at``, from that row's due time and the very ``started_at`` and
``finished_at`` it writes), and it is missed when it falls in the window with no attempt by the
end of the grace. Rebuilding every due time from the first row instead, as this module did
before the rows kept theirs, took the first one as its start: a few tenths of a second off,
enough to judge an attempt on time that the operator found more than 0.5 s late and moved onto
its phase, and so to count up to an interval of lag, or a miss, that never happened
(docs/performance.md). After an ``Error`` outcome the next due time is a jittered backoff, known
only from the next row: a last row that is an ``Error`` is counted as an error, not as missed.
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
    due_at: datetime | None
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

    ``rows`` may extend past ``window_end + grace``; those later rows are not looked at, so a
    due time whose attempt had not started by then is missed. ``intervals`` and ``uids`` are
    each analysis's, by id.
    """
    horizon = window_end + grace
    by_analysis: dict[int, list[EvaluationRow]] = {}
    for row in rows:
        if row.started_at <= horizon:
            by_analysis.setdefault(row.analysis_id, []).append(row)
    lags: list[float] = []
    late = missed = skipped = errors = due = 0
    counts: list[int] = []
    for analysis_id, history in by_analysis.items():
        history.sort(key=lambda row: row.started_at)
        interval = timedelta(seconds=intervals[analysis_id])
        counts.append(sum(1 for row in history if window_start <= row.started_at <= window_end))
        errors += sum(
            1
            for row in history
            if row.outcome == "Error" and window_start <= row.started_at <= window_end
        )
        for row in history:
            if row.due_at is None or not window_start <= row.due_at <= window_end:
                continue
            due += 1
            lag = max(0.0, (row.started_at - row.due_at).total_seconds())
            lags.append(lag)
            if lag > 1.0:
                late += 1
            skipped += math.floor(lag / interval.total_seconds())
        last = history[-1]
        if last.outcome == "Error" or last.due_at is None:
            continue
        pending = requeue_at(
            last.due_at,
            started=last.started_at,
            now=last.finished_at,
            interval=intervals[analysis_id],
            uid=uids[analysis_id],
        )
        if window_start <= pending <= window_end:
            due += 1
            missed += 1
            skipped += max(1, math.floor((horizon - pending) / interval))
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
