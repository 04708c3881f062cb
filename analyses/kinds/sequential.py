"""The sequential kind on the web side: its evidence against the evidence needed, and the two
sides' bad-event rates (docs/analysis.md#sequential-judgment-a-false-pause-budget-per-rollout)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from analyses.kinds._view import HistoryColumn, KindView
from analyses.models import AnalysisMetric
from analyses.numbers import number_html
from sentinel_core.metric_kinds import compare, sequential


def _reads(metric: AnalysisMetric) -> tuple[tuple[str, str], ...]:
    """Return its selectors: a histogram, or its bad and all events."""
    spec = metric.sequential if isinstance(metric.sequential, dict) else {}
    if spec.get("histogram"):
        return (("Histogram", str(spec["histogram"])),)
    return (
        ("Bad events", str(spec.get("bad", ""))),
        ("All events", str(spec.get("total", ""))),
    )


def _point(values: Mapping[str, Any]) -> dict[str, float | None]:
    # Both sides' bad events per event over the steps the evaluation counted (None where it
    # counted none), and the ratio's bounds after it (None where a side has none yet).
    bounds = {
        "ratio_lower": _ratio(values.get("ratio_lower")),
        "ratio_upper": _ratio(values.get("ratio_upper")),
    }
    sides = sequential.Counted.from_dict(values.get("counted"))
    if sides is None:
        return {"new_rate": None, "old_rate": None, **bounds}
    return {"new_rate": sides.new_rate, "old_rate": sides.old_rate, **bounds}


def _ratio(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _margin(metric: AnalysisMetric) -> float:
    """Return the ratio a good release stays under: 1 + maxIncrease."""
    spec = metric.sequential if isinstance(metric.sequential, dict) else {}
    increase = (spec.get("maxIncrease") or {}).get("percent") or 0
    return 1 + float(increase) / 100


def _rule(metric: AnalysisMetric, needed: float | None) -> SafeString | str:
    """Return a metric's ``sequential`` (the mirror's dict, defaults written out) in words."""
    spec = metric.sequential
    if not isinstance(spec, dict) or not spec:
        return ""
    increase = (spec.get("maxIncrease") or {}).get("percent") or 0
    if spec.get("histogram"):
        rate = format_html("share of requests slower than {}", number_html(spec.get("slowerThan")))
    else:
        rate = "share of bad events"
    text = format_html(
        "new pods vs old by {}: fails when the evidence that the new pods' {} is over "
        "{} \u00d7 the old pods' reaches {}",
        spec.get("by", compare.DEFAULT_BY),
        rate,
        number_html(1 + float(increase) / 100),
        number_html(needed) if needed is not None else "the evidence needed",
    )
    if spec.get("minEvents") is not None:
        events = number_html(spec["minEvents"])
        text = format_html("{}; a Pass needs {} events on the new pods", text, events)
    return text


_COUNT = {"type": "number", "minimum": 0}
# The history's counts of both sides (sequential.Counted.to_dict); the status keeps only the
# evidence, so the schema is the kind's own.
COUNTED = HistoryColumn(
    name="counted",
    component="Counted",
    schema=lambda result: {
        "type": "object",
        "nullable": True,
        "description": (
            "With sequential: both sides' counts over the steps this evaluation counted "
            "(docs/analysis.md#sequential-judgment-a-false-pause-budget-per-rollout); the "
            "bad-event rates are newBad/newTotal and oldBad/oldTotal. Null when it counted none."
        ),
        "properties": {
            "newBad": {**_COUNT, "description": "Bad events on the new pods."},
            "newTotal": {**_COUNT, "description": "All events on the new pods."},
            "oldBad": {**_COUNT, "description": "Bad events on the old pods."},
            "oldTotal": {**_COUNT, "description": "All events on the old pods."},
            "steps": {"type": "integer", "minimum": 0, "description": "Steps counted."},
            "through": {
                "type": "string",
                "format": "date-time",
                "description": "The end of the last step counted.",
            },
        },
        "required": ["newBad", "newTotal", "oldBad", "oldTotal", "steps", "through"],
    },
    help_text=(
        "With sequential: the new and the old pods' bad and all events over the steps this "
        "evaluation counted; null when it counted none."
    ),
)

VIEW = KindView(
    name=sequential.KIND.name,
    claims=lambda metric: bool(metric.sequential),
    kept=lambda result: bool(result.counted),
    tag=lambda row: sequential.KIND.name,
    words={sequential.KIND.name: "sequential, new pods against old"},
    caption=lambda tag, max_value: (
        "Evidence that the new pods are worse, over the rollout (log scale), up to the evidence "
        "needed"
    ),
    reads=_reads,
    rule=_rule,
    evidence=True,
    needed=lambda result: result.sequential.needed if result.sequential is not None else None,
    point=_point,
    band=_margin,
    cell="admin/analyses/includes/kinds/evidence_cell.html",
    columns=(COUNTED,),
    spec_column="sequential",
)
