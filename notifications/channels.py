"""Send one message to one channel through Apprise, and say why it failed without secrets.

``tasks.deliver_task`` and the admin's "send test message" call ``send``. Apprise reports only
success or failure; the reason is what it logged meanwhile, captured here and stripped of every
part of the channel's URL that could be a token or a password before it is stored or shown.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from apprise import Apprise, AppriseAsset, AppriseAttachment, LogCapture, NotifyType
from apprise.attachment.memory import AttachMemory

from notifications.config import Channel

# Apprise's own records go only to the capture below, never to the process's log handlers:
# a plugin's debug line could carry a URL.
logging.getLogger("apprise").propagate = False

_MAX_ERROR = 500
# Separators of an Apprise URL; what lies between them may be a token.
_URL_PARTS = re.compile(r"[/:@?&=#,]+")


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    warning: bool = True
    # The PNG of the metrics; None when it could not be drawn (the link is in the body).
    png: bytes | None = None
    png_name: str = "metrics.png"


@dataclass(frozen=True)
class Sent:
    ok: bool
    error: str = ""


def send(channel: Channel, message: Message, *, timeout: float) -> Sent:
    """Send ``message`` to ``channel``; never raise for a failure of the receiver."""
    # Memory only: the pods' root filesystem is read-only, and nothing needs to persist.
    asset = AppriseAsset(app_id="Rollout Sentinel", storage_mode="memory", secure_logging=True)
    plugin = Apprise.instantiate(channel.url, asset=asset, suppress_exceptions=True)
    if plugin is None:
        return Sent(False, f"Apprise does not accept this {channel.scheme}:// URL")
    plugin.socket_connect_timeout = timeout
    plugin.socket_read_timeout = timeout
    attach = None
    if message.png is not None and plugin.attachment_support:
        attach = AppriseAttachment(
            AttachMemory(content=message.png, name=message.png_name, mimetype="image/png")
        )
    kind = NotifyType.WARNING if message.warning else NotifyType.INFO
    with LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
        try:
            ok = plugin.notify(
                body=message.body, title=message.title, notify_type=kind, attach=attach
            )
        except Exception as exc:  # a plugin bug must end as a failed attempt, not a crash
            ok = False
            captured.write(f"{type(exc).__name__}: {exc}\n")
        log_text = captured.getvalue()
    if ok:
        return Sent(True)
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    reason = "; ".join(lines[-3:]) or "the receiver did not accept the message"
    return Sent(False, redact(reason, channel.url)[:_MAX_ERROR])


def load_plugins() -> None:
    """Load Apprise's plugins now, as its first URL or attachment would.

    ``runoperator`` calls this before forking its workers, so the plugin modules are pages the
    workers share instead of a private copy each (docs/reliability.md; the figure is in
    docs/performance.md).
    """
    asset = AppriseAsset(app_id="Rollout Sentinel", storage_mode="memory")
    Apprise.instantiate("json://localhost", asset=asset, suppress_exceptions=True)
    AppriseAttachment(AttachMemory(content=b"", name="preload.png", mimetype="image/png"))


def redact(text: str, url: str) -> str:
    """Return ``text`` without the URL or any longer piece of it (tokens, passwords, paths)."""
    text = text.replace(url, "<channel url>")
    rest = url.partition("://")[2]
    pieces = sorted((p for p in _URL_PARTS.split(rest) if len(p) >= 6), key=len, reverse=True)
    for piece in pieces:
        if piece.isdigit():
            continue  # a port number is no secret, and redacting it would hide the reason
        text = text.replace(piece, "…")
    return text
