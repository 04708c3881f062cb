"""Sabotage: a notification channel down — refusing connections, answering 500, or
holding the request past the timeout. The delivery is retried with exponential backoff and
recorded as failed; the reconcile is never delayed or failed by it.

About the operator's own processes: devcluster only.
"""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest

from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver, refused_url
from tests.notifications.e2e import NotifyE2E, deliveries

pytestmark = pytest.mark.clusters("dev")

ATTEMPTS = 4
INTERVAL = 5.0
# docs/operator.md#due-time-dispatch: every analysis is evaluated within a second of its due time.
DISPATCH_LAG = 1.0


@pytest.mark.parametrize("failure", ["refused", "error", "hang"])
def test_channel_down_is_retried_with_backoff_and_recorded(
    notify_e2e: NotifyE2E, webhook: WebhookReceiver, failure: str
) -> None:
    url = refused_url() if failure == "refused" else webhook.apprise_url
    webhook.mode = {"error": "error", "hang": "hang"}.get(failure, "ok")
    webhook.hang_seconds = 20
    operator = notify_e2e.operator(
        {"name": "hook", "url": url, "default": True, "events": ["Failing"]},
        env={
            "SENTINEL_NOTIFY_ATTEMPTS": str(ATTEMPTS),
            "SENTINEL_NOTIFY_RETRY_AFTER": "1s",
            "SENTINEL_NOTIFY_TIMEOUT": "1s",
        },
    )
    # The first evaluation fails: one Failing message, to a channel that is down.
    notify_e2e.gauge(0.9)
    notify_e2e.apply_checkout(notify=[])

    def failed() -> dict[str, object] | None:
        rows = deliveries(operator)
        return rows[0] if rows and rows[0]["state"] == "failed" else None

    row = wait_until(failed, timeout=60, what="the delivery recorded as failed")
    tries = operator.query(
        "SELECT * FROM notifications_deliveryattempt WHERE delivery_id = ? ORDER BY id",
        (row["id"],),
    )
    starts = [datetime.fromisoformat(t["started_at"]) for t in tries]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    durations = [round(t["duration_seconds"], 2) for t in tries]
    # From the end of one try to the start of the next: the backoff plus the pump's poll.
    waits = [gap - duration for gap, duration in zip(gaps, durations, strict=False)]
    print(
        f"{failure}: {len(tries)} tries, waits {[round(w, 1) for w in waits]} s, "
        f"try durations {durations} s"
    )
    assert row["attempts"] == ATTEMPTS == len(tries)
    assert not any(t["ok"] for t in tries)
    # Exponential: at least 1, 2, 4 s (-10 % jitter). On top come the pump's and the broker's
    # polls and, when a try lands on a worker that has not sent yet, its first import of
    # matplotlib (seen: up to 4 s on this shared 2-core machine).
    for wait, base in zip(waits, (1, 2, 4), strict=True):
        assert base * 0.9 <= wait <= base * 1.1 + 5, waits
    # Why, without the URL; a timeout ends the try within about the timeout.
    assert row["last_error"]
    assert "json://" not in str(row["last_error"])
    if failure == "hang":
        assert all(d < 5 for d in durations), durations
    if failure != "refused":
        assert len(webhook.received) == ATTEMPTS

    # The reconciles never waited for it: evaluations at the interval, all of them Fail, each
    # due `interval` after the previous one ended (its own duration grows with the machine's
    # load and is not the channel's doing) and started within the dispatch lag the operator
    # promises (docs/operator.md#due-time-dispatch: within a second of its due time).
    history = operator.evaluations(notify_e2e.namespace, "checkout")
    ends = [datetime.fromisoformat(e["finished_at"]) for e in history]
    starts = [datetime.fromisoformat(e["started_at"]) for e in history]
    lags = [(b - a).total_seconds() - INTERVAL for a, b in zip(ends, starts[1:], strict=False)]
    print(f"{failure}: evaluations started {[round(g, 2) for g in lags]} s after their due time")
    assert len(history) >= 2 and all(e["outcome"] == "Fail" for e in history)
    assert all(lag <= DISPATCH_LAG for lag in lags), lags
    # One scrape for both: a dispatch between two scrapes made the bucket outrun the count.
    scrape = operator.metrics_text()
    lag_count = operator.metric("sentinel_dispatch_lag_seconds_count", text=scrape) or 0.0
    within = (
        operator.metric("sentinel_dispatch_lag_seconds_bucket", {"le": str(DISPATCH_LAG)}, scrape)
        or 0.0
    )
    assert lag_count >= 2 and within == lag_count
    assert operator.running and "Traceback" not in operator.log
