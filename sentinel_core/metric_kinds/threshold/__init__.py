"""The threshold kind: ``maxValue``, ``maxIncrease`` against a ``baseline``, ``minSamples``.

docs/resource.md describes the fields. The parts are private: ``_spec`` (the fields' types and
their parsing).
"""

from sentinel_core.metric_kinds.threshold._spec import (
    MAX_QUERY_LENGTH,
    Baseline,
    Increase,
    MinSamples,
    Thresholds,
    max_value_required,
    parse_thresholds,
)

__all__ = [
    "MAX_QUERY_LENGTH",
    "Baseline",
    "Increase",
    "MinSamples",
    "Thresholds",
    "max_value_required",
    "parse_thresholds",
]
