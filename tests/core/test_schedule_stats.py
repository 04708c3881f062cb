"""``bench.schedule_stats.dispatch_stats``: the benchmark's account of due times, from the
history rows' own ``due_at`` (docs/performance.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench.schedule_stats import EvaluationRow, dispatch_stats

T = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
INTERVAL = 60.0


def _row(analysis: int, due: float, started: float, outcome: str = "Pass") -> EvaluationRow:
    at = T + timedelta(seconds=started)
    return EvaluationRow(
        analysis, T + timedelta(seconds=due), at, at + timedelta(seconds=0.1), outcome
    )


def test_every_due_time_in_the_window_is_accounted_for_from_the_rows_own_due_times() -> None:
    rows = [
        # 1: moved onto its phase by the operator (due 96 s after the one before), on time
        # there. Rebuilt from its first row's start, its second due time would be 60.1 s: a
        # lag of 36 s that never happened.
        _row(1, 0.0, 0.1),
        _row(1, 96.0, 96.05),
        # 2: on time, then nothing: its next due time, 120 s, is missed.
        _row(2, 0.0, 0.2),
        _row(2, 60.0, 60.2),
        # 3: three seconds late.
        _row(3, 100.0, 103.0),
        # 4: an error, whose next due time is a backoff no row gives: counted as an error.
        _row(4, 50.0, 50.1, outcome="Error"),
        # 5: its second attempt started after the grace: that due time is missed.
        _row(5, 10.0, 10.1),
        _row(5, 70.0, 175.0),
    ]
    stats = dispatch_stats(
        rows,
        dict.fromkeys(range(1, 6), INTERVAL),
        {index: f"uid-{index}" for index in range(1, 6)},
        window_start=T + timedelta(seconds=30),
        window_end=T + timedelta(seconds=130),
        grace=timedelta(seconds=30),
    )

    assert (stats.due, stats.on_time, stats.late, stats.missed) == (6, 3, 1, 2)
    assert stats.lag_max == 3.0
    # Each missed due time skipped its own slot.
    assert (stats.skipped_slots, stats.errors) == (2, 1)
    assert (stats.evaluations_in_window, stats.analyses_seen) == (4, 5)
