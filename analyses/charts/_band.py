"""Draw a sequential metric's bounds of the ratio over time: a band, the graph under its rates.

The admin's analysis page calls ``render_band_chart`` for a metric whose kind's view has a band
(``analyses.kinds``: the sequential kind), with the same points as its evidence graph, so the
graphs share the time axis. Each point's ``ratio_lower`` and ``ratio_upper`` are the anytime-valid
bounds of the new pods' bad-event rate over the old pods' after that evaluation
(docs/analysis.md, "The ratio's bounds"), drawn on a log scale as a shaded band, with the
margin (1 + maxIncrease: a good release is under it) dashed red and the line of equal rates at 1.
A side not bounded yet runs to the edge of the plot; an evaluation with neither side bounded (or
a history row from before the bounds were kept) leaves a gap. Pure: points in, markup out;
every text is escaped, every number a person reads has six significant digits (``readable``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from html import escape

from analyses.charts._layers import draw_note, draw_pauses, draw_rollout, draw_time_axis
from analyses.charts._scale import ChartPoint, Frame, frame_for
from analyses.charts._svg import BREACH, GRID, LABEL, VALUE, clock, readable, svg_text

# The band's outline is VALUE (at least 3:1 on white); its fill a light tint of it.
_FILL_OPACITY = 0.18
_HEADROOM = 1.25


def render_band_chart(
    points: Sequence[ChartPoint],
    *,
    title: str,
    margin: float,
    rollout_at: datetime | None = None,
    width: int = 720,
    height: int = 160,
) -> str:
    """Return an ``<svg>`` element drawing the ratio's bounds of ``points`` (any order)."""
    ordered = sorted(points, key=lambda point: point.at)
    frame = _frame(ordered, margin, float(width), float(height))
    bounded = [p for p in ordered if _bounded(p)]
    ids = f"band-{re.sub(r'[^A-Za-z0-9_-]+', '-', title)}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="metric-chart band-chart" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'role="img" aria-labelledby="{ids}-title {ids}-desc" data-points="{len(bounded)}">',
        f'<title id="{ids}-title">Graph of {escape(title)}: the new pods\' bad-event rate over '
        f"the old pods', its bounds so far</title>",
        f'<desc id="{ids}-desc">{escape(_description(bounded, margin))}</desc>',
        *_grid(frame),
        # Labels on the left, the margin's above its line and 1's below, as the two lines may
        # lie close together (pauses, drawn at the newest evaluations, are on the right).
        *_level(frame, 1.0, "same rate 1", LABEL, "chart-band-one", "2 3", below=True),
        *_level(frame, margin, f"margin {readable(margin)}", BREACH, "chart-band-margin", "6 4"),
        *_band(frame, ordered),
        *draw_rollout(frame, rollout_at),
        *draw_pauses(frame, ordered),
        *draw_time_axis(frame, ordered),
    ]
    if not bounded:
        parts.extend(draw_note(frame, "No bounds yet: too little evidence either way"))
    parts.append("</svg>")
    return "".join(parts)


def _bounded(point: ChartPoint) -> bool:
    return point.ratio_lower is not None or point.ratio_upper is not None


def _frame(points: Sequence[ChartPoint], margin: float, width: float, height: float) -> Frame:
    """Return a log frame around the bounds, 1 and the margin, with some room above and below."""
    values = [1.0, margin] + [
        v for p in points for v in (p.ratio_lower, p.ratio_upper) if v is not None and v > 0
    ]
    lo = math.log10(min(values) / _HEADROOM)
    hi = math.log10(max(values) * _HEADROOM)
    # The time axis as the other graphs have it; the values play no part in it.
    base = frame_for([replace(p, value=None, baseline=None) for p in points], None, width, height)
    return replace(base, lo=lo, hi=hi, log=True)


