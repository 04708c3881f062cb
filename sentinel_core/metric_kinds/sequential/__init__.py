"""The sequential kind: new pods against old pods on counts, an e-process (docs/analysis.md).

The kind is ``KIND``; its parts are private: ``_spec`` (the ``sequential`` field and
``spec.falsePauseRate``), ``_read`` (where the evidence starts, which steps to read, the raw
samples that count them, their differences as steps), ``_evidence`` (the arithmetic of the
evidence, its state in the status, the verdict and its sentence), ``_judge`` (the evidence
continued and judged).
"""

from collections.abc import Mapping
from typing import Any

from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds._kind import MetricKind, Parsing, Recorded, with_sides_label
from sentinel_core.metric_kinds.sequential._evidence import (
    BOUND_GRID,
    GRID,
    Counted,
    Settings,
    Side,
    State,
    Step,
    accumulate,
    advance,
    bound_grid,
    counted,
    effective_pods,
    evidence_of,
    fresh,
    grid,
    judge_sequential,
    log_ratios,
    persistent_spread,
    ratio_bounds,
    reached,
    spread_of,
    widening_of,
    widenings,
)
from sentinel_core.metric_kinds.sequential._judge import judge, settings_of
from sentinel_core.metric_kinds.sequential._read import (
    LOOKBACK_SECONDS,
    MAX_READ_SECONDS,
    MAX_STEPS,
    PART_LABEL,
    Basis,
    Plan,
    Reading,
    basis_of,
    begin,
    boundaries_query,
    boundary_pattern,
    facts,
    instant,
    key_of,
    lacks_boundary,
    measure,
    plan,
    samples_queries,
    step_counts,
    steps_of,
)
from sentinel_core.metric_kinds.sequential._spec import (
    DEFAULT_FALSE_PAUSE_RATE,
    DEFAULT_MIN_EVENTS,
    MAX_SELECTOR_LENGTH,
    Sequential,
    check_sequential_exclusive,
    parse_false_pause_rate,
    parse_sequential,
)


def _parse(item: Mapping[str, object], p: Parsing) -> dict[str, object]:
    raw, path = item.get("sequential"), f"{p.path}.sequential"
    sequential = parse_sequential(raw, path, strict=p.strict, add=p.add)
    check_sequential_exclusive(item, p.path, p.add)
    return {"sequential": sequential}


def _applies(metric: Any) -> bool:
    return metric.sequential is not None


def _recorded(m: Measurement, result: Any) -> Recorded:
    # The value is the evidence, the limit the evidence needed; the counts have their own column,
    # and so have the ratio's bounds (the admin's and the notification's band).
    if result is None or result.sequential is None:
        return Recorded()
    low, high = result.sequential.bounds()
    return Recorded(
        value=result.sequential.evidence,
        value_text=result.value or "",
        ratio_lower=low,
        ratio_upper=high,
    )


KIND = MetricKind(
    name="sequential",
    applies=_applies,
    # null is absent, as the API server prunes it.
    bounded=lambda item: item.get("sequential") is not None,
    parse=_parse,
    sides=True,
    targeted=lambda metric, item, by: with_sides_label(metric, item, "sequential", by),
    facts=facts,
    measure=measure,
    judge=judge,
    recorded=_recorded,
)

__all__ = [
    "BOUND_GRID",
    "DEFAULT_FALSE_PAUSE_RATE",
    "DEFAULT_MIN_EVENTS",
    "GRID",
    "KIND",
    "LOOKBACK_SECONDS",
    "MAX_READ_SECONDS",
    "MAX_SELECTOR_LENGTH",
    "MAX_STEPS",
    "PART_LABEL",
    "Basis",
    "Counted",
    "Plan",
    "Reading",
    "Sequential",
    "Settings",
    "Side",
    "State",
    "Step",
    "accumulate",
    "advance",
    "basis_of",
    "begin",
    "bound_grid",
    "boundaries_query",
    "boundary_pattern",
    "check_sequential_exclusive",
    "counted",
    "effective_pods",
    "evidence_of",
    "fresh",
    "grid",
    "instant",
    "judge_sequential",
    "key_of",
    "lacks_boundary",
    "log_ratios",
    "parse_false_pause_rate",
    "parse_sequential",
    "persistent_spread",
    "plan",
    "ratio_bounds",
    "reached",
    "samples_queries",
    "settings_of",
    "spread_of",
    "step_counts",
    "steps_of",
    "widening_of",
    "widenings",
]
