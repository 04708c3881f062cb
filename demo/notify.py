"""The demo's notification channel: a local JSON webhook that keeps every picture it gets.

``runner.Demo`` starts it before the operator and the web UI, and gives both its
``SENTINEL_NOTIFY_CONFIG``: one default channel (every analysis) pointing at the receiver. Each
message is announced in the status log with the path of its PNG, written under
``var/demo/notifications/``, so a newcomer sees the text and the picture a team's chat would.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import yaml

from testkit.webhook import Received, WebhookReceiver


class DemoNotifications:
    """The receiver, its channel file and the pictures directory."""

    def __init__(self, work: Path, say: Callable[[str], None]) -> None:
        self.directory = work / "notifications"
        self._say = say
        self._numbers = itertools.count(1)
        self._receiver = WebhookReceiver(on_message=self._received)

    def start(self, public_url: str) -> dict[str, str]:
        """Start the receiver; return the environment the operator and the web UI need."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._receiver.start()
        config = self.directory.parent / "notify.yaml"
        channel = {"name": "demo-webhook", "url": self._receiver.apprise_url, "default": True}
        config.write_text(yaml.safe_dump({"channels": [channel]}))
        return {
            "SENTINEL_NOTIFY_CONFIG": str(config),
            "SENTINEL_PUBLIC_URL": public_url,
            # The story is minutes long: announce an outage after one minute, not five.
            "SENTINEL_NOTIFY_OUTAGE_AFTER": "1m",
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._receiver.port}/hook"

    def stop(self) -> None:
        self._receiver.stop()

    def _received(self, message: Received) -> None:
        number = next(self._numbers)
        where = "no picture"
        for _, mimetype, content in message.attachments:
            if mimetype == "image/png":
                event = re.sub(r"[^A-Za-z]+", "", message.title.split(":")[1].split("—")[0])
                path = self.directory / f"{number:03d}-{event or 'message'}.png"
                path.write_bytes(content)
                where = f"picture: {path}"
        self._say(f"notification #{number}: {message.title} ({where})")
