"""Draw the PNG a message carries: every metric of the analysis over the last hour.

``tasks.deliver_task`` calls ``chart_png`` when it sends, so the picture shows the history up to
that moment. It tells the same story as the UI's SVG (``analyses.charts``), in its colours: the
value in blue, the ``maxValue`` line dashed red with the zone above it shaded, the baseline
(when the history rows have one) dashed violet, and every evaluation that paused the rollout as
a dashed amber line. One panel per metric, 800 px wide, about 400 px for one metric: readable
in a chat window without opening it. A sequential metric gets a second panel under its
evidence: both sides' bad-event rates in percent (``Series.sides``), the new pods solid orange
and the old pods dashed slate, as in the UI; and a third: the anytime-valid bounds of the new
pods' rate over the old pods' as a blue band (``Series.band``) against the margin, dashed red.

The y axis always starts at 0 (or below the lowest value) and ends ``HEADROOM`` above the
highest of data and ``maxValue``, and the panels sit at fixed fractions of the figure
(``panel_box``), so a test can say where a value must be drawn.

``chart_png`` draws in a child forked for the one picture: matplotlib keeps what a drawing allocates
(font and text-layout caches, freed arenas the allocator does not return), and in a long-lived
django-q2 worker that memory grows with the messages sent, past the budget of
docs/operations.md#memory (found by the soak, docs/reliability.md; the figures are in
docs/performance.md). The child's memory is returned when it exits.
"""

from __future__ import annotations

import io
import math
import os
import select
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import matplotlib

# No display in a worker; Figure is used without pyplot, so no global state either.
matplotlib.use("Agg")

import matplotlib.dates as mdates
import matplotlib.ticker as ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# analyses/charts.py's palette.
VALUE = "#2563eb"
MAX_VALUE = "#dc2626"
PAUSE = "#d97706"
BASELINE = "#7c3aed"
# analyses/charts/_compare.py's two sides.
NEW = "#c2410c"
OLD = "#475569"
GRID = "#e5e7eb"
LABEL = "#6b7280"

WIDTH_PX = 800
# Per metric: its title line, the plot, the time labels below it.
PANEL_PX = 350
PANEL_TITLE_PX, PANEL_LABELS_PX = 28, 40
TITLE_PX = 40  # the figure's title
MARGIN_PX = TITLE_PX + 8
DPI = 100
HEADROOM = 1.15
# A band panel's room above and below its ratios, on its log scale.
RATIO_ROOM = 1.25
# Left and right edges of every panel, as fractions of the width.
LEFT, RIGHT = 0.09, 0.96
WINDOW = timedelta(hours=1)
# A drawing takes well under a second; a child still running after this is stuck (a lock
# copied held from another thread of the parent), and the message goes without its picture.
DRAW_TIMEOUT = 30.0


class DrawError(RuntimeError):
    """The child drawing the picture failed, died or took longer than ``DRAW_TIMEOUT``."""


@dataclass(frozen=True)
class Series:
    """One metric's samples, oldest first; a value of None is an evaluation without data."""

    name: str
    # None for a metric judged only against its baseline (maxIncrease, docs/resource.md).
    max_value: float | None
    points: Sequence[tuple[datetime, float | None]]
    # The baseline per sample, when the analysis compares with one (docs/resource.md).
    baseline: Sequence[tuple[datetime, float | None]] = field(default_factory=tuple)
    # A sequential metric (docs/analysis.md): the values are its evidence, drawn on a log
    # scale, and max_value is the evidence needed.
    evidence: bool = False
    # A sequential metric's rates panel: per sample the new and the old pods' bad events in %
    # of their events over the steps counted (None: none counted); ``points`` is then empty.
    sides: Sequence[tuple[datetime, float | None, float | None]] = field(default_factory=tuple)
    # A sequential metric's band panel: per sample the anytime-valid bounds of the new pods'
    # rate over the old pods' (None: that side not bounded yet), against ``margin`` (1 +
    # maxIncrease); ``points`` is then empty.
    band: Sequence[tuple[datetime, float | None, float | None]] = field(default_factory=tuple)
    margin: float | None = None


