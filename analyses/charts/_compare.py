"""Draw a ``compare`` metric's two sides: the new pods' and the old pods' medians.

What ``compare`` means is in docs/resource.md (new pods against old pods).

``_render.render_metric_chart`` calls ``comparison_lines`` with its own coordinate mapping when
any point carries a comparison: the new pods as a solid orange line, the old pods as a dashed
slate line, a gap where an evaluation had no comparison (``NoComparison``), and a legend. Pure:
points in, SVG fragments out; every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape
from typing import Protocol

from sentinel_core.values import format_value

# At least 3:1 against the white plot (graphics) and 4.5:1 for their labels (WCAG AA).
NEW = "#c2410c"
OLD = "#475569"


class Compared(Protocol):
    at: datetime
    new_median: float | None
    old_median: float | None


def comparison_lines(
    points: Sequence[Compared],
    *,
    x: Callable[[datetime], float],
    y: Callable[[float], float],
    legend_at: tuple[float, float],
) -> list[str]:
    """Return the two lines (new, old) and their legend; nothing when no point compared."""
    if not any(_usable(p.new_median) and _usable(p.old_median) for p in points):
        return []
    parts: list[str] = []
    for side, colour, dash in (("new", NEW, ""), ("old", OLD, ' stroke-dasharray="6 4"')):
        for segment in _segments(points, side, x, y):
            if len(segment) == 1:
                # One comparison alone: a short tick, so a lone median is still visible.
                cx, cy = segment[0]
                segment = [(cx - 4, cy), (cx + 4, cy)]
            coordinates = " ".join(f"{px:.1f},{py:.1f}" for px, py in segment)
            parts.append(
                f'<polyline class="chart-{side}-pods" points="{coordinates}" fill="none" '
                f'stroke="{colour}" stroke-width="2"{dash} stroke-linejoin="round"/>'
            )
    last = next(p for p in reversed(points) if _usable(p.new_median) and _usable(p.old_median))
    parts.append(_legend(legend_at, last))
    return parts


def _segments(
    points: Sequence[Compared],
    side: str,
    x: Callable[[datetime], float],
    y: Callable[[float], float],
) -> list[list[tuple[float, float]]]:
    segments: list[list[tuple[float, float]]] = []
    segment: list[tuple[float, float]] = []
    for point in points:
        value = point.new_median if side == "new" else point.old_median
        if not _usable(value) or value is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append((x(point.at), y(value)))
    if segment:
        segments.append(segment)
    return segments


def _legend(at: tuple[float, float], last: Compared) -> str:
    left, top = at
    new = format_value(last.new_median or 0.0)
    old = format_value(last.old_median or 0.0)
    items = []
    for offset, (side, colour, words) in enumerate(
        (("new", NEW, f"new pods' median {new}"), ("old", OLD, f"old pods' median {old}"))
    ):
        y = top + 12 + offset * 14
        dash = ' stroke-dasharray="6 4"' if side == "old" else ""
        items.append(
            f'<line x1="{left:.1f}" x2="{left + 18:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text class="chart-{side}-label" x="{left + 22:.1f}" y="{y:.1f}" fill="{colour}" '
            f'font-size="11" font-family="system-ui, -apple-system, Segoe UI, Roboto, '
            f'sans-serif">{escape(words)}</text>'
        )
    return f'<g class="chart-comparison-legend">{"".join(items)}</g>'


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def compare_text(compare: object) -> str:
    """Return a metric's ``compare`` spec (the mirror's dict) in words, or "" without one."""
    if not isinstance(compare, dict) or not compare:
        return ""
    effect = compare.get("maxEffect") or {}
    if "percent" in effect:
        limit = f"by more than {format_value(float(effect['percent']))} %"
    elif "absolute" in effect:
        limit = f"by more than {format_value(float(effect['absolute']))}"
    else:
        limit = "at all"
    return (
        f"new pods vs old by {compare.get('by', 'pod_template_hash')}: fails when "
        f"{compare.get('worse', 'increase')}d {limit} (confidence {compare.get('confidence')}, "
        f"over {compare.get('lookback')})"
    )
