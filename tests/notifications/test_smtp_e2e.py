"""End to end: the Paused message as e-mail through Apprise's ``mailto://`` to a real SMTP
server (aiosmtpd) on loopback, with the PNG attached and showing the maxValue line."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from notifications import render
from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import deployment_manifest
from testkit.metrics_app import GaugeSetter
from testkit.notify_checks import decode_png, rows_of_colour
from testkit.observe import wait_condition
from testkit.operator import StartOperator
from testkit.smtp import SmtpReceiver
from testkit.waiting import wait_until
from tests.notifications.test_webhook_e2e import checkout, deliveries, notify_env

# About the operator's delivery, not the cluster: devcluster only.
pytestmark = pytest.mark.clusters("dev")


def test_pause_is_one_email_with_the_png(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    smtp: SmtpReceiver,
    notify_config: Callable[..., Path],
) -> None:
    config = notify_config({"name": "ops-mail", "url": smtp.apprise_url()})
    operator = start_operator(
        prometheus_url=fault_proxy.url, namespaces=[namespace], env=notify_env(config)
    )
    gauge(0.9)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(kube_cluster, checkout(namespace, case, notify=["ops-mail"]))
    wait_condition(kube_client, namespace, "checkout", "RolloutPaused", "FailureLimitReached")
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
