"""Turn a decision's notification intents into Delivery rows, before anything is sent.

The reconciler reads ``context_for`` once before it decides; ``sentinel_operator.outcome.record``
calls ``store`` in the transaction that writes the attempt's history row; the web side's resume
reaches ``on_resumed`` through ``analyses.signals.resumed``. Nothing here sends: the pump
(``pump.DeliveryPump``) queues the stored rows for ``tasks.deliver_task``. The unique ``key``
makes storing the same intent twice (a replayed decision, a second operator replica) a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from analyses.models import Analysis, Evaluation
from notifications.config import NotifyConfig
from notifications.models import Delivery
from sentinel_core.conditions import ConditionType, ErrorReason, Reason
from sentinel_core.notify import Intent, NotifyContext
from sentinel_core.status import AnalysisStatus

log = logging.getLogger(__name__)


def config() -> NotifyConfig:
    """Return the process's notification configuration (read at start-up)."""
    return settings.SENTINEL_NOTIFY


def context_for(uid: str, status: AnalysisStatus) -> NotifyContext:
    """Return what the pure core needs besides the statuses: names, threshold, last attempt.

    The previous attempt's time matters only during an outage (``status``, the previous
    status, says Ready=False/MetricsUnavailable); otherwise it is not looked up.
    """
    conf = config()
    previous = None
    ready = status.condition(ConditionType.READY)
    in_outage = ready is not None and ready.reason == Reason.METRICS_UNAVAILABLE
    if in_outage:
        # The newest history row whose decision was written: an attempt the Kubernetes API cut
        # short (ErrorReason) wrote no status and sent nothing, so it neither crossed the
        # outage threshold for MetricsUnavailable nor announced it for Recovered (found by the
        # soak, docs/reliability.md). Served by the evaluation_newest index.
        previous = (
            Evaluation.objects.filter(analysis__uid=uid)
            .exclude(error_reason__in=[reason.value for reason in ErrorReason])
            .order_by("-started_at", "-id")
            .values_list("started_at", flat=True)
            .first()
        )
    return NotifyContext(
        channels=conf.names,
        outage_after_seconds=conf.outage_after_seconds,
        previous_attempt=previous,
    )


def delivery_key(uid: str, intent: Intent, channel: str) -> str:
    return f"{uid}/{intent.key}/{channel}"


def store(
    row: Analysis,
    uid: str,
    named: Sequence[str],
    intents: Sequence[Intent],
    *,
    now: datetime,
) -> int:
    """Store one Delivery per intent and routed channel; return how many were new."""
    conf = config()
    rows = [
        Delivery(
            key=delivery_key(uid, intent, channel.name),
            analysis=row,
            namespace=row.namespace,
            name=row.name,
            channel=channel.name,
            event=intent.event.value,
            message=intent.message,
            transition_at=intent.at,
            created_at=now,
            next_attempt_at=now,
        )
        for intent in intents
        for channel in conf.route(intent.event, named)
    ]
    if not rows:
        return 0
    keys = [r.key for r in rows]
    before = set(Delivery.objects.filter(key__in=keys).values_list("key", flat=True))
    # ignore_conflicts: a concurrent replica storing the same key between the two queries.
    Delivery.objects.bulk_create([r for r in rows if r.key not in before], ignore_conflicts=True)
    new = len(set(keys) - before)
    if new:
        log.info(
            "notifications: %d message(s) for %s/%s queued: %s",
            new,
            row.namespace,
            row.name,
            ", ".join(sorted({i.event.value for i in intents})),
        )
    return new


def on_resumed(
    sender: object,
    *,
    analysis: Analysis,
    uid: str,
    notifications: Sequence[Intent],
    **_: Any,
) -> None:
    """Store the deliveries of a resume from the UI or the REST API."""
    spec = analysis.spec if isinstance(analysis.spec, dict) else {}
    named = spec.get("notify") or []
    try:
        store(analysis, uid, [str(n) for n in named], notifications, now=timezone.now())
    except Exception:
        # A message must never undo or fail a resume that already happened.
        log.exception("notifications: cannot store the Resumed message of %s", analysis)


def prune(before: datetime) -> int:
    """Delete deliveries created before ``before`` (with their tries); return how many."""
    _, by_model = Delivery.objects.filter(created_at__lt=before).delete()
    return int(by_model.get(Delivery._meta.label, 0))