def _grid(frame: Frame) -> list[str]:
    """Draw the border and grid lines at powers of two (halving and doubling), labelled."""
    parts = [
        f'<rect x="{frame.left:.1f}" y="{frame.top:.1f}" width="{frame.right - frame.left:.1f}" '
        f'height="{frame.bottom - frame.top:.1f}" fill="none" stroke="{GRID}"/>'
    ]
    low, high = math.ceil(frame.lo / math.log10(2)), math.floor(frame.hi / math.log10(2))
    # At most about five labelled lines.
    step = max(1, math.ceil((high - low + 1) / 5))
    for power in range(low, high + 1, step):
        value = 2.0**power
        y = frame.y(value)
        parts.append(
            f'<line x1="{frame.left:.1f}" x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        parts.append(svg_text(frame.left - 6, y + 4, readable(value), anchor="end"))
    return parts


def _level(
    frame: Frame, value: float, label: str, colour: str, css: str, dash: str, *, below: bool = False
) -> list[str]:
    y = frame.y(value)
    return [
        f'<line class="{css}" data-value="{readable(value)}" x1="{frame.left:.1f}" '
        f'x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="1.5" '
        f'stroke-dasharray="{dash}"/>',
        svg_text(
            frame.left + 4, y + 12 if below else y - 4, label, fill=colour, css=f"{css}-label"
        ),
    ]


def _band(frame: Frame, points: Sequence[ChartPoint]) -> list[str]:
    """Return one shaded polygon per run of evaluations with a bound, outlined."""
    runs: list[list[ChartPoint]] = [[]]
    for point in points:
        if _bounded(point):
            runs[-1].append(point)
        elif runs[-1]:
            runs.append([])
    parts = []
    for run in (r for r in runs if r):
        tops = [(frame.x(p.at), _y(frame, p.ratio_upper, frame.top)) for p in run]
        bottoms = [(frame.x(p.at), _y(frame, p.ratio_lower, frame.bottom)) for p in run]
        if len(run) == 1:
            # One evaluation alone: a narrow bar, so it is still visible.
            (x, top), (_, bottom) = tops[0], bottoms[0]
            tops, bottoms = [(x - 3, top), (x + 3, top)], [(x - 3, bottom), (x + 3, bottom)]
        outline = [*tops, *reversed(bottoms)]
        coordinates = " ".join(f"{px:.1f},{py:.1f}" for px, py in outline)
        last = run[-1]
        tip = (
            f"{clock(last.at)} UTC: new pods' rate {_words(last)} the old pods' "
            f"({len(run)} evaluations)"
        )
        parts.append(
            f'<polygon class="chart-band" data-evaluations="{len(run)}" '
            f'data-lower="{_text(last.ratio_lower)}" data-upper="{_text(last.ratio_upper)}" '
            f'points="{coordinates}" fill="{VALUE}" fill-opacity="{_FILL_OPACITY}" '
            f'stroke="{VALUE}" stroke-width="1.5" stroke-linejoin="round">'
            f"<title>{escape(tip)}</title></polygon>"
        )
    return parts


def _y(frame: Frame, value: float | None, edge: float) -> float:
    return edge if value is None else frame.y(value)


def _text(value: float | None) -> str:
    return "" if value is None else readable(value)


def _words(point: ChartPoint) -> str:
    low, high = point.ratio_lower, point.ratio_upper
    if low is not None and high is not None:
        return f"{readable(low)}\u2013{readable(high)} \u00d7"
    if low is not None:
        return f"at least {readable(low)} \u00d7"
    return f"at most {readable(high or 0.0)} \u00d7"


def _description(bounded: Sequence[ChartPoint], margin: float) -> str:
    """Return the graph in words (its <desc>): the last bounds against the margin."""
    if not bounded:
        return f"No bounds of the ratio yet; the margin is {readable(margin)}."
    last = [f"{clock(p.at)} UTC: {_words(p)}" for p in bounded[-3:]]
    return (
        "The new pods' bad-event rate over the old pods', anytime-valid bounds after each "
        f"evaluation, oldest first: {'; '.join(last)}; the margin is {readable(margin)}. "
        "The status's ratioLower and ratioUpper give the newest."
    )
