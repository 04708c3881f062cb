"""The threshold kind on the web side: ``maxValue``, ``maxIncrease`` against a ``baseline``."""

from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from analyses.kinds._view import KindView
from analyses.models import AnalysisMetric, MetricResult
from analyses.numbers import number_html
from sentinel_core.metric_kinds import threshold

THRESHOLD = "threshold"
BASELINE = "baseline"


def _tag(row: AnalysisMetric | MetricResult) -> str:
    if isinstance(row, MetricResult):
        return BASELINE if row.baseline is not None else THRESHOLD
    increase = row.max_increase_percent is not None or row.max_increase_absolute is not None
    return BASELINE if increase else THRESHOLD


def _rule(metric: AnalysisMetric, needed: float | None) -> SafeString | str:
    parts = []
    if metric.max_value is not None:
        parts.append(format_html("above max {}", number_html(metric.max_value)))
    increase = _increase_text(metric)
    if increase:
        parts.append(format_html("above {}", increase))
    return mark_safe(" or ".join(parts))  # each part escaped by format_html


def _increase_text(metric: AnalysisMetric) -> SafeString | str:
    """Return a metric's ``maxIncrease`` and ``baseline`` in words, or "" without them."""
    if metric.max_increase_percent is not None:
        amount = format_html("+{} %", number_html(metric.max_increase_percent))
    elif metric.max_increase_absolute is not None:
        amount = format_html("+{}", number_html(metric.max_increase_absolute))
    else:
        return ""
    if metric.baseline_offset:
        return format_html("{} over its value {} earlier", amount, metric.baseline_offset)
    if metric.baseline_before_rollout:
        return format_html("{} over its value before the rollout", amount)
    return amount


def _caption(tag: str, max_value: float | None) -> str:
    if tag == BASELINE:
        return "The value at each evaluation, with the baseline it was compared with"
    against = ", against its max" if max_value is not None else ""
    return f"The value at each evaluation{against}"


VIEW = KindView(
    name=threshold.KIND.name,
    # The kind of every metric no other kind claims (the registry asks it last).
    claims=lambda metric: True,
    kept=lambda result: True,
    tag=_tag,
    words={THRESHOLD: "threshold", BASELINE: "against its baseline"},
    caption=_caption,
    reads=lambda metric: (("Query", metric.query),),
    rule=_rule,
)
