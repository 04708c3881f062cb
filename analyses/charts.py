"""Draw a metric's history as an inline SVG string, on the server.

The admin's analysis page calls ``render_metric_chart`` once per metric with the values of its
newest evaluations, and puts the result straight into the HTML: the graph needs no JavaScript,
no chart library and nothing from outside the app (SPEC §8). The function is pure (rows in,
markup out), so its tests parse the SVG instead of looking at pixels.

What a platform engineer reads from it: the value over time, the ``maxValue`` line with the zone
above it shaded, samples over the line in red, evaluations without data as grey ticks on the
time axis, and a dashed amber line at every evaluation that paused the rollout. Metrics judged
against a baseline (``maxIncrease``) also get the baseline as a dotted violet line, breaches
judged against each evaluation's own limit, and a teal line where the operator saw the target's
current rollout begin (``status.rollout.startedAt``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from analyses.chart_compare import comparison_lines
from sentinel_core.values import format_value

# Room around the plot for the tick labels (left, bottom) and the max label (top).
_LEFT, _RIGHT, _TOP, _BOTTOM = 58.0, 18.0, 18.0, 30.0
# Headroom above the highest of data and maxValue, so the line never touches the frame.
_HEADROOM = 1.15
_Y_TICKS = 4
# Finite values beyond ±_LIMIT (up to ±1.8e308) would overflow the span to infinity; they are
# drawn at the edge like infinite ones. Spans under _MIN_SPAN underflow the tick step to 0.
_LIMIT = 1e300
_MIN_SPAN = 1e-290
# Beyond this many samples, dots would merge into a smear; only breaches keep theirs.
_MAX_DOTS = 160

# Text in these colours (max and pause labels, ticks) is at least 4.5:1 on the white card and on
# the shaded zone (WCAG AA; tests/ui/test_accessibility.py checks it).
_VALUE = "#2563eb"
_BREACH = "#b91c1c"
_PAUSE = "#b45309"
_GRID = "#e5e7eb"
_LABEL = "#4b5563"
_NO_DATA = "#9ca3af"
# At least 3:1 against the white plot (graphics), 4.5:1 for their labels.
_BASELINE = "#6d28d9"
_ROLLOUT = "#0f766e"


@dataclass(frozen=True)
class ChartPoint:
    """One evaluation of one metric."""

    at: datetime
    # None when the query got no data or failed.
    value: float | None
    # Whether this evaluation paused the target.
    paused: bool = False
    # With maxIncrease: the baseline it was compared with (None: no baseline at the time).
    baseline: float | None = None
    # The lowest bound it was judged against; None falls back to the chart's max_value.
    limit: float | None = None
    # With compare (SPEC §3.2): the new and the old pods' medians (None: no comparison).
    new_median: float | None = None
    old_median: float | None = None


@dataclass(frozen=True)
class _Frame:
    """Maps data coordinates onto the plot area."""

    width: float
    height: float
    t0: float
    t1: float
    lo: float
    hi: float

    def x(self, moment: datetime) -> float:
        span = self.t1 - self.t0
        fraction = 0.5 if span <= 0 else (moment.timestamp() - self.t0) / span
        return _LEFT + fraction * (self.width - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        clamped = min(max(value, self.lo), self.hi)
        fraction = (clamped - self.lo) / (self.hi - self.lo)
        return self.height - _BOTTOM - fraction * (self.height - _TOP - _BOTTOM)

    @property
    def left(self) -> float:
        return _LEFT

    @property
    def right(self) -> float:
        return self.width - _RIGHT

    @property
    def top(self) -> float:
        return _TOP

    @property
    def bottom(self) -> float:
        return self.height - _BOTTOM


def render_metric_chart(
    points: Sequence[ChartPoint],
    *,
    max_value: float | None,
    title: str,
    rollout_at: datetime | None = None,
    width: int = 720,
    height: int = 220,
) -> str:
    """Return an ``<svg>`` element drawing ``points`` (any order) against ``max_value``.

    ``title`` names the metric for screen readers and tooltips. Infinite values are drawn at the
    edge of the plot; with no points the frame and the ``maxValue`` line are still drawn, with a
    note that nothing was evaluated yet. ``max_value`` is None for a metric judged only against
    its baseline; ``rollout_at`` is marked when it falls within the evaluations drawn.
    """
    ordered = sorted(points, key=lambda point: point.at)
    frame = _frame(ordered, max_value, float(width), float(height))
    breaches = sum(1 for p in ordered if _breach(p, max_value))
    bound = f"the maximum {format_value(max_value)}" if max_value is not None else "their limit"
    summary = f"{title}: {len(ordered)} evaluations, {breaches} above {bound}"
    # What a screen reader announces: <title> names the graph, <desc> gives the last values
    # (the page's history table lists every evaluation as text).
    ids = f"chart-{re.sub(r'[^A-Za-z0-9_-]+', '-', title)}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="metric-chart" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'role="img" aria-labelledby="{ids}-title {ids}-desc" data-points="{len(ordered)}">',
        f'<title id="{ids}-title">Graph of {escape(summary)}</title>',
        f'<desc id="{ids}-desc">{escape(_description(ordered, max_value))}</desc>',
        *_grid(frame),
        *(_threshold(frame, max_value) if max_value is not None else []),
        *_baseline(frame, ordered),
        *comparison_lines(ordered, x=frame.x, y=frame.y, legend_at=(frame.left + 8, frame.top)),
        *_rollout(frame, rollout_at),
        *_pauses(frame, ordered),
        *_series(frame, ordered, max_value),
        *_time_axis(frame, ordered),
    ]
    if not ordered:
        parts.append(
            _text(
                (frame.left + frame.right) / 2,
                (frame.top + frame.bottom) / 2,
                "No evaluations yet",
                anchor="middle",
                css="chart-empty",
                size=13,
            )
        )
    parts.append("</svg>")
    return "".join(parts)


def _frame(
    points: Sequence[ChartPoint], max_value: float | None, width: float, height: float
) -> _Frame:
    drawn = [
        v
        for p in points
        for v in (p.value, p.baseline, p.new_median, p.old_median)
        if v is not None
    ]
    finite = [_drawable(v) for v in (*drawn, max_value) if v is not None and math.isfinite(v)]
    lo = min([0.0, *finite])
    hi = max(finite, default=0.0)
    # A span of a few denormals has no power of ten to step by: such data is drawn as flat,
    # in a band as wide as the values are large (1.0 would vanish next to 1e300).
    flat_span = max(1.0, abs(lo))
    hi = lo + (hi - lo) * _HEADROOM if hi - lo > _MIN_SPAN else lo + flat_span
    lo, hi = _nice_bounds(lo, hi)
    stamps = [p.at.timestamp() for p in points]
    t0, t1 = (min(stamps), max(stamps)) if stamps else (0.0, 0.0)
    return _Frame(width=width, height=height, t0=t0, t1=t1, lo=lo, hi=hi)


def _drawable(value: float) -> float:
    """Return ``value`` within ±``_LIMIT``, where spans and ticks cannot overflow."""
    return min(max(value, -_LIMIT), _LIMIT)


def _nice_step(span: float) -> float:
    """Return a step of 1, 2, 2.5 or 5 times a power of ten giving about ``_Y_TICKS`` ticks."""
    raw = span / _Y_TICKS
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _nice_bounds(lo: float, hi: float) -> tuple[float, float]:
    step = _nice_step(hi - lo)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step


def _grid(frame: _Frame) -> list[str]:
    step = _nice_step(frame.hi - frame.lo)
    parts = [
        f'<rect x="{frame.left:.1f}" y="{frame.top:.1f}" width="{frame.right - frame.left:.1f}" '
        f'height="{frame.bottom - frame.top:.1f}" fill="none" stroke="{_GRID}"/>'
    ]
    count = round((frame.hi - frame.lo) / step)
    for index in range(count + 1):
        value = frame.lo + index * step
        y = frame.y(value)
        parts.append(
            f'<line x1="{frame.left:.1f}" x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        parts.append(_text(frame.left - 6, y + 4, _tick_label(value), anchor="end"))
    return parts


def _tick_label(value: float) -> str:
    # Rounding hides float noise such as 0.30000000000000004 from repeated addition.
    return format_value(round(value, 9) + 0.0)


def _threshold(frame: _Frame, max_value: float) -> list[str]:
    y = frame.y(max_value)
    label = f"max {format_value(max_value)}"
    return [
        # Shade the failing zone so a breach reads at a glance, even without colour vision.
        f'<rect class="chart-breach-zone" x="{frame.left:.1f}" y="{frame.top:.1f}" '
        f'width="{frame.right - frame.left:.1f}" height="{max(y - frame.top, 0):.1f}" '
        f'fill="{_BREACH}" fill-opacity="0.06"/>',
        f'<line class="chart-max" data-max-value="{escape(format_value(max_value))}" '
        f'x1="{frame.left:.1f}" x2="{frame.right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
        f'stroke="{_BREACH}" stroke-width="1.5" stroke-dasharray="6 4"/>',
        # On the left: pauses, drawn at the newest evaluations, are usually on the right.
        _text(frame.left + 4, y - 5, label, fill=_BREACH, css="chart-max-label"),
    ]


def _breach(point: ChartPoint, max_value: float | None) -> bool:
    """Return whether ``point`` was above the bound it was judged against."""
    bound = point.limit if point.limit is not None else max_value
    return point.value is not None and bound is not None and point.value > bound


def _baseline(frame: _Frame, points: Sequence[ChartPoint]) -> list[str]:
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
    shown = format_value(last.baseline)
    parts = [
        f'<g class="chart-baseline" data-baseline="{escape(shown)}">'
        f"<title>Baseline, last {escape(shown)} at {_clock(last.at)} UTC</title>"
    ]
    for coordinates in segments:
        if len(coordinates) == 1:
            # One evaluation alone: a short tick, so a lone baseline is still visible.
            x, y = (float(c) for c in coordinates[0].split(","))
            coordinates = [f"{x - 6:.1f},{y:.1f}", f"{x + 6:.1f},{y:.1f}"]
        parts.append(
            f'<polyline points="{" ".join(coordinates)}" fill="none" stroke="{_BASELINE}" '
            f'stroke-width="1.5" stroke-dasharray="2 3"/>'
        )
    parts.append(
        _text(
            frame.right - 4,
            frame.y(last.baseline) + 14,
            f"baseline {shown}",
            anchor="end",
            fill=_BASELINE,
            css="chart-baseline-label",
        )
    )
    parts.append("</g>")
    return parts


def _rollout(frame: _Frame, started_at: datetime | None) -> list[str]:
    """Mark when the target's current rollout began, if that is within the chart."""
    if started_at is None or not frame.t0 <= started_at.timestamp() <= frame.t1:
        return []
    x = frame.x(started_at)
    label_x, anchor = (x - 4, "end") if x > (frame.left + frame.right) / 2 else (x + 4, "start")
    return [
        f'<g class="chart-rollout" data-started-at="{_clock(started_at)}">'
        f"<title>Rollout detected at {_clock(started_at)} UTC</title>"
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:.1f}" y2="{frame.bottom:.1f}" '
        f'stroke="{_ROLLOUT}" stroke-width="1.5"/>'
        + _text(label_x, frame.bottom - 5, "rollout", anchor=anchor, fill=_ROLLOUT, weight="600")
        + "</g>"
    ]


