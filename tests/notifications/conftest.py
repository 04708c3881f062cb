"""Fixtures of the notification tests: a JSON webhook receiver on loopback, and a writer of
SENTINEL_NOTIFY_CONFIG files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.smtp import SmtpReceiver
from testkit.webhook import WebhookReceiver


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
