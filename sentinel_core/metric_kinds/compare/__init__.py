"""The compare kind: new pods against old pods at the same moment (docs/analysis.md).

The parts are private: ``_spec`` (the ``compare`` field, its defaults and parsing), ``_judge``
(the two sides' samples and the Mann-Whitney U judgment).
"""

from sentinel_core.metric_kinds.compare._judge import (
    Comparison,
    Outcome,
    Sides,
    judge_comparison,
    sentence,
    split_sides,
)
from sentinel_core.metric_kinds.compare._spec import (
    DEFAULT_BY,
    DEFAULT_CONFIDENCE,
    DEFAULT_LOOKBACK,
    DEFAULT_MIN_SAMPLES,
    DEFAULT_WORSE,
    EXCLUSIVE_MESSAGE,
    LEAST_MIN_SAMPLES,
    MAX_POINTS,
    Compare,
    Effect,
    check_exclusive,
    parse_compare,
)

__all__ = [
    "DEFAULT_BY",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_LOOKBACK",
    "DEFAULT_MIN_SAMPLES",
    "DEFAULT_WORSE",
    "EXCLUSIVE_MESSAGE",
    "LEAST_MIN_SAMPLES",
    "MAX_POINTS",
    "Compare",
    "Comparison",
    "Effect",
    "Outcome",
    "Sides",
    "check_exclusive",
    "judge_comparison",
    "parse_compare",
    "sentence",
    "split_sides",
]
