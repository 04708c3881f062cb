"""A real SMTP server on loopback (aiosmtpd) that keeps every message it accepts.

The notification tests point an Apprise ``mailto://`` channel at ``SmtpReceiver.apprise_url``
and read the parsed messages (``email.message.EmailMessage``), attachments included.
"""

from __future__ import annotations

import email
import email.policy
import threading
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from testkit.ports import free_port


class _Keep:
    def __init__(self, receiver: SmtpReceiver) -> None:
        self.receiver = receiver

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self.receiver.lock:
            self.receiver.messages.append(message)
        return "250 Message accepted for delivery"


class SmtpReceiver:
    """``start`` it, read ``messages``, ``stop`` it."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.lock = threading.Lock()
        self.port = free_port()
        self._controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpReceiver:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def apprise_url(self, to: str = "ops@example.com") -> str:
        return f"mailto://127.0.0.1:{self.port}?from=sentinel@example.com&to={to}"

    def received(self) -> list[EmailMessage]:
        with self.lock:
            return list(self.messages)
