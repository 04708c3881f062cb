"""Read Rollout Sentinel's settings from the environment.

Every setting has an embedded default so that a bare checkout runs. A value that is present
but malformed raises ``ImproperlyConfigured`` with one sentence naming the variable, which
``manage.py`` turns into a single line on start-up instead of a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_DURATION = re.compile(r"^(?P<value>\d+)(?P<unit>s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class SentinelConfig:
    database: dict[str, Any]
    broker_url: str
    prometheus_url: str
    prometheus_token: str
    namespaces: tuple[str, ...]
    history_retention_seconds: int
    secret_key: str
    allowed_hosts: tuple[str, ...]
    debug: bool
    # django-q2 worker processes of `qcluster` / `runoperator`.
    q_workers: int = 2
    # Seconds the operator waits for one Prometheus query before calling it unavailable.
    prometheus_timeout: float = 5.0
    # Largest Prometheus answer the operator reads, in bytes; a bigger one is MetricsUnavailable.
    prometheus_max_bytes: int = 4 * 1024 * 1024


def parse_duration(name: str, raw: str) -> int:
    """Return the number of seconds in ``raw`` (``90s``, ``15m``, ``12h``, ``30d``)."""
    match = _DURATION.match(raw.strip())
    if not match or int(match["value"]) <= 0:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a duration; use a positive number with s, m, h or d, e.g. 30d."
        )
    return int(match["value"]) * _UNIT_SECONDS[match["unit"]]


def parse_database_url(url: str, base_dir: Path) -> dict[str, Any]:
    """Return a Django DATABASES entry for ``sqlite:///path`` or ``postgres://…`` URLs."""
    if not url:
        return _sqlite(base_dir / "var" / "sentinel.sqlite3")
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if not path or path == "/":
            raise ImproperlyConfigured(
                f"DATABASE_URL={url!r} names no file; use sqlite:///relative/path or "
                "sqlite:////absolute/path."
            )
        # sqlite:///rel -> "rel" relative to the project; sqlite:////abs -> "/abs".
        file = Path(path[1:]) if path.startswith("/") else Path(path)
        return _sqlite(file if file.is_absolute() else base_dir / file)
    if parts.scheme in {"postgres", "postgresql"}:
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(f"DATABASE_URL names no database: {_redact(url)}.")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported; use sqlite:// or postgres://."
    )


def _sqlite(path: Path) -> dict[str, Any]:
    # WAL lets readers run beside the single writer; IMMEDIATE transactions take the write
    # lock up front so two writers queue on the busy timeout instead of failing with
    # "database is locked" when one upgrades a read lock (django-q2's ORM broker does this).
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;"
            ),
        },
    }


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url


def _url(name: str, raw: str, schemes: set[str]) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in schemes or not parts.netloc:
        allowed = " or ".join(sorted(schemes))
        raise ImproperlyConfigured(f"{name}={_redact(raw)!r} is not a {allowed} URL.")
    return raw.rstrip("/")


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"", "0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true or false.")


def _positive_int(name: str, raw: str, *, maximum: int) -> int:
    value = raw.strip()
    if not value.isdigit() or not 1 <= int(value) <= maximum:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number from 1 to {maximum}.")
    return int(value)


def _seconds(name: str, raw: str, *, maximum: float) -> float:
    # Accept "5", "2.5" or "5s": a timeout is often wanted below one second in tests.
    value = raw.strip().removesuffix("s")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= maximum:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a number of seconds above 0 and at most {maximum:g}."
        )
    return seconds


def _list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def load(env: Mapping[str, str], base_dir: Path) -> SentinelConfig:
    """Return the configuration read from ``env``; raise ImproperlyConfigured on bad values."""
    debug = _bool("SENTINEL_DEBUG", env.get("SENTINEL_DEBUG", ""))
    secret_key = env.get("SENTINEL_SECRET_KEY", "")
    if not secret_key:
        if not debug and env.get("SENTINEL_REQUIRE_SECRET_KEY"):
            raise ImproperlyConfigured("SENTINEL_SECRET_KEY must be set in production.")
        secret_key = "insecure-development-key-set-SENTINEL_SECRET_KEY-in-production"
    broker_url = env.get("SENTINEL_BROKER_URL", "orm://default")
    if not broker_url.startswith("orm://"):
        broker_url = _url("SENTINEL_BROKER_URL", broker_url, {"redis", "rediss"})
    return SentinelConfig(
        database=parse_database_url(env.get("DATABASE_URL", ""), base_dir),
        broker_url=broker_url,
        prometheus_url=_url(
            "SENTINEL_PROMETHEUS_URL",
            env.get("SENTINEL_PROMETHEUS_URL", "http://127.0.0.1:9090"),
            {"http", "https"},
        ),
        prometheus_token=env.get("SENTINEL_PROMETHEUS_TOKEN", ""),
        namespaces=_list(env.get("SENTINEL_NAMESPACES", "")),
        history_retention_seconds=parse_duration(
            "SENTINEL_HISTORY_RETENTION", env.get("SENTINEL_HISTORY_RETENTION", "30d")
        ),
        secret_key=secret_key,
        allowed_hosts=_list(env.get("SENTINEL_ALLOWED_HOSTS", "127.0.0.1,localhost")),
        debug=debug,
        q_workers=_positive_int(
            "SENTINEL_Q_WORKERS", env.get("SENTINEL_Q_WORKERS", "2"), maximum=64
        ),
        prometheus_timeout=_seconds(
            "SENTINEL_PROMETHEUS_TIMEOUT", env.get("SENTINEL_PROMETHEUS_TIMEOUT", "5"), maximum=60
        ),
        # A cap on each Prometheus answer, so one query matching every series cannot exhaust
        # a worker's memory (SPEC §13 item 18); at most 1 GiB.
        prometheus_max_bytes=_positive_int(
            "SENTINEL_PROMETHEUS_MAX_BYTES",
            env.get("SENTINEL_PROMETHEUS_MAX_BYTES", str(4 * 1024 * 1024)),
            maximum=1024**3,
        ),
    )
