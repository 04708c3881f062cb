"""Draw a metric chart's layers: grid, maxValue, baseline, rollout, pauses, values, time axis.

Each function takes the chart's ``Frame`` and returns SVG fragments; ``_render.render_metric_chart``
stacks them. Pure: points in, markup out; every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from html import escape

from analyses.charts._scale import ChartPoint, Frame, is_breach, nice_step
from analyses.charts._svg import (
    BASELINE,
    BREACH,
    GRID,
    NO_DATA,
    PAUSE,
    ROLLOUT,
    VALUE,
    clock,
    readable,
    stamp,
    svg_text,
)
from sentinel_core.values import format_value

# Beyond this many samples, dots would merge into a smear; only breaches keep theirs.
_MAX_DOTS = 160


def draw_grid(frame: Frame) -> list[str]:
    """Draw the plot's border and the horizontal grid lines with their value labels."""
    # On a log scale: whole powers of ten, at most about five of them.
    step = (
        max(1.0, math.ceil((frame.hi - frame.lo) / 5))
        if frame.log
        else nice_step(frame.hi - frame.lo)
    )
    parts = [
        f'<rect x="{frame.left:.1f}" y="{frame.top:.1f}" width="{frame.right - frame.left:.1f}" '
        f'height="{frame.bottom - frame.top:.1f}" fill="none" stroke="{GRID}"/>'
    ]
    count = round((frame.hi - frame.lo) / step)
    for index in range(count + 1):
        value = frame.lo + index * step
        if frame.log:
            value = 10**value
        y = frame.y(value)
        parts.append(
            f'<line x1="{frame.left:.1f}" x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        parts.append(svg_text(frame.left - 6, y + 4, _tick_label(value), anchor="end"))
    return parts


def _tick_label(value: float) -> str:
    # Rounding hides float noise such as 0.30000000000000004 from repeated addition.
    return readable(round(value, 9) + 0.0)


def draw_threshold(frame: Frame, max_value: float, name: str = "max") -> list[str]:
    """Draw the ``maxValue`` line, its label and the shaded failing zone above it."""
    y = frame.y(max_value)
    label = f"{name} {readable(max_value)}"
    return [
        # Shade the failing zone so a breach reads at a glance, even without colour vision.
        f'<rect class="chart-breach-zone" x="{frame.left:.1f}" y="{frame.top:.1f}" '
        f'width="{frame.right - frame.left:.1f}" height="{max(y - frame.top, 0):.1f}" '
        f'fill="{BREACH}" fill-opacity="0.06"/>',
        f'<line class="chart-max" data-max-value="{escape(format_value(max_value))}" '
        f'x1="{frame.left:.1f}" x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
        f'stroke="{BREACH}" stroke-width="1.5" stroke-dasharray="6 4"/>',
        # On the left: pauses, drawn at the newest evaluations, are usually on the right.
        svg_text(frame.left + 4, y - 5, label, fill=BREACH, css="chart-max-label"),
    ]


def draw_baseline(frame: Frame, points: Sequence[ChartPoint]) -> list[str]:
    """Draw the baseline each evaluation was compared with, as steps; gaps where it had none."""
    segments: list[list[str]] = []
    segment: list[str] = []
    previous: ChartPoint | None = None
    for point in points:
        if point.baseline is None or math.isnan(point.baseline):
            if segment:
                segments.append(segment)
            segment, previous = [], None
            continue
        y = frame.y(point.baseline)
        if previous is not None and previous.baseline != point.baseline:
            # A step: the baseline holds until an evaluation measured another one.
            segment.append(f"{frame.x(point.at):.1f},{frame.y(previous.baseline or 0.0):.1f}")
        segment.append(f"{frame.x(point.at):.1f},{y:.1f}")
        previous = point
    if segment:
        segments.append(segment)
    last = next(
        (p for p in reversed(points) if p.baseline is not None and not math.isnan(p.baseline)),
        None,
    )
    if last is None or last.baseline is None:
        return []
    exact = format_value(last.baseline)
    parts = [
        f'<g class="chart-baseline" data-baseline="{escape(exact)}">'
        f"<title>Baseline, last {escape(exact)} at {clock(last.at)} UTC</title>"
    ]
    for coordinates in segments:
        if len(coordinates) == 1:
            # One evaluation alone: a short tick, so a lone baseline is still visible.
            x, y = (float(c) for c in coordinates[0].split(","))
            coordinates = [f"{x - 6:.1f},{y:.1f}", f"{x + 6:.1f},{y:.1f}"]
        parts.append(
            f'<polyline points="{" ".join(coordinates)}" fill="none" stroke="{BASELINE}" '
            f'stroke-width="1.5" stroke-dasharray="2 3"/>'
        )
    parts.append(
        svg_text(
            frame.right - 4,
            frame.y(last.baseline) + 14,
            f"baseline {readable(last.baseline)}",
            anchor="end",
            fill=BASELINE,
            css="chart-baseline-label",
        )
    )
    parts.append("</g>")
    return parts


def draw_rollout(frame: Frame, started_at: datetime | None) -> list[str]:
    """Mark when the target's current rollout began, if that is within the chart."""
    if started_at is None or not frame.t0 <= started_at.timestamp() <= frame.t1:
        return []
    x = frame.x(started_at)
    label_x, anchor = (x - 4, "end") if x > (frame.left + frame.right) / 2 else (x + 4, "start")
    return [
        f'<g class="chart-rollout" data-started-at="{clock(started_at)}">'
        f"<title>Rollout detected at {clock(started_at)} UTC</title>"
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:.1f}" y2="{frame.bottom:.1f}" '
        f'stroke="{ROLLOUT}" stroke-width="1.5"/>'
        + svg_text(label_x, frame.bottom - 5, "rollout", anchor=anchor, fill=ROLLOUT, weight="600")
        + "</g>"
    ]


