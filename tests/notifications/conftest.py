"""Fixtures of the notification tests: a JSON webhook receiver on loopback, a writer of
SENTINEL_NOTIFY_CONFIG files, and the end-to-end tests' bundle (``tests.notifications.e2e``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import GaugeSetter
from testkit.operator import StartOperator
from testkit.smtp import SmtpReceiver
from testkit.webhook import WebhookReceiver
from tests.notifications.e2e import NotifyE2E


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


@pytest.fixture
def notify_config(tmp_path: Path) -> Callable[..., Path]:
    """Return a writer: ``notify_config(channel, ...)`` → the path of the YAML file."""

    def write(*channels: dict[str, Any]) -> Path:
        path = tmp_path / "notify.yaml"
        path.write_text(yaml.safe_dump({"channels": list(channels)}))
        return path

    return write


@pytest.fixture
def smtp() -> Iterator[SmtpReceiver]:
    receiver = SmtpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


@pytest.fixture
def notify_e2e(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
    notify_config: Callable[..., Path],
) -> NotifyE2E:
    return NotifyE2E(
        start_operator,
        kube_cluster,
        kube_client,
        namespace,
        gauge,
        fault_proxy,
        case,
        notify_config,
    )