def _pauses(frame: _Frame, points: Sequence[ChartPoint]) -> list[str]:
    parts: list[str] = []
    for point in points:
        if not point.paused:
            continue
        x = frame.x(point.at)
        parts.append(
            f'<g class="chart-pause"><title>Rollout paused at {_clock(point.at)} UTC</title>'
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:.1f}" y2="{frame.bottom:.1f}" '
            f'stroke="{_PAUSE}" stroke-width="2" stroke-dasharray="3 3"/>'
            f"{_pause_label(frame, x)}</g>"
        )
    return parts


def _pause_label(frame: _Frame, x: float) -> str:
    # Written on the side of the line that has room, so the newest pause stays readable.
    if x > (frame.left + frame.right) / 2:
        return _text(x - 4, frame.top + 11, "paused", anchor="end", fill=_PAUSE, weight="600")
    return _text(x + 4, frame.top + 11, "paused", fill=_PAUSE, weight="600")


def _series(frame: _Frame, points: Sequence[ChartPoint], max_value: float | None) -> list[str]:
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
            f'stroke="{_VALUE}" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>'
        )
    dots = len(points) <= _MAX_DOTS
    for point in points:
        x = frame.x(point.at)
        if point.value is None or math.isnan(point.value):
            parts.append(
                f'<g class="chart-no-data"><title>{_clock(point.at)} UTC: no data</title>'
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{frame.bottom - 6:.1f}" '
                f'y2="{frame.bottom:.1f}" stroke="{_NO_DATA}" stroke-width="2"/></g>'
            )
            continue
        breach = _breach(point, max_value)
        if not (dots or breach):
            continue
        shown = format_value(point.value)
        css = "chart-dot chart-breach" if breach else "chart-dot"
        parts.append(
            f'<circle class="{css}" cx="{x:.1f}" cy="{frame.y(point.value):.1f}" '
            f'r="{3.2 if breach else 2.4}" fill="{_BREACH if breach else _VALUE}">'
            f"<title>{_clock(point.at)} UTC: {escape(shown)}</title></circle>"
        )
    return parts


