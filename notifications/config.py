"""Read the notification channels from ``SENTINEL_NOTIFY_CONFIG`` (SPEC §14).

``sentinel_site.settings`` calls ``load`` once at start-up, so a bad file, an unknown event or
an Apprise URL whose scheme Apprise does not know stops the process with one line
(``ImproperlyConfigured``, which ``manage.py`` prints without a traceback). Channel URLs carry
tokens and passwords: nothing here ever puts one in a message; ``Channel.redacted`` is the only
form that may be shown (admin, API, logs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from django.core.exceptions import ImproperlyConfigured

from sentinel_core.notify import DEFAULT_EVENTS, DEFAULT_OUTAGE_AFTER_SECONDS, NotifyEvent
from sentinel_core.spec import DNS1123_LABEL, parse_duration

_CHANNEL_FIELDS = frozenset({"name", "url", "events", "default"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)


@dataclass(frozen=True)
class Channel:
    """One destination; ``url`` is secret (Apprise syntax, tokens included)."""

    name: str
    url: str = field(repr=False)
    events: frozenset[NotifyEvent] = DEFAULT_EVENTS
    # True: every analysis notifies it; False: only analyses naming it in spec.notify.
    default: bool = False

    @property
    def scheme(self) -> str:
        match = _SCHEME.match(self.url)
        return match.group(1).lower() if match else ""

    @property
    def redacted(self) -> str:
        """Return what may be shown of the URL: the scheme and, for webhooks, the host."""
        parts = urlsplit(self.url)
        host = parts.hostname if self.scheme in {"json", "jsons", "form", "forms", "xml"} else ""
        return f"{self.scheme}://{host or '…'}/…"


@dataclass(frozen=True)
class NotifyConfig:
    """The channels and the delivery settings."""

    channels: tuple[Channel, ...] = ()
    # The file the channels came from; "" when SENTINEL_NOTIFY_CONFIG is not set.
    path: str = ""
    outage_after_seconds: float = DEFAULT_OUTAGE_AFTER_SECONDS
    # Link target of every message: the web UI's address as users reach it.
    public_url: str = "http://127.0.0.1:8000"
    # Delivery: attempts in all, the first retry's delay (doubling, capped) and each
    # attempt's connect and read timeout, short so that a stuck receiver holds a worker little.
    max_attempts: int = 6
    first_retry_seconds: float = 10.0
    max_retry_seconds: float = 600.0
    timeout_seconds: float = 5.0

    @property
    def names(self) -> frozenset[str] | None:
        """Return the channel names, or None when nothing is configured (no name is checked)."""
        return frozenset(c.name for c in self.channels) if self.path else None

    def channel(self, name: str) -> Channel | None:
        return next((c for c in self.channels if c.name == name), None)

    def route(self, event: NotifyEvent, named: Sequence[str]) -> tuple[Channel, ...]:
        """Return the channels that take ``event`` for an analysis naming ``named``."""
        return tuple(
            c for c in self.channels if event in c.events and (c.default or c.name in named)
        )


def load(env: Mapping[str, str]) -> NotifyConfig:
    """Return the configuration from ``env``; raise ImproperlyConfigured with one sentence."""
    settings = {
        "outage_after_seconds": _duration(env, "SENTINEL_NOTIFY_OUTAGE_AFTER", "5m"),
        "first_retry_seconds": _duration(env, "SENTINEL_NOTIFY_RETRY_AFTER", "10s"),
        "max_retry_seconds": _duration(env, "SENTINEL_NOTIFY_RETRY_MAX", "10m"),
        "timeout_seconds": _duration(env, "SENTINEL_NOTIFY_TIMEOUT", "5s"),
        "max_attempts": _attempts(env.get("SENTINEL_NOTIFY_ATTEMPTS", "6")),
        "public_url": _public_url(env.get("SENTINEL_PUBLIC_URL", "http://127.0.0.1:8000")),
    }
    path = env.get("SENTINEL_NOTIFY_CONFIG", "").strip()
    if not path:
        return NotifyConfig(**settings)
    # deploy/ mounts an optional Secret: until the administrator creates it, there is no file,
    # which then means no channels (spec.notify names are still reported as unknown).
    optional = env.get("SENTINEL_NOTIFY_CONFIG_OPTIONAL", "").strip().lower() == "true"
    if optional and not Path(path).exists():
        return NotifyConfig(path=path, **settings)
    return NotifyConfig(channels=read_channels(path), path=path, **settings)


def read_channels(path: str) -> tuple[Channel, ...]:
    """Return the channels of the YAML file at ``path``."""
    where = f"SENTINEL_NOTIFY_CONFIG={path}"
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ImproperlyConfigured(f"{where}: cannot read the file ({exc.strerror}).") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ImproperlyConfigured(f"{where}: not valid YAML{line}.") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping) or set(raw) - {"channels"}:
        raise ImproperlyConfigured(f"{where}: expected a mapping with one key, channels.")
    items = raw.get("channels") or []
    if not isinstance(items, list):
        raise ImproperlyConfigured(f"{where}: channels must be a list.")
    channels: list[Channel] = []
    for index, item in enumerate(items):
        channel = _channel(item, f"{where}: channels[{index}]")
        if any(c.name == channel.name for c in channels):
            raise ImproperlyConfigured(
                f"{where}: channels[{index}]: duplicate channel name {channel.name!r}."
            )
        channels.append(channel)
    return tuple(channels)


def _channel(item: object, where: str) -> Channel:
    if not isinstance(item, Mapping):
        raise ImproperlyConfigured(f"{where}: must be a mapping with name and url.")
    unknown = sorted(str(k) for k in set(item) - _CHANNEL_FIELDS)
    if unknown:
        raise ImproperlyConfigured(f"{where}: unknown field {unknown[0]!r}.")
    name = item.get("name")
    if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
        raise ImproperlyConfigured(
            f"{where}.name: must be a DNS-1123 label (lower-case letters, digits and '-')."
        )
    where = f"{where} ({name})"
    url = item.get("url")
    if not isinstance(url, str) or not _SCHEME.match(url.strip()):
        raise ImproperlyConfigured(f"{where}.url: must be an Apprise URL such as json://host/path.")
    url = url.strip()
    _check_url(url, where)
    events = item.get("events", sorted(DEFAULT_EVENTS))
    if not isinstance(events, list) or not events:
        raise ImproperlyConfigured(f"{where}.events: must be a non-empty list of event names.")
    known = {e.value for e in NotifyEvent}
    for event in events:
        if event not in known:
            raise ImproperlyConfigured(
                f"{where}.events: unknown event {str(event)[:64]!r}; "
                f"use {', '.join(e.value for e in NotifyEvent)}."
            )
    default = item.get("default", False)
    if not isinstance(default, bool):
        raise ImproperlyConfigured(f"{where}.default: must be true or false.")
    return Channel(name, url, frozenset(NotifyEvent(e) for e in events), default)


def _check_url(url: str, where: str) -> None:
    # Imported here: Apprise loads its plugins on import, which only a configured process needs.
    import logging

    from apprise import Apprise

    # Apprise may log the URL it could not parse: its records never reach the process's log.
    logging.getLogger("apprise").propagate = False

    scheme = _SCHEME.match(url)
    assert scheme is not None
    # The scheme is safe to show; the rest of the URL is not (tokens, passwords).
    if Apprise.instantiate(url, suppress_exceptions=True) is None:
        raise ImproperlyConfigured(
            f"{where}.url: Apprise does not accept this {scheme.group(1).lower()}:// URL "
            "(unknown scheme or malformed; see https://github.com/caronc/apprise/wiki)."
        )


def _duration(env: Mapping[str, str], name: str, default: str) -> float:
    raw = env.get(name, default).strip()
    try:
        seconds = parse_duration(raw)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a positive duration such as 5m or 30s.")
    return seconds


def _attempts(raw: str) -> int:
    if not raw.strip().isdigit() or not 1 <= int(raw) <= 50:
        raise ImproperlyConfigured(
            f"SENTINEL_NOTIFY_ATTEMPTS={raw!r} is not a whole number from 1 to 50."
        )
    return int(raw)


def _public_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ImproperlyConfigured(
            f"SENTINEL_PUBLIC_URL={raw!r} is not an http or https URL of the web UI."
        )
    return raw.strip().rstrip("/")
