"""End to end: one message per transition across a killed operator, a kubectl resume and a
Prometheus outage longer than SENTINEL_NOTIFY_OUTAGE_AFTER (SPEC §14).

These are about the operator's own processes and Prometheus, so they run on devcluster only
(``tests/notifications/test_webhook_e2e.py`` runs on both clusters).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import deployment_manifest
from testkit.metrics_app import GaugeSetter
from testkit.observe import deployment_paused, wait_condition
from testkit.operator import StartOperator
from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver
from tests.notifications.test_webhook_e2e import checkout, deliveries, notify_env

pytestmark = pytest.mark.clusters("dev")


def titles(webhook: WebhookReceiver) -> list[str]:
    return [m.title.split(" — ")[0].removeprefix("Rollout Sentinel: ") for m in webhook.messages]


def test_operator_killed_right_after_the_pause_sends_one_message(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    webhook: WebhookReceiver,
    notify_config: Callable[..., Path],
) -> None:
    config = notify_config({"name": "hook", "url": webhook.apprise_url, "default": True})
    env = notify_env(config)
    operator = start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace], env=env)
    gauge(0.9)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(kube_cluster, checkout(namespace, case, notify=[]))
    # SIGKILL the moment the pause is visible: the delivery is stored, maybe not sent.
    wait_until(lambda: deployment_paused(kube_client, namespace), timeout=30, interval=0.02)
    operator.kill()
    killed = time.monotonic()
    sent_before = len(webhook.messages)
    print(f"messages before the kill: {sent_before}; rows: {len(deliveries(operator))}")

    # The same database, a new process (a restart, or the next leader of a failover).
    again = start_operator(
        prometheus_url=fault_proxy.url,
        namespaces=[namespace],
        env=env,
        database=operator.database,
        lease_name=operator.lease_name,
    )
    wait_until(lambda: "Paused" in titles(webhook), timeout=60, what="the Paused message")
    print(f"Paused message {time.monotonic() - killed:.1f} s after the kill")
    # Evaluations go on, failing and paused: nothing more is sent.
    time.sleep(12)
    assert titles(webhook) == ["Paused"], titles(webhook)
    assert [(r["event"], r["state"]) for r in deliveries(again)] == [("Paused", "sent")]


def test_kubectl_resume_sends_one_resumed_message(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    webhook: WebhookReceiver,
    notify_config: Callable[..., Path],
) -> None:
    config = notify_config({"name": "hook", "url": webhook.apprise_url})
    operator = start_operator(
        prometheus_url=fault_proxy.url, namespaces=[namespace], env=notify_env(config)
    )
    gauge(0.9)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(kube_cluster, checkout(namespace, case, notify=["hook"]))
    wait_until(lambda: "Paused" in titles(webhook), timeout=30, what="the Paused message")
    gauge(0.1)
    kube_cluster.kubectl("-n", namespace, "rollout", "resume", "deployment/checkout")
    wait_condition(kube_client, namespace, "checkout", "RolloutPaused", "ResumedByUser")
    wait_until(lambda: "Resumed" in titles(webhook), timeout=20, what="the Resumed message")
    time.sleep(8)
    assert titles(webhook) == ["Paused", "Resumed"]
    resumed = webhook.messages[1]
    assert "kubectl rollout resume" in resumed.message
    assert resumed.body["type"] == "info"
    assert [r["event"] for r in deliveries(operator)] == ["Paused", "Resumed"]


def test_outage_longer_than_the_threshold_sends_one_unavailable_and_one_recovered(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    webhook: WebhookReceiver,
    notify_config: Callable[..., Path],
) -> None:
    config = notify_config({"name": "hook", "url": webhook.apprise_url, "default": True})
    env = notify_env(config, SENTINEL_NOTIFY_OUTAGE_AFTER="4s")
    start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace], env=env)
    gauge(0.1)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(kube_cluster, checkout(namespace, case, notify=[]))
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=10)

    fault_proxy.fail(502)
    began = time.monotonic()
    wait_condition(kube_client, namespace, "checkout", "Ready", "MetricsUnavailable")
    wait_until(
        lambda: "MetricsUnavailable" in titles(webhook), timeout=30, what="MetricsUnavailable"
    )
    print(f"MetricsUnavailable message {time.monotonic() - began:.1f} s into the outage")
    assert time.monotonic() - began >= 4
    # The outage goes on through several retries: still one message.
    time.sleep(10)
    assert titles(webhook) == ["MetricsUnavailable"]

    fault_proxy.pass_through()
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=90)
    wait_until(lambda: "Recovered" in titles(webhook), timeout=20, what="Recovered")
    time.sleep(6)
    assert titles(webhook) == ["MetricsUnavailable", "Recovered"]
    assert "Prometheus answers again after" in webhook.messages[1].message


def test_a_short_outage_sends_nothing(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    webhook: WebhookReceiver,
    notify_config: Callable[..., Path],
) -> None:
    config = notify_config({"name": "hook", "url": webhook.apprise_url, "default": True})
    env = notify_env(config, SENTINEL_NOTIFY_OUTAGE_AFTER="10m")
    start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace], env=env)
    gauge(0.1)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(kube_cluster, checkout(namespace, case, notify=[]))
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=10)
    fault_proxy.fail(503)
    wait_condition(kube_client, namespace, "checkout", "Ready", "MetricsUnavailable")
    fault_proxy.pass_through()
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=90)
    time.sleep(3)
    assert titles(webhook) == []
