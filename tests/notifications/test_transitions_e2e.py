"""End to end: one message per transition across a killed operator, a kubectl resume and a
Prometheus outage longer than SENTINEL_NOTIFY_OUTAGE_AFTER (docs/notifications.md).

These are about the operator's own processes and Prometheus, so they run on devcluster only
(``tests/notifications/test_webhook_e2e.py`` runs on both clusters).
"""

from __future__ import annotations

import time

import pytest

from testkit.observe import deployment_paused
from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver
from tests.notifications.e2e import NotifyE2E, deliveries

pytestmark = pytest.mark.clusters("dev")


def titles(webhook: WebhookReceiver) -> list[str]:
    return [m.title.split(" — ")[0].removeprefix("Rollout Sentinel: ") for m in webhook.messages]


@pytest.mark.slow
def test_operator_killed_right_after_the_pause_sends_one_message(
    notify_e2e: NotifyE2E, webhook: WebhookReceiver
) -> None:
    hook = {"name": "hook", "url": webhook.apprise_url, "default": True}
    operator = notify_e2e.operator(hook)
    notify_e2e.gauge(0.9)
    notify_e2e.apply_checkout(notify=[])
    # SIGKILL the moment the pause is visible: the delivery is stored, maybe not sent.
    wait_until(
        lambda: deployment_paused(notify_e2e.kube_client, notify_e2e.namespace),
        timeout=30,
        interval=0.02,
    )
    operator.kill()
    killed = time.monotonic()
    sent_before = len(webhook.messages)
    print(f"messages before the kill: {sent_before}; rows: {len(deliveries(operator))}")

    # The same database, a new process (a restart, or the next leader of a failover).
    again = notify_e2e.operator(hook, database=operator.database, lease_name=operator.lease_name)
    wait_until(lambda: "Paused" in titles(webhook), timeout=60, what="the Paused message")
    print(f"Paused message {time.monotonic() - killed:.1f} s after the kill")
    # Evaluations go on, failing and paused: nothing more is sent.
    time.sleep(12)
    assert titles(webhook) == ["Paused"], titles(webhook)
    assert [(r["event"], r["state"]) for r in deliveries(again)] == [("Paused", "sent")]


def test_kubectl_resume_sends_one_resumed_message(
    notify_e2e: NotifyE2E, webhook: WebhookReceiver
) -> None:
    operator = notify_e2e.operator({"name": "hook", "url": webhook.apprise_url})
    notify_e2e.gauge(0.9)
    notify_e2e.apply_checkout(notify=["hook"])
    wait_until(lambda: "Paused" in titles(webhook), timeout=30, what="the Paused message")
    notify_e2e.gauge(0.1)
    notify_e2e.kube_cluster.kubectl(
        "-n", notify_e2e.namespace, "rollout", "resume", "deployment/checkout"
    )
    notify_e2e.wait_condition("RolloutPaused", "ResumedByUser")
    wait_until(lambda: "Resumed" in titles(webhook), timeout=20, what="the Resumed message")
    time.sleep(8)
    assert titles(webhook) == ["Paused", "Resumed"]
    resumed = webhook.messages[1]
    assert "kubectl rollout resume" in resumed.message
    assert resumed.body["type"] == "info"
    assert [r["event"] for r in deliveries(operator)] == ["Paused", "Resumed"]


def _evaluating(notify_e2e: NotifyE2E, webhook: WebhookReceiver, *, outage_after: str) -> None:
    """Start an operator notifying one default webhook channel; wait for a passing analysis."""
    notify_e2e.operator(
        {"name": "hook", "url": webhook.apprise_url, "default": True},
        env={"SENTINEL_NOTIFY_OUTAGE_AFTER": outage_after},
    )
    notify_e2e.gauge(0.1)
    notify_e2e.apply_checkout(notify=[])
    notify_e2e.wait_condition("Ready", "Evaluating", timeout=10)


@pytest.mark.slow
def test_outage_longer_than_the_threshold_sends_one_unavailable_and_one_recovered(
    notify_e2e: NotifyE2E, webhook: WebhookReceiver
) -> None:
    _evaluating(notify_e2e, webhook, outage_after="4s")

    notify_e2e.fault_proxy.fail(502)
    began = time.monotonic()
    notify_e2e.wait_condition("Ready", "MetricsUnavailable")
    wait_until(
        lambda: "MetricsUnavailable" in titles(webhook), timeout=30, what="MetricsUnavailable"
    )
    print(f"MetricsUnavailable message {time.monotonic() - began:.1f} s into the outage")
    assert time.monotonic() - began >= 4
    # The outage goes on through several retries: still one message.
    time.sleep(10)
    assert titles(webhook) == ["MetricsUnavailable"]

    notify_e2e.fault_proxy.pass_through()
    notify_e2e.wait_condition("Ready", "Evaluating", timeout=90)
    wait_until(lambda: "Recovered" in titles(webhook), timeout=20, what="Recovered")
    time.sleep(6)
    assert titles(webhook) == ["MetricsUnavailable", "Recovered"]
    assert "Prometheus answers again after" in webhook.messages[1].message


def test_a_short_outage_sends_nothing(notify_e2e: NotifyE2E, webhook: WebhookReceiver) -> None:
    _evaluating(notify_e2e, webhook, outage_after="10m")
    notify_e2e.fault_proxy.fail(503)
    notify_e2e.wait_condition("Ready", "MetricsUnavailable")
    notify_e2e.fault_proxy.pass_through()
    notify_e2e.wait_condition("Ready", "Evaluating", timeout=90)
    time.sleep(3)
    assert titles(webhook) == []
