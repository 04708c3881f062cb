"""Compose the message of one delivery: title, body with the link, and the PNG.

Read from the database at send time (``tasks.deliver_task``): the hour of history before now,
drawn by ``render.chart_png``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime

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
    since = now - render.WINDOW
    evaluations = Evaluation.objects.filter(analysis=analysis, started_at__gte=since)
    pauses = list(evaluations.filter(paused=True).values_list("started_at", flat=True))
    rows = (
        MetricResult.objects.filter(evaluation__in=evaluations)
        .order_by("evaluation__started_at", "id")
        .values_list("name", "evaluation__started_at", "value", "max_value", "limit")
    )
    # The baseline (docs/resource.md, maxIncrease) where the history rows have one.
    baselines: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for name, at, base in (
        MetricResult.objects.filter(evaluation__in=evaluations, baseline__isnull=False)
        .order_by("evaluation__started_at", "id")
        .values_list("name", "evaluation__started_at", "baseline")
    ):
        baselines[name].append((at, base))
    metrics = [m for m in (analysis.spec or {}).get("metrics", []) if isinstance(m, dict)]
    # Sequential metrics (docs/analysis.md): the value is the evidence, the limit the needed.
    sequential = {m.get("name") for m in metrics if m.get("sequential") is not None}
    points: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    maxima: dict[str, float | None] = {}
    for name, at, value, max_value, limit in rows:
        points[name].append((at, value))
        maxima[name] = limit if name in sequential else max_value
    order = [m.get("name") for m in metrics]
    names = [n for n in order if n in points] + sorted(set(points) - set(order))
    series = [
        render.Series(
            name,
            maxima[name],
            points[name],
            tuple(b for b in baselines.get(name, ()) if b[1] is not None),
            evidence=name in sequential,
        )
        for name in names
    ]
    title = f"{analysis.namespace}/{analysis.name}: the last hour"
    return render.chart_png(title, series, pauses, now)
