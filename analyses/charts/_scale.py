"""Shape a chart's data: the points it draws and where on the plot each value and moment falls.

``_render.render_metric_chart`` builds one ``Frame`` per chart with ``frame_for``; the drawing
layers (``_layers``) place everything through it. Pure arithmetic, no markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

# Room around the plot for the tick labels (left, bottom) and the max label (top).
_LEFT, _RIGHT, _TOP, _BOTTOM = 58.0, 18.0, 18.0, 30.0
# Headroom above the highest of data and maxValue, so the line never touches the frame.
_HEADROOM = 1.15
_Y_TICKS = 4
# Finite values beyond ±_LIMIT (up to ±1.8e308) would overflow the span to infinity; they are
# drawn at the edge like infinite ones. Spans under _MIN_SPAN underflow the tick step to 0.
_LIMIT = 1e300
_MIN_SPAN = 1e-290


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
    # With compare (docs/resource.md): the new and the old pods' medians (None: no comparison).
    new_median: float | None = None
    old_median: float | None = None
    # With sequential (docs/analysis.md): the new and the old pods' bad events per event over
    # the steps this evaluation counted (None: no step counted, or no events on that side).
    new_rate: float | None = None
    old_rate: float | None = None
    # With sequential: the anytime-valid bounds of the new pods' rate over the old pods' after
    # this evaluation (None: that side not bounded yet), drawn as a band.
    ratio_lower: float | None = None
    ratio_upper: float | None = None


@dataclass(frozen=True)
class Frame:
    """Maps data coordinates onto the plot area."""

    width: float
    height: float
    t0: float
    t1: float
    lo: float
    hi: float
    # A log scale (a sequential metric's evidence, docs/analysis.md): lo and hi are powers of
    # ten's exponents, and values are placed by their logarithm.
    log: bool = False

    def x(self, moment: datetime) -> float:
        span = self.t1 - self.t0
        fraction = 0.5 if span <= 0 else (moment.timestamp() - self.t0) / span
        return _LEFT + fraction * (self.width - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        if self.log:
            value = math.log10(value) if value > 0 else self.lo
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


def frame_for(
    points: Sequence[ChartPoint],
    max_value: float | None,
    width: float,
    height: float,
    *,
    log: bool = False,
) -> Frame:
    """Return the frame fitting every drawn value and ``max_value``, on round tick bounds.

    With ``log`` the bounds are whole powers of ten around the positive values and 1.
    """
    if log:
        return _log_frame(points, max_value, width, height)
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
    return Frame(width=width, height=height, t0=t0, t1=t1, lo=lo, hi=hi)


def _log_frame(
    points: Sequence[ChartPoint], max_value: float | None, width: float, height: float
) -> Frame:
    positive = [
        math.log10(_drawable(v))
        for v in (*(p.value for p in points), max_value)
        if v is not None and v > 0 and math.isfinite(v)
    ]
    lo = math.floor(min([0.0, *positive]))
    hi = math.ceil(max([0.0, *positive]) + math.log10(_HEADROOM))
    stamps = [p.at.timestamp() for p in points]
    t0, t1 = (min(stamps), max(stamps)) if stamps else (0.0, 0.0)
    return Frame(width=width, height=height, t0=t0, t1=t1, lo=lo, hi=max(hi, lo + 1), log=True)


def _drawable(value: float) -> float:
    """Return ``value`` within ±``_LIMIT``, where spans and ticks cannot overflow."""
    return min(max(value, -_LIMIT), _LIMIT)


def nice_step(span: float) -> float:
    """Return a step of 1, 2, 2.5 or 5 times a power of ten giving about ``_Y_TICKS`` ticks."""
    raw = span / _Y_TICKS
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _nice_bounds(lo: float, hi: float) -> tuple[float, float]:
    step = nice_step(hi - lo)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step


def is_breach(point: ChartPoint, max_value: float | None) -> bool:
    """Return whether ``point`` was above the bound it was judged against."""
    bound = point.limit if point.limit is not None else max_value
    return point.value is not None and bound is not None and point.value > bound
