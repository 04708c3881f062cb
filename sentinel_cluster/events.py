"""Record the decision's events as core/v1 Events on the RolloutAnalysis (docs/status.md).

The reconciler calls ``record_events`` after the status write; ``decide`` emits events on
transitions only, so this module never has to deduplicate. Events are advisory: a failure to
record one is logged and never undoes or repeats the reconcile.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube
from sentinel_core.decision import Event
from sentinel_core.values import format_time

log = logging.getLogger(__name__)

COMPONENT = "rollout-sentinel"


def event_body(
    analysis: Mapping[str, Any], event: Event, *, now: datetime, instance: str = ""
) -> dict[str, Any]:
    """Return the core/v1 Event object for ``event`` about ``analysis``."""
    meta = analysis.get("metadata") or {}
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        # The API server completes the name, as client-go's recorder does it.
        "metadata": {"generateName": f"{meta.get('name')}.", "namespace": meta.get("namespace")},
        "involvedObject": {
            "apiVersion": analysis.get("apiVersion") or f"{kube.GROUP}/{kube.VERSION}",
            "kind": analysis.get("kind") or "RolloutAnalysis",
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": str(event.type),
        "reason": str(event.reason),
        "message": event.message,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance or COMPONENT,
    }


def record_events(
    client: kube.KubeClient,
    analysis: Mapping[str, Any],
    events: Iterable[Event],
    *,
    now: datetime,
    instance: str = "",
) -> int:
    """Create one Event per entry of ``events``; return how many the API server accepted."""
    namespace = str((analysis.get("metadata") or {}).get("namespace") or "")
    created = 0
    for event in events:
        body = event_body(analysis, event, now=now, instance=instance)
        try:
            client.request("POST", kube.events_path(namespace), body=body)
        except kube.KubeError as exc:
            log.warning("cannot record event %s on %s: %s", event.reason, namespace, exc)
            continue
        created += 1
    return created
