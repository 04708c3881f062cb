"""The compare kind on the web side: new pods against old pods (docs/resource.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from analyses.kinds._view import HistoryColumn, KindView
from analyses.models import AnalysisMetric
from analyses.numbers import number_html
from sentinel_core.metric_kinds import compare


def compare_text(spec: object) -> SafeString | str:
    """Return a metric's ``compare`` (the mirror's dict, defaults written out) in words."""
    if not isinstance(spec, dict) or not spec:
        return ""
    effect = spec.get("maxEffect") or {}
    if "percent" in effect:
        limit = format_html("by more than {} %", number_html(effect["percent"]))
    elif "absolute" in effect:
        limit = format_html("by more than {}", number_html(effect["absolute"]))
    else:
        limit = format_html("at all")
    return format_html(
        "new pods vs old by {}: fails when {}d {} (confidence {}, over {})",
        spec.get("by", compare.DEFAULT_BY),
        spec.get("worse", compare.DEFAULT_WORSE),
        limit,
        number_html(spec.get("confidence", compare.DEFAULT_CONFIDENCE)),
        spec.get("lookback", compare.DEFAULT_LOOKBACK),
    )


def _point(values: Mapping[str, Any]) -> dict[str, float | None]:
    compared = values.get("comparison")
    compared = compared if isinstance(compared, dict) else {}
    return {"new_median": compared.get("newMedian"), "old_median": compared.get("oldMedian")}


def _rule(metric: AnalysisMetric, needed: float | None) -> SafeString | str:
    return compare_text(metric.compare)


# The history's copy of status.metricResults[].comparison (docs/status.md#fields).
COMPARISON = HistoryColumn(
    name="comparison",
    component="Comparison",
    schema=lambda result: dict(result.get("comparison", {"type": "object"})),
    help_text="With compare: the new pods against the old ones; null without one.",
)

VIEW = KindView(
    name=compare.KIND.name,
    claims=lambda metric: bool(metric.compare),
    kept=lambda result: bool(result.comparison),
    tag=lambda row: compare.KIND.name,
    words={compare.KIND.name: "new pods against old"},
    caption=lambda tag, max_value: (
        "The value at each evaluation, with the new and the old pods' medians"
    ),
    reads=lambda metric: (("Query", metric.query),),
    rule=_rule,
    point=_point,
    cell="admin/analyses/includes/kinds/medians_cell.html",
    sentence_class="metric-comparison",
    columns=(COMPARISON,),
    spec_column="compare",
)
