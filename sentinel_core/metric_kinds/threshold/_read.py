"""What a threshold metric asks and reads: its query, its ``minSamples`` guard, its baseline.

The metric's own query comes first; the guard query and the baseline query (the metric's own
query at an earlier instant, Prometheus's ``time`` parameter) follow only when it answered, each
at most once (the adapter stops at the first error). ``compare`` asks the same guard
(``ask_guard``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds._kind import (
    Answer,
    Ask,
    Asking,
    Facts,
    Instant,
    Recorded,
    Situation,
)


@dataclass(frozen=True)
class Reading:
    """A threshold metric's reading beyond its value: the guard's and the baseline's answers.

    Each is None for an empty result or NaN, or when it was not asked (no ``minSamples``; no
    ``maxIncrease``, or ``beforeRollout`` before any rollout was seen).
    """

    samples: float | None = None
    samples_text: str | None = None
    baseline: float | None = None
    baseline_text: str | None = None


def facts(metric: Any, situation: Situation) -> Facts:
    """Return the facts to measure ``metric`` with: when to ask for its baseline."""
    rollout = situation.rollout
    started = rollout.started_at if rollout is not None else None
    return replace(situation.facts, baseline_at=baseline_at(metric, started, situation.now))


def baseline_at(metric: Any, rollout_start: datetime | None, now: datetime) -> datetime | None:
    """Return when to evaluate ``metric``'s baseline; None when it has none or none yet."""
    baseline = metric.baseline
    if metric.max_increase is None or baseline is None:
        return None
    if baseline.offset_seconds is not None:
        return now - timedelta(seconds=baseline.offset_seconds)
    return rollout_start


def measure(metric: Any, facts: Facts) -> Asking:
    """Ask the metric's query, then its guard and its baseline (see the module)."""
    answer = yield Instant(metric.query)
    measured = _instant(answer)
    samples, samples_text = yield from ask_guard(metric)
    reading = Reading(samples=samples, samples_text=samples_text)
    if metric.max_increase is not None and facts.baseline_at is not None:
        baseline = _instant(
            (yield Instant(metric.query, at=facts.baseline_at, label="baseline query"))
        )
        reading = replace(reading, baseline=baseline.value, baseline_text=baseline.text)
    return replace(measured, reading=reading)


def ask_guard(metric: Any) -> Generator[Ask, Answer, tuple[float | None, str | None]]:
    """Ask ``metric``'s ``minSamples`` query if it has one; return its value and text."""
    guard = metric.min_samples
    if guard is None:
        return None, None
    samples = _instant((yield Instant(guard.query, label="minSamples query")))
    return samples.value, samples.text


def recorded(m: Measurement, result: Any) -> Recorded:
    """Return the baseline and the guard's answer, as the history row keeps them."""
    reading = m.reading if isinstance(m.reading, Reading) else Reading()
    return Recorded(
        baseline=reading.baseline,
        baseline_text=reading.baseline_text or "",
        samples_text=reading.samples_text or "",
    )


def _instant(answer: Answer) -> Measurement:
    assert isinstance(answer, Measurement)  # the answer to an Instant
    return answer
