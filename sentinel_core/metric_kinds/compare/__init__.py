"""The compare kind: new pods against old pods at the same moment (docs/analysis.md).

The kind is ``KIND``; its parts are private: ``_spec`` (the ``compare`` field, its defaults and
parsing), ``_read`` (the queries and the reading: the guard's answer and the two sides' samples),
``_judge`` (the Mann-Whitney U judgment and its sentence).
"""

from collections.abc import Mapping
from typing import Any

from sentinel_core.metric_kinds._kind import MetricKind, Parsing, with_sides_label
from sentinel_core.metric_kinds.compare._judge import (
    Comparison,
    Outcome,
    judge,
    judge_comparison,
    sentence,
)
from sentinel_core.metric_kinds.compare._read import (
    Reading,
    Sides,
    facts,
    measure,
    recorded,
    split_sides,
)
from sentinel_core.metric_kinds.compare._spec import (
    DEFAULT_BY,
    DEFAULT_CONFIDENCE,
    DEFAULT_LOOKBACK,
    DEFAULT_MIN_SAMPLES,
    DEFAULT_WORSE,
    Compare,
    Effect,
    check_exclusive,
    parse_compare,
)


def _parse(item: Mapping[str, object], p: Parsing) -> dict[str, object]:
    raw, path = item.get("compare"), f"{p.path}.compare"
    compare = parse_compare(raw, path, strict=p.strict, parse_duration=p.parse_duration, add=p.add)
    check_exclusive(item, p.path, p.add)
    return {"compare": compare}


def _applies(metric: Any) -> bool:
    return metric.compare is not None


KIND = MetricKind(
    name="compare",
    applies=_applies,
    bounded=lambda item: "compare" in item,
    parse=_parse,
    sides=True,
    targeted=lambda metric, item, by: with_sides_label(metric, item, "compare", by),
    facts=facts,
    measure=measure,
    judge=judge,
    recorded=recorded,
)

__all__ = [
    "DEFAULT_BY",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_LOOKBACK",
    "DEFAULT_MIN_SAMPLES",
    "DEFAULT_WORSE",
    "KIND",
    "Compare",
    "Comparison",
    "Effect",
    "Outcome",
    "Reading",
    "Sides",
    "check_exclusive",
    "judge_comparison",
    "parse_compare",
    "sentence",
    "split_sides",
]