def draw_pauses(frame: Frame, points: Sequence[ChartPoint]) -> list[str]:
    """Draw a labelled dashed line at each evaluation that paused the rollout."""
    parts: list[str] = []
    for point in points:
        if not point.paused:
            continue
        x = frame.x(point.at)
        parts.append(
            f'<g class="chart-pause"><title>Rollout paused at {clock(point.at)} UTC</title>'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:.1f}" y2="{frame.bottom:.1f}" '
            f'stroke="{PAUSE}" stroke-width="2" stroke-dasharray="3 3"/>'
            f"{_pause_label(frame, x)}</g>"
        )
    return parts


def _pause_label(frame: Frame, x: float) -> str:
    # Written on the side of the line that has room, so the newest pause stays readable.
    if x > (frame.left + frame.right) / 2:
        return svg_text(x - 4, frame.top + 11, "paused", anchor="end", fill=PAUSE, weight="600")
    return svg_text(x + 4, frame.top + 11, "paused", fill=PAUSE, weight="600")


def draw_series(frame: Frame, points: Sequence[ChartPoint], max_value: float | None) -> list[str]:
    """Draw the values as lines broken at gaps, their dots, breaches and no-data ticks."""
    parts: list[str] = []
    # A gap in the data (no answer) breaks the line rather than bridging it.
    segment: list[str] = []
    segments: list[list[str]] = []
    for point in points:
        if point.value is None or math.isnan(point.value):
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append(f"{frame.x(point.at):.1f},{frame.y(point.value):.1f}")
    if segment:
        segments.append(segment)
    for coordinates in segments:
        parts.append(
            f'<polyline class="chart-value" points="{" ".join(coordinates)}" fill="none" '
            f'stroke="{VALUE}" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>'
        )
    dots = len(points) <= _MAX_DOTS
    for point in points:
        x = frame.x(point.at)
        if point.value is None or math.isnan(point.value):
            parts.append(
                f'<g class="chart-no-data"><title>{clock(point.at)} UTC: no data</title>'
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.bottom - 6:.1f}" '
                f'y2="{frame.bottom:.1f}" stroke="{NO_DATA}" stroke-width="2"/></g>'
            )
            continue
        breach = is_breach(point, max_value)
        if not (dots or breach):
            continue
        shown = format_value(point.value)
        css = "chart-dot chart-breach" if breach else "chart-dot"
        parts.append(
            f'<circle class="{css}" cx="{x:.1f}" cy="{frame.y(point.value):.1f}" '
            f'r="{3.2 if breach else 2.4}" fill="{BREACH if breach else VALUE}">'
            f"<title>{clock(point.at)} UTC: {escape(shown)}</title></circle>"
        )
    return parts


def draw_note(frame: Frame, words: str) -> list[str]:
    """Write ``words`` in the middle of an empty plot (nothing evaluated or counted yet)."""
    middle = ((frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2)
    return [svg_text(*middle, words, anchor="middle", css="chart-empty", size=13)]


def draw_time_axis(frame: Frame, points: Sequence[ChartPoint]) -> list[str]:
    """Label the time axis at the first, middle and last evaluation."""
    if not points:
        return []
    first, last = points[0].at, points[-1].at
    long_span = (last - first).total_seconds() > 86400
    y = frame.bottom + 18
    if first == last:
        return [svg_text(frame.x(first), y, stamp(first, long_span) + " UTC", anchor="middle")]
    middle = first + (last - first) / 2
    return [
        svg_text(frame.left, y, stamp(first, long_span), anchor="start"),
        svg_text(frame.x(middle), y, stamp(middle, long_span), anchor="middle"),
        svg_text(frame.right, y, stamp(last, long_span) + " UTC", anchor="end"),
    ]
