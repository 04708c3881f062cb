"""Draw a sequential metric's two bad-event rates over time: the graph under its evidence.

The admin's analysis page calls ``render_rates_chart`` for a sequential metric with the same
points as its evidence graph, so both share the time axis. Each point's ``new_rate`` and
``old_rate`` are the bad events per event of the steps that evaluation counted
(docs/analysis.md#sequential-judgment-a-false-pause-budget-per-rollout), drawn in percent on a
linear scale: the new pods solid orange, the old pods dashed slate, as ``compare``'s medians.
Pure: points in, markup out; every text is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from html import escape

from analyses.charts._compare import Pair, comparison_lines
from analyses.charts._layers import (
    draw_grid,
    draw_note,
    draw_pauses,
    draw_rollout,
    draw_time_axis,
)
from analyses.charts._scale import ChartPoint, frame_for
from analyses.charts._svg import clock, readable


def render_rates_chart(
    points: Sequence[ChartPoint],
    *,
    title: str,
    rollout_at: datetime | None = None,
    width: int = 720,
    height: int = 160,
) -> str:
    """Return an ``<svg>`` element drawing both sides' bad-event rates of ``points`` (any order).

    An evaluation that counted no step, or no events on a side, leaves a gap in that side's line.
    """
    ordered = sorted(points, key=lambda point: point.at)
    # The frame fits the rates in percent; the values the evidence graph draws play no part.
    framed = [
        replace(p, value=None, baseline=None, new_median=new, old_median=old)
        for p in ordered
        for new, old in (_percent(p),)
    ]
    frame = frame_for(framed, None, float(width), float(height))
    ids = f"rates-{re.sub(r'[^A-Za-z0-9_-]+', '-', title)}"
    counted = [p for p in ordered if p.new_rate is not None and p.old_rate is not None]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="metric-chart rates-chart" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'role="img" aria-labelledby="{ids}-title {ids}-desc" data-points="{len(counted)}">',
        f'<title id="{ids}-title">Graph of {escape(title)}: bad events in % of events, '
        f"new pods against old pods</title>",
        f'<desc id="{ids}-desc">{escape(_description(counted))}</desc>',
        *draw_grid(frame),
        *comparison_lines(
            ordered,
            x=frame.x,
            y=frame.y,
            legend_at=(frame.left + 8, frame.top),
            sides=_percent,
            words="bad events",
            unit=" %",
        ),
        *draw_rollout(frame, rollout_at),
        *draw_pauses(frame, ordered),
        *draw_time_axis(frame, ordered),
    ]
    if not counted:
        parts.extend(draw_note(frame, "No steps counted on both sides yet"))
    parts.append("</svg>")
    return "".join(parts)


def _percent(point: ChartPoint) -> Pair:
    return (
        None if point.new_rate is None else point.new_rate * 100,
        None if point.old_rate is None else point.old_rate * 100,
    )


def _description(counted: Sequence[ChartPoint]) -> str:
    """Return the graph in words (its <desc>): the last rates of both sides."""
    if not counted:
        return "No steps counted on both sides yet."
    last = [
        f"{clock(p.at)} UTC: new {readable(new or 0.0)} %, old {readable(old or 0.0)} %"
        for p in counted[-3:]
        for new, old in (_percent(p),)
    ]
    return (
        "Bad events in % of events over the steps each evaluation counted, oldest first: "
        f"{'; '.join(last)}. The history API lists every evaluation's counts."
    )
