"""The threshold kind: ``maxValue``, ``maxIncrease`` against a ``baseline``, ``minSamples``.

docs/resource.md describes the fields. The kind is ``KIND``; its parts are private: ``_spec`` (the
fields' types and their parsing), ``_read`` (the queries and the reading: the guard's and the
baseline's answers), ``_judge`` (the verdict and its sentence). ``compare`` shows the same fields
and applies the same guard (``ask_guard``, ``shown``, ``guard``, ``with_value``).
"""

from collections.abc import Mapping
from typing import Any

from sentinel_core.metric_kinds._kind import MetricKind, Parsing
from sentinel_core.metric_kinds.threshold._judge import guard, judge, shown, with_value
from sentinel_core.metric_kinds.threshold._read import (
    Reading,
    ask_guard,
    baseline_at,
    facts,
    measure,
    recorded,
)
from sentinel_core.metric_kinds.threshold._spec import (
    Baseline,
    Increase,
    MinSamples,
    parse_thresholds,
)


def _parse(item: Mapping[str, object], p: Parsing) -> dict[str, object]:
    parsed = parse_thresholds(
        item, p.path, strict=p.strict, parse_duration=p.parse_duration, add=p.add
    )
    return {
        "max_increase": parsed.max_increase,
        "baseline": parsed.baseline,
        "min_samples": parsed.min_samples,
    }


def _applies(metric: Any) -> bool:
    # The kind of every metric no other kind claims (the registry asks it last).
    return True


KIND = MetricKind(
    name="threshold",
    applies=_applies,
    bounded=lambda item: "maxIncrease" in item,
    parse=_parse,
    sides=False,
    targeted=lambda metric, item, by: metric,
    facts=facts,
    measure=measure,
    judge=judge,
    recorded=recorded,
)

__all__ = [
    "KIND",
    "Baseline",
    "Increase",
    "MinSamples",
    "Reading",
    "ask_guard",
    "baseline_at",
    "guard",
    "parse_thresholds",
    "shown",
    "with_value",
]
