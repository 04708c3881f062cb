"""What a ``compare`` metric asks and reads: its query, its guard, both sides' samples.

The metric's own query comes first (its value is shown, not judged), then its ``minSamples``
guard as a threshold asks it, then one range query over ``lookback`` ending now, at the analysis
interval, split by the ``by`` label into the new pods' and the old pods' samples: only when there
are two sides to compare. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds._kind import Asking, Facts, Instant, Range, Recorded, Situation
from sentinel_core.metric_kinds.compare._spec import Compare
from sentinel_core.metric_kinds.threshold import ask_guard


@dataclass(frozen=True)
class Sides:
    """What the operator fetched for one comparison: the two sides' samples and hashes.

    ``new_hash`` is None when the target has no ReplicaSet; ``old_hashes`` is empty when no old
    ReplicaSet has replicas (the rollout finished or has not begun). The values are every
    non-NaN sample of every series whose ``by`` label is that side's hash.
    """

    new_hash: str | None
    old_hashes: tuple[str, ...]
    new_values: tuple[float, ...] = ()
    old_values: tuple[float, ...] = ()


@dataclass(frozen=True)
class Reading:
    """A comparison's reading: the guard's answer and the two sides (None: not fetched)."""

    samples: float | None = None
    samples_text: str | None = None
    sides: Sides | None = None


def facts(metric: Any, situation: Situation) -> Facts:
    """Return the facts to measure ``metric`` with: the shared ones (the pods' hashes, now)."""
    return situation.facts


def measure(metric: Any, facts: Facts) -> Asking:
    """Ask the metric's query, its guard, then both sides' samples (see the module)."""
    measured = yield Instant(metric.query)
    assert isinstance(measured, Measurement)
    samples, samples_text = yield from ask_guard(metric)
    compare = metric.compare
    sides = Sides(facts.new_hash, facts.old_hashes)
    if facts.new_hash is not None and facts.old_hashes and facts.now is not None:
        series = yield Range(
            metric.query,
            start=facts.now - timedelta(seconds=compare.lookback_seconds),
            end=facts.now,
            step=facts.step,
            label=f"range query over {compare.lookback}",
        )
        assert isinstance(series, tuple)
        values = tuple((labels, tuple(v for _, v in points)) for labels, points in series)
        sides = split_sides(compare, values, facts.new_hash, facts.old_hashes)
    return replace(measured, reading=Reading(samples, samples_text, sides))


def split_sides(
    compare: Compare,
    series: Sequence[tuple[Mapping[str, str], Sequence[float]]],
    new_hash: str | None,
    old_hashes: Sequence[str],
) -> Sides:
    """Return the two sides of range-query ``series`` (labels, values) by their ``by`` label."""
    old = set(old_hashes)
    new_values: list[float] = []
    old_values: list[float] = []
    for labels, values in series:
        side = labels.get(compare.by)
        kept = [v for v in values if not math.isnan(v)]
        if new_hash is not None and side == new_hash:
            new_values.extend(kept)
        elif side in old:
            old_values.extend(kept)
    return Sides(new_hash, tuple(old_hashes), tuple(new_values), tuple(old_values))


def recorded(m: Measurement, result: Any) -> Recorded:
    """Return the guard's answer, as the history row keeps it."""
    reading = m.reading if isinstance(m.reading, Reading) else Reading()
    return Recorded(samples_text=reading.samples_text or "")
