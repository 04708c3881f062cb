"""Compose the message of one delivery: title, body with the link, and the PNG.

Read from the database at send time (``tasks.deliver_task``): the hour of history before now,
drawn by ``render.chart_png``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime

from analyses import kinds
from analyses.models import Analysis, Evaluation, MetricResult
from notifications import render
from notifications.channels import Message
from notifications.config import NotifyConfig
from notifications.models import Delivery
from sentinel_core.notify import NotifyEvent

log = logging.getLogger(__name__)

_WARNINGS = {NotifyEvent.PAUSED, NotifyEvent.FAILING, NotifyEvent.METRICS_UNAVAILABLE}


def analysis_url(conf: NotifyConfig, analysis: Analysis) -> str:
    return f"{conf.public_url}/admin/analyses/analysis/{analysis.pk}/change/"


def compose(delivery: Delivery, conf: NotifyConfig, *, now: datetime) -> Message:
    """Return the message of ``delivery``; without the PNG if drawing it failed."""
    analysis = delivery.analysis
    event = NotifyEvent(delivery.event)
    key = f"{delivery.namespace}/{delivery.name}"
    title = f"Rollout Sentinel: {event.value} — {key}"
    body = (
        f"{delivery.message}\n\n"
        f"{event.value} at {delivery.transition_at:%Y-%m-%d %H:%M:%S} UTC. "
        f"Analysis: {analysis_url(conf, analysis)}"
    )
    try:
        png = chart(analysis, now=now)
    except Exception:
        # The words and the link matter more than the picture.
        log.exception("notifications: cannot draw the chart of %s", key)
        png = None
    safe = key.replace("/", "-")
    return Message(title, body, warning=event in _WARNINGS, png=png, png_name=f"{safe}.png")


def chart(analysis: Analysis, *, now: datetime) -> bytes:
    """Return the PNG of the analysis's metrics over the hour before ``now``."""
    series, pauses = series_of(analysis, since=now - render.WINDOW)
    title = f"{analysis.namespace}/{analysis.name}: the last hour"
    return render.chart_png(title, series, pauses, now)


def series_of(analysis: Analysis, *, since: datetime) -> tuple[list[render.Series], list[datetime]]:
    """Return the panels of the picture from the history rows since ``since``, and the pauses.

    A metric whose value is evidence (its kind's view says, ``analyses.kinds``; docs/analysis.md)
    is two panels: its evidence, and under it both sides' bad-event rates in percent over the
    steps each evaluation counted; a metric whose view has a band (the sequential kind) one more,
    the ratio's bounds after each evaluation against its margin.
    """
    evaluations = Evaluation.objects.filter(analysis=analysis, started_at__gte=since)
    pauses = list(evaluations.filter(paused=True).values_list("started_at", flat=True))
    # The history columns the kinds keep of their own, and a band's, which their views' points
    # read.
    columns = [column.name for column in kinds.COLUMNS] + list(kinds.BAND_COLUMNS)
    rows = (
        MetricResult.objects.filter(evaluation__in=evaluations)
        .order_by("evaluation__started_at", "id")
        .values_list("name", "evaluation__started_at", "value", "max_value", "limit", *columns)
    )
    # The baseline (docs/resource.md, maxIncrease) where the history rows have one.
    baselines: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for name, at, base in (
        MetricResult.objects.filter(evaluation__in=evaluations, baseline__isnull=False)
        .order_by("evaluation__started_at", "id")
        .values_list("name", "evaluation__started_at", "baseline")
    ):
        baselines[name].append((at, base))
    metrics = {metric.name: metric for metric in analysis.metrics.all()}
    views = {name: kinds.view_of(metric) for name, metric in metrics.items()}
    banded = {name for name, view in views.items() if view.band is not None}
    evidence = {name for name, view in views.items() if view.evidence}
    points: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    sides: dict[str, list[tuple[datetime, float | None, float | None]]] = defaultdict(list)
    band: dict[str, list[tuple[datetime, float | None, float | None]]] = defaultdict(list)
    maxima: dict[str, float | None] = {}
    for name, at, value, max_value, limit, *own in rows:
        points[name].append((at, value))
        # The value of such a metric is its evidence, its limit the evidence needed.
        maxima[name] = limit if name in evidence else max_value
        if name in evidence or name in banded:
            point = views[name].point(dict(zip(columns, own, strict=True)))
            if name in evidence:
                sides[name].append((at, *_percent(point)))
            if name in banded:
                band[name].append((at, point.get("ratio_lower"), point.get("ratio_upper")))
    order = list(analysis.metrics.values_list("name", flat=True))
    names = [n for n in order if n in points] + sorted(set(points) - set(order))
    series: list[render.Series] = []
    for name in names:
        series.append(
            render.Series(
                name,
                maxima[name],
                points[name],
                tuple(b for b in baselines.get(name, ()) if b[1] is not None),
                evidence=name in evidence,
            )
        )
        if name in evidence:
            label = f"{name}: bad events in % of events, new pods against old pods"
            series.append(render.Series(label, None, (), sides=tuple(sides[name])))
        band_of = views[name].band if name in banded else None
        if band_of is not None:
            margin = band_of(metrics[name])
            label = f"{name}: new / old pods' error rate, bounds"
            series.append(render.Series(label, None, (), band=tuple(band[name]), margin=margin))
    return series, pauses


def _percent(point: dict[str, float | None]) -> tuple[float | None, float | None]:
    new, old = point.get("new_rate"), point.get("old_rate")
    return (None if new is None else new * 100, None if old is None else old * 100)
