"""next_delay: exponential from min(5 s, interval), doubling, capped at max(interval, 60 s),
with jitter that never exceeds the cap."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sentinel_core.backoff import next_delay


class FixedRandom(random.Random):
    """A real Random whose uniform() returns one end of the range, to pin the jitter."""

    def __init__(self, end: str) -> None:
        super().__init__(0)
        self.end = end

    def uniform(self, a: float, b: float) -> float:
        return {"low": a, "mid": (a + b) / 2, "high": b}[self.end]


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        (30.0, [5, 10, 20, 40, 60, 60, 60]),
        (2.0, [2, 4, 8, 16, 32, 60, 60]),
        (300.0, [5, 10, 20, 40, 80, 160, 300, 300]),
        (60.0, [5, 10, 20, 40, 60, 60]),
    ],
)
def test_delays_double_from_the_first_delay_up_to_the_cap(
    interval: float, expected: list[float]
) -> None:
    rng = FixedRandom("mid")
    delays = [next_delay(attempt, interval, rng) for attempt in range(1, len(expected) + 1)]
    assert delays == pytest.approx(expected)


def test_jitter_is_ten_percent_and_never_above_the_cap() -> None:
    assert next_delay(2, 30.0, FixedRandom("low")) == pytest.approx(9.0)
    assert next_delay(2, 30.0, FixedRandom("high")) == pytest.approx(11.0)
    assert next_delay(10, 30.0, FixedRandom("high")) == 60.0
    assert next_delay(10, 30.0, FixedRandom("low")) == pytest.approx(54.0)


def test_attempt_below_one_counts_as_the_first() -> None:
    rng = FixedRandom("mid")
    assert next_delay(0, 30.0, rng) == next_delay(1, 30.0, rng) == pytest.approx(5.0)


def test_huge_attempt_counts_do_not_overflow() -> None:
    assert next_delay(10**6, 30.0, FixedRandom("mid")) == 60.0


def test_non_positive_interval_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="positive"):
        next_delay(1, 0.0, random.Random(1))


def test_same_seed_same_delays() -> None:
    def sequence(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [next_delay(n, 30.0, rng) for n in range(1, 8)]

    assert sequence(42) == sequence(42)
    assert sequence(42) != sequence(43)


@given(
    attempt=st.integers(min_value=1, max_value=200),
    interval=st.floats(min_value=0.001, max_value=86_400),
    seed=st.integers(0, 2**32),
)
def test_delay_stays_within_jittered_bounds(attempt: int, interval: float, seed: int) -> None:
    delay = next_delay(attempt, interval, random.Random(seed))
    cap = max(interval, 60.0)
    first = min(5.0, interval)
    assert first * 0.9 <= delay <= cap
    # Recovery is noticed within the cap; an outage never costs more queries than health.
    assert delay >= min(first * 2 ** (attempt - 1), cap) * 0.9


@given(interval=st.floats(min_value=0.5, max_value=30), seed=st.integers(0, 2**32))
def test_an_hour_of_outage_sends_fewer_queries_than_an_hour_of_health(
    interval: float, seed: int
) -> None:
    rng = random.Random(seed)
    elapsed, attempts = 0.0, 0
    while elapsed < 3600:
        attempts += 1
        elapsed += next_delay(attempts, interval, rng)
    assert attempts < 3600 / interval
    # Backed off, the wait never exceeds the cap, so the recovery is seen within it.
    assert next_delay(attempts, interval, rng) <= 60.0