def _time_axis(frame: _Frame, points: Sequence[ChartPoint]) -> list[str]:
    if not points:
        return []
    first, last = points[0].at, points[-1].at
    long_span = (last - first).total_seconds() > 86400
    y = frame.bottom + 18
    if first == last:
        return [_text(frame.x(first), y, _stamp(first, long_span) + " UTC", anchor="middle")]
    middle = first + (last - first) / 2
    return [
        _text(frame.left, y, _stamp(first, long_span), anchor="start"),
        _text(frame.x(middle), y, _stamp(middle, long_span), anchor="middle"),
        _text(frame.right, y, _stamp(last, long_span) + " UTC", anchor="end"),
    ]


def _stamp(moment: datetime, long_span: bool) -> str:
    return moment.astimezone(UTC).strftime("%m-%d %H:%M" if long_span else "%H:%M:%S")


def _clock(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _description(points: Sequence[ChartPoint], max_value: float | None) -> str:
    """Return the graph in words (its <desc>): the last values, gaps, pauses, where the rest is."""
    bound = "" if max_value is None else f" against the maximum {format_value(max_value)}"
    if not points:
        return f"No evaluations yet{bound}."
    measured = [p for p in points if p.value is not None and not math.isnan(p.value)]
    last = [
        f"{format_value(p.value)} at {_clock(p.at)} UTC"
        + (" (above the maximum)" if max_value is not None and p.value > max_value else "")
        for p in measured[-3:]
        if p.value is not None
    ]
    words = [
        f"Value over time from {_clock(points[0].at)} to {_clock(points[-1].at)} UTC{bound}.",
        f"Last values, oldest first: {'; '.join(last)}." if last else "No values measured.",
    ]
    gaps = len(points) - len(measured)
    if gaps:
        words.append(f"{gaps} evaluations without data.")
    pauses = [_clock(p.at) for p in points if p.paused]
    if pauses:
        words.append(f"Rollout paused at {', '.join(pauses)} UTC.")
    words.append("The history table lists every evaluation.")
    return " ".join(words)


def _text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    fill: str = _LABEL,
    css: str = "",
    size: int = 11,
    weight: str = "400",
) -> str:
    css_attribute = f' class="{css}"' if css else ""
    return (
        f'<text{css_attribute} x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" '
        f'font-size="{size}" font-weight="{weight}" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">'
        f"{escape(content)}</text>"
    )
