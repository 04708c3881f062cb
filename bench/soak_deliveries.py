"""Invariant 5: exactly one notification per transition, across failovers (docs/notifications.md).

Reads ``History.notifications`` (the delivery tables) and ``History.received`` (what the
webhook receiver got). Registered by ``bench.soak_invariants`` (imported at its end);
definitions in ``docs/reliability.md``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

from bench.soak_invariants import (
    DELIVERY_PATIENCE,
    RECEIVER_KINDS,
    Finding,
    invariant,
)
from bench.soak_plan import (
    NOTIFY_ATTEMPTS,
    NOTIFY_TIMEOUT,
    FaultKind,
)
from bench.soak_record import FaultRecord, History

_TITLE = re.compile(r"Rollout Sentinel: (\w+) — [^/]+/(\S+)")
_WHEN = re.compile(r"(\w+) at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\. Analysis:")
_KILLS = (FaultKind.LEADER_SIGKILL.value, FaultKind.WORKER_KILL.value)


def _arrival_key(title: str, message: str) -> tuple[str, str, str] | None:
    """Return (event, analysis name, transition time) of a message, as notifications compose it."""
    head = _TITLE.search(title)
    when = _WHEN.findall(message)
    if head is None or not when:
        return None
    return head.group(1), head.group(2), when[-1][1]


def _row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    at = row["transition_at"]
    if isinstance(at, datetime):
        at = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(row["event"]), str(row["name"]), str(at)


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else 0.0


def _receiver_down(history: History) -> list[FaultRecord]:
    return [f for f in history.faults if f.kind in RECEIVER_KINDS and not f.skipped]


def _during(at: float, faults: list[FaultRecord], slack: float) -> bool:
    return any(f.started - slack <= at <= f.ended + slack for f in faults)


def _delivery_tables(history: History) -> tuple[list[dict[str, Any]], dict[Any, list[dict]]]:
    rows = history.notifications.get("notifications_delivery", [])
    tries: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for attempt in history.notifications.get("notifications_deliveryattempt", []):
        tries[attempt["delivery_id"]].append(attempt)
    return rows, tries


def notification_figures(history: History) -> dict[str, Any]:
    """Return what the receiver got and what the delivery rows say, for the report."""
    rows, tries = _delivery_tables(history)
    arrivals = Counter(
        _arrival_key(title, message)
        for _, status, title, message in history.received
        if status == 200
    )
    down = _receiver_down(history)
    during = [
        row
        for row in rows
        if any(_during(_epoch(t["started_at"]), down, 1.0) for t in tries[row["id"]])
    ]
    return {
        "received_posts": len(history.received),
        "received_by_status": dict(Counter(status for _, status, _, _ in history.received)),
        "messages_received": sum(arrivals.values()),
        "duplicate_messages": sum(n - 1 for n in arrivals.values() if n > 1),
        "deliveries_by_event": dict(Counter(str(r["event"]) for r in rows)),
        "deliveries_by_state": dict(Counter(str(r["state"]) for r in rows)),
        "tries": sum(len(t) for t in tries.values()),
        "deliveries_tried_while_receiver_down": {
            "sent": sum(1 for r in during if r["state"] == "sent"),
            "failed": sum(1 for r in during if r["state"] == "failed"),
            "pending": sum(1 for r in during if r["state"] == "pending"),
        },
    }


@invariant(5, "exactly one notification per transition, across failovers")
def one_notification_per_transition(history: History, finding: Finding) -> None:
    if "notifications_delivery" not in history.notifications:
        finding.notes.append("no delivery table recorded: notifications not part of this run")
        return
    rows, tries = _delivery_tables(history)
    down = _receiver_down(history)
    arrivals: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for at, status, title, message in history.received:
        if status != 200:
            continue
        key = _arrival_key(title, message)
        if key is None:
            finding.violate(
                f"a message at {at - history.started:.1f} s not from a delivery: {title}"
            )
            continue
        arrivals[key].append(at)
    # Every row: one key, sent exactly once, or failed only because the receiver was down.
    keys = Counter(str(r["key"]) for r in rows)
    for key, count in keys.items():
        if count > 1:
            finding.violate(f"delivery key {key} stored {count} times")
    by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_key[_row_key(row)].append(row)
    unjudged = 0
    for row in rows:
        finding.checked += 1
        key = _row_key(row)
        got = arrivals.get(key, [])
        label = f"{row['event']} of {row['name']} ({key[2]})"
        oks = sum(1 for t in tries[row["id"]] if t["ok"])
        if row["state"] == "sent":
            if not got:
                finding.violate(f"{label}: recorded sent, never arrived")
            elif len(got) > 1:
                # The documented at-least-once window: a worker killed after the receiver
                # accepted and before the row was marked sent (docs/notifications.md).
                killed = any(
                    f.kind in _KILLS and f.started <= max(got) and f.ended + 20.0 >= min(got)
                    for f in history.faults
                )
                text = f"{label}: arrived {len(got)} times"
                if killed:
                    finding.notes.append(f"{text}, a worker or leader killed between the two")
                else:
                    finding.violate(text)
            if oks != 1:
                finding.violate(f"{label}: sent with {oks} successful tries recorded")
        elif row["state"] == "failed":
            if got:
                finding.violate(f"{label}: recorded failed, but arrived {len(got)} times")
            if int(row["attempts"]) < NOTIFY_ATTEMPTS:
                finding.violate(f"{label}: failed after {row['attempts']} tries")
            for attempt in tries[row["id"]]:
                at = _epoch(attempt["started_at"])
                if not attempt["ok"] and not _during(at, down, NOTIFY_TIMEOUT + 1.0):
                    finding.violate(
                        f"{label}: a try failed at {at - history.started:.1f} s while the "
                        f"receiver was up ({str(attempt['error'])[:120]})"
                    )
        elif _epoch(row["created_at"]) < history.ended - DELIVERY_PATIENCE:
            finding.violate(f"{label}: still {row['state']} at the end, {row['attempts']} tries")
        else:
            unjudged += 1
    for key, got in arrivals.items():
        if key not in by_key:
            finding.violate(f"{key[0]} of {key[1]} ({key[2]}) arrived {len(got)} times, no row")
    # Every decided pause has its one Paused row, and every Paused row a decided pause.
    mirror = {row.id: row for row in history.mirror}
    paused_rows: dict[Any, list[float]] = defaultdict(list)
    for row in rows:
        if row["event"] == "Paused":
            paused_rows[row["analysis_id"]].append(_epoch(row["transition_at"]))
    for attempt in history.attempts:
        if not attempt.paused:
            continue
        finding.checked += 1
        found = [
            t
            for t in paused_rows.get(attempt.analysis_id, [])
            if attempt.started - 2.0 <= t <= attempt.finished + 2.0
        ]
        name = mirror[attempt.analysis_id].name if attempt.analysis_id in mirror else "?"
        if len(found) != 1:
            finding.violate(
                f"{name}: pause at {attempt.started - history.started:.1f} s has "
                f"{len(found)} Paused deliveries"
            )
    # The converse is a decision at the limit, not necessarily one that patched the target: an
    # analysis re-created while its target is still paused under its name reaches the limit on
    # a target already paused (the history row says paused only for the evaluation that
    # patched), and its RolloutPaused=True is a transition of this new analysis.
    pauses = defaultdict(list)
    for attempt in history.attempts:
        row = mirror.get(attempt.analysis_id)
        limit = row.failure_limit if row is not None else 1
        if attempt.paused or (attempt.outcome == "Fail" and attempt.failures_after >= limit):
            pauses[attempt.analysis_id].append(attempt)
    for analysis_id, times in paused_rows.items():
        for t in times:
            finding.checked += 1
            if not any(a.started - 2.0 <= t <= a.finished + 2.0 for a in pauses[analysis_id]):
                finding.violate(
                    f"a Paused delivery at {t - history.started:.1f} s with no pausing evaluation"
                )
    # Recovered answers a MetricsUnavailable message (docs/notifications.md).
    unavailable: dict[Any, list[float]] = defaultdict(list)
    for row in rows:
        if row["event"] == "MetricsUnavailable":
            unavailable[row["analysis_id"]].append(_epoch(row["transition_at"]))
    for row in rows:
        if row["event"] != "Recovered":
            continue
        finding.checked += 1
        at = _epoch(row["transition_at"])
        if not any(t < at for t in unavailable.get(row["analysis_id"], [])):
            finding.violate(
                f"Recovered of {row['name']} at {at - history.started:.1f} s without a "
                "MetricsUnavailable before it"
            )
    figures = notification_figures(history)
    finding.notes.append(
        f"{figures['messages_received']} messages received ({figures['received_posts']} POSTs, "
        f"by status {figures['received_by_status']}), {figures['duplicate_messages']} duplicates; "
        f"deliveries by state {figures['deliveries_by_state']}, "
        f"by event {figures['deliveries_by_event']}; tried while the receiver was down "
        f"{figures['deliveries_tried_while_receiver_down']}"
    )
    finding.notes.append(f"{unjudged} deliveries too close to the end to judge")