def y_limits(series: Series) -> tuple[float, float]:
    """Return the y axis of a panel: from 0 (or the lowest value) to HEADROOM above the top.

    For evidence: whole powers of ten around the positive values, the needed line and 1. For a
    band: ``RATIO_ROOM`` around the bounds, the margin and 1 (a log scale).
    """
    if series.margin is not None:
        ratios = [1.0, series.margin]
        ratios += [v for _, *pair in series.band for v in pair if _finite(v) and (v or 0) > 0]
        return min(ratios) / RATIO_ROOM, max(ratios) * RATIO_ROOM
    if series.evidence:
        logs = [
            math.log10(v)
            for v in (*(v for _, v in series.points), series.max_value)
            if v is not None and _finite(v) and v > 0
        ]
        low = math.floor(min([0.0, *logs]))
        high = math.ceil(max([0.0, *logs]) + math.log10(HEADROOM))
        return 10.0**low, 10.0 ** max(high, low + 1)
    values = [v for _, v in (*series.points, *series.baseline) if _finite(v)]
    values += [v for _, *pair in series.sides for v in pair if v is not None and _finite(v)]
    if series.max_value is not None:
        values.append(series.max_value)
    top = max(values, default=1.0)
    bottom = min([0.0, *values])
    top = top * HEADROOM if top > 0 else top + 1.0
    return bottom, top if top > bottom else bottom + 1.0


def panel_box(index: int, count: int) -> tuple[float, float]:
    """Return the bottom and top of panel ``index`` (0 = top) as fractions of the height."""
    height = MARGIN_PX + PANEL_PX * count
    top = 1 - (TITLE_PX + PANEL_PX * index + PANEL_TITLE_PX) / height
    bottom = top - (PANEL_PX - PANEL_TITLE_PX - PANEL_LABELS_PX) / height
    return bottom, top


def size_px(count: int) -> tuple[int, int]:
    return WIDTH_PX, MARGIN_PX + PANEL_PX * count


