"""Draw two sides of a metric: the new pods' and the old pods' line, with their legend.

What ``compare`` means is in docs/resource.md (new pods against old pods); a sequential metric's
two bad-event rates are in docs/analysis.md#sequential-judgment-a-false-pause-budget-per-rollout.

``_render.render_metric_chart`` calls ``comparison_lines`` with its own coordinate mapping when
any point carries a comparison (the two medians); ``_rates.render_rates_chart`` calls it with
the two sides' bad-event rates. The new pods as a solid orange line, the old pods as a dashed
slate line, a gap where an evaluation had nothing for them (``NoComparison``, no step counted),
and a legend. Pure: points in, SVG fragments out; every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape
from typing import Protocol, TypeVar

from analyses.charts._svg import readable

# At least 3:1 against the white plot (graphics) and 4.5:1 for their labels (WCAG AA).
NEW = "#c2410c"
OLD = "#475569"


class Compared(Protocol):
    @property
    def at(self) -> datetime: ...
    @property
    def new_median(self) -> float | None: ...
    @property
    def old_median(self) -> float | None: ...


P = TypeVar("P", bound=Compared)
# The two values a point has for the new and the old side.
Pair = tuple[float | None, float | None]


def medians(point: Compared) -> Pair:
    """Return a point's two medians (``compare``): the sides ``comparison_lines`` draws."""
    return point.new_median, point.old_median


def comparison_lines(
    points: Sequence[P],
    *,
    x: Callable[[datetime], float],
    y: Callable[[float], float],
    legend_at: tuple[float, float],
    sides: Callable[[P], Pair] = medians,
    words: str = "median",
    unit: str = "",
) -> list[str]:
    """Return the two lines (new, old) and their legend; nothing when no point has both.

    ``sides`` picks a point's two values; the legend reads "new pods' <words> <value><unit>".
    """
    pairs = [(p.at, *sides(p)) for p in points]
    both = [(new, old) for _, new, old in pairs if _usable(new) and _usable(old)]
    if not both:
        return []
    parts: list[str] = []
    for index, (side, colour, dash) in enumerate(
        (("new", NEW, ""), ("old", OLD, ' stroke-dasharray="6 4"'))
    ):
        for segment in _segments([(at, one[index]) for at, *one in pairs], x, y):
            if len(segment) == 1:
                # One value alone: a short tick, so a lone point is still visible.
                cx, cy = segment[0]
                segment = [(cx - 4, cy), (cx + 4, cy)]
            coordinates = " ".join(f"{px:.1f},{py:.1f}" for px, py in segment)
            parts.append(
                f'<polyline class="chart-{side}-pods" points="{coordinates}" fill="none" '
                f'stroke="{colour}" stroke-width="2"{dash} stroke-linejoin="round"/>'
            )
    parts.append(_legend(legend_at, both[-1], words, unit))
    return parts


def _segments(
    values: Sequence[tuple[datetime, float | None]],
    x: Callable[[datetime], float],
    y: Callable[[float], float],
) -> list[list[tuple[float, float]]]:
    segments: list[list[tuple[float, float]]] = []
    segment: list[tuple[float, float]] = []
    for at, value in values:
        if not _usable(value) or value is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append((x(at), y(value)))
    if segment:
        segments.append(segment)
    return segments


def _legend(at: tuple[float, float], last: Pair, words: str, unit: str) -> str:
    left, top = at
    new, old = (readable(value or 0.0) + unit for value in last)
    texts = (("new", NEW, f"new pods' {words} {new}"), ("old", OLD, f"old pods' {words} {old}"))
    items = []
    for offset, (side, colour, text) in enumerate(texts):
        y = top + 12 + offset * 14
        dash = ' stroke-dasharray="6 4"' if side == "old" else ""
        items.append(
            f'<line x1="{left:.1f}" x2="{left + 18:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text class="chart-{side}-label" x="{left + 22:.1f}" y="{y:.1f}" fill="{colour}" '
            f'font-size="11" font-family="system-ui, -apple-system, Segoe UI, Roboto, '
            f'sans-serif">{escape(text)}</text>'
        )
    # On a light backing, as wide as the longer text (11 px characters average under 6.5 px):
    # the lines may run under the legend.
    width = 30 + 6.5 * max(len(text) for _, _, text in texts)
    backing = (
        f'<rect x="{left - 4:.1f}" y="{top + 1:.1f}" width="{width:.1f}" height="31" '
        f'fill="#ffffff" fill-opacity="0.85"/>'
    )
    return f'<g class="chart-comparison-legend">{backing}{"".join(items)}</g>'


def _usable(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
