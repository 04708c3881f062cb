"""Read the notification channels from ``SENTINEL_NOTIFY_CONFIG`` (docs/notifications.md).

``sentinel_site.settings`` calls ``load`` once at start-up, so a bad file, an unknown event or
an Apprise URL whose scheme Apprise does not know stops the process with one line
(``ImproperlyConfigured``, which ``manage.py`` prints without a traceback). The file is read by
``sentinel_config.files``, as the providers file is: the line names the file, the channel and
the field. Channel URLs carry
tokens and passwords: nothing here ever puts one in a message; ``Channel.redacted`` is the only
form that may be shown (admin, API, logs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from pydantic import Field, StrictBool, field_validator

from sentinel_config import files as config_files
from sentinel_core.notify import DEFAULT_EVENTS, DEFAULT_OUTAGE_AFTER_SECONDS, NotifyEvent
from sentinel_core.spec import DNS1123_LABEL, parse_duration

ENV = "SENTINEL_NOTIFY_CONFIG"
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


class _ChannelModel(config_files.Strict):
    name: str = Field(max_length=63, pattern=DNS1123_LABEL.pattern)
    url: str
    events: list[str] = Field(default_factory=lambda: sorted(DEFAULT_EVENTS), min_length=1)
    default: StrictBool = False

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        url = value.strip()
        scheme = _SCHEME.match(url)
        if scheme is None:
            raise ValueError("must be an Apprise URL such as json://host/path")
        # The scheme is safe to show; the rest of the URL is not (tokens, passwords).
        if not _apprise_accepts(url):
            raise ValueError(
                f"Apprise does not accept this {scheme.group(1).lower()}:// URL "
                "(unknown scheme or malformed; see https://github.com/caronc/apprise/wiki)"
            )
        return url

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str]) -> list[str]:
        known = {e.value for e in NotifyEvent}
        for event in value:
            if event not in known:
                raise ValueError(
                    f"unknown event {str(event)[:64]!r}; "
                    f"use {', '.join(e.value for e in NotifyEvent)}"
                )
        return value


class _ChannelsModel(config_files.Strict):
    channels: list[_ChannelModel] = Field(default_factory=list)


def read_channels(path: str) -> tuple[Channel, ...]:
    """Return the channels of the YAML file at ``path``; raise ImproperlyConfigured (one line)."""
    entries = config_files.Entries(ENV, path, "channels", "channel")
    try:
        # An empty file is no channels.
        model = config_files.read(path, _ChannelsModel, entries, empty=_ChannelsModel())
        config_files.check_unique([item.name for item in model.channels], entries)
    except config_files.ConfigFileError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    return tuple(
        Channel(item.name, item.url, frozenset(NotifyEvent(e) for e in item.events), item.default)
        for item in model.channels
    )


def _apprise_accepts(url: str) -> bool:
    # Imported here: Apprise loads its plugins on import, which only a configured process needs.
    import logging

    from apprise import Apprise

    # Apprise may log the URL it could not parse: its records never reach the process's log.
    logging.getLogger("apprise").propagate = False
    return Apprise.instantiate(url, suppress_exceptions=True) is not None


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