def chart_png(
    title: str, series: Sequence[Series], pauses: Sequence[datetime], now: datetime
) -> bytes:
    """Return the PNG of ``series`` over the hour before ``now``, pauses marked.

    Drawn in a forked child, so this process keeps none of matplotlib's memory; raises
    ``DrawError`` when the child fails.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw, write, exit without running the parent's cleanup
        try:
            os.close(read_end)
            try:
                out = draw_png(title, series, pauses, now)
            except Exception as exc:
                # A PNG starts with 0x89: a leading NUL says the rest is the reason.
                out = b"\0" + f"{type(exc).__name__}: {exc}".encode()
            view = memoryview(out)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        out = _read_all(read_end, pid)
    finally:
        os.close(read_end)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if out.startswith(b"\0"):
        raise DrawError(f"cannot draw the chart: {out[1:].decode(errors='replace')}")
    if code != 0 or not out:
        raise DrawError(f"the process drawing the chart ended with exit code {code}")
    return out


def _read_all(fd: int, pid: int) -> bytes:
    deadline = time.monotonic() + DRAW_TIMEOUT
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise DrawError(f"drawing the chart took longer than {DRAW_TIMEOUT:g} s")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def draw_png(
    title: str, series: Sequence[Series], pauses: Sequence[datetime], now: datetime
) -> bytes:
    """Return the PNG of ``chart_png``, drawn in this process."""
    count = max(1, len(series))
    width, height = size_px(count)
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, facecolor="white")
    fig.suptitle(title, x=LEFT, ha="left", y=1 - 10 / height, fontsize=12, fontweight="bold")
    # The last hour, or less when the history is younger: a few minutes of samples squeezed
    # into the right edge of an hour would be unreadable.
    firsts = [at for one in series for at, *_ in (*one.points[:1], *one.sides[:1])]
    start = max(
        now - WINDOW, min(firsts, default=now - WINDOW) - (now - min(firsts, default=now)) * 0.05
    )
    for index, one in enumerate(series):
        bottom, top = panel_box(index, count)
        ax = fig.add_axes((LEFT, bottom, RIGHT - LEFT, top - bottom))
        _panel(ax, one, [p for p in pauses if start <= p <= now], start, now)
    if not series:
        fig.text(0.5, 0.5, "no metrics recorded in the last hour", ha="center", color=LABEL)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def _panel(
    ax: Axes, one: Series, pauses: Sequence[datetime], start: datetime, end: datetime
) -> None:
    low, high = y_limits(one)
    ax.set_xlim(start, end)
    if one.evidence or one.margin is not None:
        ax.set_yscale("log")
    ax.set_ylim(low, high)
    ax.set_facecolor("white")
    ax.grid(True, axis="y", color=GRID, linewidth=1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(colors=LABEL, labelsize=9)
    # Minutes for an hour of history, seconds for the few minutes of a young one.
    short = (end - start).total_seconds() < 600
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S" if short else "%H:%M"))
    ax.set_title(one.name, loc="left", fontsize=10, color="#111827")
    if one.max_value is not None:
        # The failing zone shaded and the line itself, as in the UI.
        ax.axhspan(one.max_value, high, color=MAX_VALUE, alpha=0.06, linewidth=0)
        ax.axhline(one.max_value, color=MAX_VALUE, linewidth=2, linestyle=(0, (6, 4)))
        ax.text(
            0.005,
            one.max_value,
            f" {'needed' if one.evidence else 'max'} {one.max_value:g}",
            color=MAX_VALUE,
            fontsize=9,
            va="bottom",
            transform=ax.get_yaxis_transform(),
        )
    for at in pauses:
        ax.axvline(at, color=PAUSE, linewidth=2, linestyle=(0, (3, 3)))
        ax.text(
            at, high, "paused ", color=PAUSE, fontsize=9, fontweight="bold", ha="right", va="top"
        )
    if one.baseline:
        _line(ax, one.baseline, BASELINE, style=(0, (2, 2)), label="baseline")
    if one.margin is not None:
        _band(ax, one, low, high)
    elif one.sides:
        _line(ax, [(at, new) for at, new, _ in one.sides], NEW, style="solid", label="new pods")
        old = [(at, old) for at, _, old in one.sides]
        _line(ax, old, OLD, style=(0, (6, 4)), label="old pods")
    else:
        _line(ax, one.points, VALUE, style="solid", label="value")
    # On the panel's title line, right: inside the plot it would hide the newest samples.
    ax.legend(
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncol=3 if one.margin is not None else 2,
        fontsize=8,
        frameon=False,
        borderaxespad=0.2,
    )


def _band(ax: Axes, one: Series, low: float, high: float) -> None:
    """Draw the ratio's bounds as a shaded band, the margin and the line of equal rates.

    A side not bounded yet runs to the panel's edge; a sample with neither side leaves a gap.
    """
    margin = one.margin if one.margin is not None else 1.0
    ax.axhline(1.0, color=LABEL, linewidth=1.2, linestyle=(0, (2, 3)), label="same rate")
    ax.axhline(
        margin, color=MAX_VALUE, linewidth=2, linestyle=(0, (6, 4)), label=f"margin {margin:.6g}"
    )
    # Halving and doubling as plain numbers (0.5, 1, 2), not matplotlib's powers of ten.
    powers = range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)
    ax.yaxis.set_major_locator(ticker.FixedLocator([2.0**p for p in powers]))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:.6g}"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    xs = [at for at, _, _ in one.band]
    lows = [low if lower is None else lower for _, lower, _ in one.band]
    highs = [high if upper is None else upper for _, _, upper in one.band]
    bounded = [lower is not None or upper is not None for _, lower, upper in one.band]
    if any(bounded):
        ax.fill_between(
            xs, lows, highs, where=bounded, color=VALUE, alpha=0.18, linewidth=0, label="bounds"
        )
        edges = [(at, lo if b else math.nan) for at, lo, b in zip(xs, lows, bounded, strict=True)]
        _line(ax, edges, VALUE, style="solid", label="_lower")
        tops = [(at, hi if b else math.nan) for at, hi, b in zip(xs, highs, bounded, strict=True)]
        _line(ax, tops, VALUE, style="solid", label="_upper")


def _line(
    ax: Axes,
    points: Sequence[tuple[datetime, float | None]],
    colour: str,
    *,
    style: Any,
    label: str,
) -> None:
    # A sample without data breaks the line rather than bridging the gap.
    xs = [at for at, _ in points]
    ys = [v if _finite(v) else math.nan for _, v in points]
    ax.plot(
        xs, ys, color=colour, linewidth=2.2, linestyle=style, label=label, marker="o", markersize=3
    )


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
