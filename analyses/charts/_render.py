"""Draw a metric's history as an inline SVG string, on the server.

The admin's analysis page calls ``render_metric_chart`` once per metric with the values of its
newest evaluations, and puts the result straight into the HTML: the graph needs no JavaScript,
no chart library and nothing from outside the app (docs/api.md, the web UI). The function is
pure (rows in, markup out), so its tests parse the SVG instead of looking at pixels.

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
from datetime import datetime
from html import escape

from analyses.charts._compare import comparison_lines
from analyses.charts._layers import (
    draw_baseline,
    draw_grid,
    draw_note,
    draw_pauses,
    draw_rollout,
    draw_series,
    draw_threshold,
    draw_time_axis,
)
from analyses.charts._scale import ChartPoint, frame_for, is_breach
from analyses.charts._svg import clock, readable


def render_metric_chart(
    points: Sequence[ChartPoint],
    *,
    max_value: float | None,
    title: str,
    rollout_at: datetime | None = None,
    width: int = 720,
    height: int = 220,
    evidence: bool = False,
) -> str:
    """Return an ``<svg>`` element drawing ``points`` (any order) against ``max_value``.

    ``title`` names the metric for screen readers and tooltips. Infinite values are drawn at the
    edge of the plot; with no points the frame and the ``maxValue`` line are still drawn, with a
    note that nothing was evaluated yet. ``max_value`` is None for a metric judged only against
    its baseline; ``rollout_at`` is marked when it falls within the evaluations drawn. With
    ``evidence`` (a sequential metric) the values are its evidence on a log scale and
    ``max_value`` the evidence needed.
    """
    ordered = sorted(points, key=lambda point: point.at)
    frame = frame_for(ordered, max_value, float(width), float(height), log=evidence)
    breaches = sum(1 for p in ordered if is_breach(p, max_value))
    limit = "the evidence needed" if evidence else "the maximum"
    bound = f"{limit} {readable(max_value)}" if max_value is not None else "their limit"
    summary = f"{title}: {len(ordered)} evaluations, {breaches} above {bound}"
    # What a screen reader announces: <title> names the graph, <desc> gives the last values
    # (the page's history table lists every evaluation as text).
    ids = f"chart-{re.sub(r'[^A-Za-z0-9_-]+', '-', title)}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="metric-chart" '
        f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'role="img" aria-labelledby="{ids}-title {ids}-desc" data-points="{len(ordered)}">',
        f'<title id="{ids}-title">Graph of {escape(summary)}</title>',
        f'<desc id="{ids}-desc">{escape(_description(ordered, max_value, evidence))}</desc>',
        *draw_grid(frame),
        *(
            draw_threshold(frame, max_value, "needed" if evidence else "max")
            if max_value is not None
            else []
        ),
        *draw_baseline(frame, ordered),
        *comparison_lines(ordered, x=frame.x, y=frame.y, legend_at=(frame.left + 8, frame.top)),
        *draw_rollout(frame, rollout_at),
        *draw_pauses(frame, ordered),
        *draw_series(frame, ordered, max_value),
        *draw_time_axis(frame, ordered),
    ]
    if not ordered:
        parts.extend(draw_note(frame, "No evaluations yet"))
    parts.append("</svg>")
    return "".join(parts)


def _description(points: Sequence[ChartPoint], max_value: float | None, evidence: bool) -> str:
    """Return the graph in words (its <desc>): the last values, gaps, pauses, where the rest is."""
    limit = "the evidence needed" if evidence else "the maximum"
    bound = "" if max_value is None else f" against {limit} {readable(max_value)}"
    if not points:
        return f"No evaluations yet{bound}."
    measured = [p for p in points if p.value is not None and not math.isnan(p.value)]
    last = [
        f"{readable(p.value)} at {clock(p.at)} UTC"
        + (" (above the maximum)" if max_value is not None and p.value > max_value else "")
        for p in measured[-3:]
        if p.value is not None
    ]
    words = [
        f"{'Evidence' if evidence else 'Value'} over time from {clock(points[0].at)} "
        f"to {clock(points[-1].at)} UTC{bound}.",
        f"Last values, oldest first: {'; '.join(last)}." if last else "No values measured.",
    ]
    gaps = len(points) - len(measured)
    if gaps:
        words.append(f"{gaps} evaluations without data.")
    pauses = [clock(p.at) for p in points if p.paused]
    if pauses:
        words.append(f"Rollout paused at {', '.join(pauses)} UTC.")
    words.append("The history table lists every evaluation.")
    return " ".join(words)
