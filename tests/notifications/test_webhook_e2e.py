"""End to end: a regression pauses the Deployment and exactly one message reaches a real JSON
webhook on loopback, with the PNG of the metric (docs/notifications.md).

kubectl, ``runoperator``, the real Prometheus and the session cluster, as in
``tests/operator/test_runtime_e2e.py``; the channel is an Apprise ``json://`` URL pointing at
``testkit.webhook.WebhookReceiver``. The PNG is decoded and the maxValue line's colour is
looked for at the height where 0.5 must be drawn.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from notifications import render
from testkit.notify_checks import decode_png, expected_row, rows_of_colour
from testkit.observe import condition
from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver
from tests.notifications.e2e import PUBLIC_URL, NotifyE2E, deliveries


def test_pause_sends_exactly_one_message_with_the_graph(
    notify_e2e: NotifyE2E, webhook: WebhookReceiver
) -> None:
    namespace = notify_e2e.namespace
    operator = notify_e2e.operator(
        {"name": "team-hook", "url": webhook.apprise_url},
        # A default channel that takes only Failing: the opt-in event reaches it, nothing else.
        {
            "name": "failing-only",
            "url": webhook.apprise_url + "?-channel=f",
            "events": ["Failing"],
            "default": True,
        },
    )
    notify_e2e.gauge(0.1)
    notify_e2e.apply_checkout(notify=["team-hook", "nobody"])
    ready = notify_e2e.wait_condition("Ready", "Evaluating", timeout=10)
    # An unknown name is reported, and evaluation goes on.
    assert (
        "unknown notification channel in spec.notify: nobody"
        in condition(ready, "Ready")["message"]
    )

    notify_e2e.gauge(0.9)
    notify_e2e.wait_condition("RolloutPaused", "FailureLimitReached", timeout=30)
    paused_at = time.monotonic()
    first = wait_until(
        lambda: [m for m in webhook.messages if "Paused" in m.title] or None,
        timeout=20,
        what="the Paused message",
    )
    # From the test seeing the pause in the cluster to the receiver getting the POST.
    print(f"pause to message on the webhook: {first[0].at - paused_at:.2f} s")
    # Several more evaluations while paused and failing: no message more.
    time.sleep(12)
    titles = sorted(m.title for m in webhook.messages)
    assert titles == [
        f"Rollout Sentinel: Failing — {namespace}/checkout",
        f"Rollout Sentinel: Paused — {namespace}/checkout",
    ], titles
    message = next(m for m in webhook.messages if "Paused" in m.title)
    assert "failureLimit 2" in message.message
    assert "0.9" in message.message and "maxValue 0.5" in message.message
    assert f"{PUBLIC_URL}/admin/analyses/analysis/" in message.message
    assert message.body["type"] == "warning"

    # The picture: a PNG at chat size, the maxValue line where 0.5 is drawn.
    [(filename, mimetype, data)] = message.attachments
    assert (filename, mimetype) == (f"{namespace}-checkout.png", "image/png")
    image = decode_png(data)
    assert image.size == render.size_px(1)
    values = [
        (datetime.now(UTC), float(r["value"]))
        for e in operator.evaluations(namespace, "checkout")
        for r in e["metric_results"]
        if r["value"] is not None
    ]
    limits = render.y_limits(render.Series("value", 0.5, values))
    want = expected_row(image, 0.5, limits, 0, 1)
    rows = rows_of_colour(image, render.MAX_VALUE)
    assert rows and min(abs(row - want) for row in rows) <= 2, (rows, want)
    # The value line (blue) is drawn too.
    assert rows_of_colour(image, render.VALUE, share=0.02)

    # The rows: one per message, sent at the first try, the URL nowhere.
    rows_db = deliveries(operator)
    assert sorted((r["event"], r["channel"], r["state"], r["attempts"]) for r in rows_db) == [
        ("Failing", "failing-only", "sent", 1),
        ("Paused", "team-hook", "sent", 1),
    ]
    assert all(str(webhook.port) not in r["key"] + r["last_error"] for r in rows_db)
    assert str(webhook.port) not in operator.log
