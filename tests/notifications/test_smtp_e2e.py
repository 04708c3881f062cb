"""End to end: the Paused message as e-mail through Apprise's ``mailto://`` to a real SMTP
server (aiosmtpd) on loopback, with the PNG attached and showing the maxValue line."""

from __future__ import annotations

import time

import pytest

from notifications import render
from testkit.notify_checks import decode_png, rows_of_colour
from testkit.smtp import SmtpReceiver
from testkit.waiting import wait_until
from tests.notifications.e2e import NotifyE2E, deliveries

# About the operator's delivery, not the cluster: devcluster only.
pytestmark = pytest.mark.clusters("dev")


def test_pause_is_one_email_with_the_png(notify_e2e: NotifyE2E, smtp: SmtpReceiver) -> None:
    namespace = notify_e2e.namespace
    operator = notify_e2e.operator({"name": "ops-mail", "url": smtp.apprise_url()})
    notify_e2e.gauge(0.9)
    notify_e2e.apply_checkout(notify=["ops-mail"])
    notify_e2e.wait_condition("RolloutPaused", "FailureLimitReached")
    wait_until(smtp.received, timeout=30, what="an e-mail")
    time.sleep(8)
    [mail] = smtp.received()
    assert mail["Subject"] == f"Rollout Sentinel: Paused — {namespace}/checkout"
    assert mail["To"] == "ops@example.com"
    body = mail.get_body(preferencelist=("plain", "html"))
    assert body is not None and "failureLimit 2" in body.get_content()
    [png] = [part for part in mail.iter_attachments() if part.get_content_type() == "image/png"]
    assert png.get_filename() == f"{namespace}-checkout.png"
    image = decode_png(png.get_content())
    assert image.size == render.size_px(1)
    assert rows_of_colour(image, render.MAX_VALUE)
    assert [(r["event"], r["state"]) for r in deliveries(operator)] == [("Paused", "sent")]
