"""Read Rollout Sentinel's settings from the environment.

Every setting has an embedded default so that a bare checkout runs. A value that is present
but malformed raises ``ImproperlyConfigured`` with one sentence naming the variable, which
``manage.py`` turns into a single line on start-up instead of a traceback.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_DURATION = re.compile(r"^(?P<value>\d+)(?P<unit>s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# SENTINEL_CLAIM_TIMEOUT's default, in seconds (docs/operator.md#claims).
DEFAULT_CLAIM_TIMEOUT = 120
# django-q2's time limit of a task when the claim allows it (SentinelConfig.task_time_limit).
_MAX_TASK_TIME_LIMIT = 60
# An analysis lost with its worker waits at most this long (SENTINEL_CLAIM_TIMEOUT's maximum).
_MAX_CLAIM_TIMEOUT = 3600


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
    # Seconds ahead of their due time the dispatcher claims analyses, so that one pass hands a
    # worker several (docs/operator.md#due-time-dispatch); the worker still waits for each.
    dispatch_ahead: float = 0.5
    # Seconds a dispatched analysis stays claimed (docs/operator.md#claims): one lost with its
    # worker is due again when the claim runs out. django-q2's time limit and redelivery follow
    # from it (``task_time_limit``, settings.Q_CLUSTER).
    claim_timeout: int = DEFAULT_CLAIM_TIMEOUT
    # Seconds the operator waits for one Prometheus query before calling it unavailable.
    prometheus_timeout: float = 5.0
    # Largest Prometheus answer the operator reads, in bytes; a bigger one is MetricsUnavailable.
    prometheus_max_bytes: int = 4 * 1024 * 1024
    # Where the operator serves /metrics (SENTINEL_METRICS_ADDR): loopback unless deployed
    # behind a NetworkPolicy, since it names every analysis.
    metrics_address: str = "127.0.0.1"
    metrics_port: int = 9100
    # -- who may do what, where (docs/security.md) --
    # "django" (namespace grants in the admin) or "kubernetes" (SubjectAccessReviews).
    authz: str = "django"
    # Header of the authenticating proxy carrying the user ("" = single sign-on off), and
    # the one carrying its comma-separated groups.
    remote_user_header: str = ""
    remote_groups_header: str = ""
    # Bearer token /metrics of the web app demands; "" means /metrics is not served.
    metrics_token: str = ""
    hsts_seconds: int = 0
    secure_ssl_redirect: bool = False
    # Header and value that mark a request as HTTPS behind a TLS-terminating proxy.
    secure_proxy_ssl_header: tuple[str, str] | None = None
    csrf_trusted_origins: tuple[str, ...] = ()
    # Session and CSRF cookies only over HTTPS; on unless SENTINEL_DEBUG is.
    secure_cookies: bool = True
    # SENTINEL_TRUSTED_PROXIES: the proxies in front (addresses and CIDRs, as text). Only a
    # request from one of them may carry the SSO user header, and only their X-Forwarded-For
    # hops tell clients apart; () trusts the socket's peer alone (docs/security.md).
    trusted_proxies: tuple[str, ...] = ()
    # SENTINEL_PROVIDERS_FILE (docs/operations.md#metric-providers): "" means
    # SENTINEL_PROMETHEUS_URL is the only one.
    providers_file: str = ""
    # SENTINEL_TASK_KEY: what django-q2 signs and checks its pickled tasks with, held only by the
    # operator (docs/security.md#what-each-account-can-touch); "" keeps SENTINEL_SECRET_KEY,
    # which runoperator accepts only with SENTINEL_DEBUG on.
    task_key: str = ""

    @property
    def task_time_limit(self) -> int:
        """Return django-q2's time limit of a task (``Q_CLUSTER["timeout"]``), in seconds.

        Half the claim, at most 60 s: a batch task ends, or is killed, before the claims of the
        members it started run out (docs/operator.md#claims).
        """
        return min(_MAX_TASK_TIME_LIMIT, self.claim_timeout // 2)


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
            # A kept connection is checked before its first use in a request or django-q2 task:
            # after a database restart it is dead, and the first query on it would fail.
            "CONN_HEALTH_CHECKS": True,
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


def _metrics_addr(raw: str) -> dict[str, Any]:
    """Return the operator's /metrics address and port from ``host:port``."""
    host, _, port = raw.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ImproperlyConfigured(
            f"SENTINEL_METRICS_ADDR={raw!r} is not an address; use host:port, "
            "e.g. 127.0.0.1:9100 or 0.0.0.0:9100."
        )
    return {"metrics_address": host.strip("[]"), "metrics_port": int(port)}


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


def _ahead(raw: str) -> float:
    # 0 is allowed (claim only what is due now); more than 5 s would hold claims needlessly long.
    if raw.strip() in ("0", "0s"):
        return 0.0
    return _seconds("SENTINEL_DISPATCH_AHEAD", raw, maximum=5)


def _claim_timeout(raw: str, *, prometheus_timeout: float, dispatch_ahead: float) -> int:
    """Return SENTINEL_CLAIM_TIMEOUT: whole seconds, long enough for the batch task it bounds.

    A batch task's time limit is half the claim and it starts members only in the first half of
    that limit (docs/operator.md#claims): a quarter of the claim must hold one Prometheus query,
    and half of it the look-ahead a member is claimed with. The default is never too short:
    above it the time limit stays 60 s, so a longer claim would give a query no more time.
    """
    name = "SENTINEL_CLAIM_TIMEOUT"
    value = raw.strip().removesuffix("s")
    if not value.isdigit() or not 1 <= int(value) <= _MAX_CLAIM_TIMEOUT:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a whole number of seconds from 1 to {_MAX_CLAIM_TIMEOUT}."
        )
    query = min(math.ceil(4 * prometheus_timeout), DEFAULT_CLAIM_TIMEOUT)
    minimum = max(2, query, math.ceil(2 * dispatch_ahead))
    if int(value) < minimum:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is too short: at least {minimum} s here (4 x "
            "SENTINEL_PROMETHEUS_TIMEOUT and 2 x SENTINEL_DISPATCH_AHEAD), because a batch task "
            "may run for half the claim and starts analyses only in the first half of that time "
            "(docs/operator.md#claims)."
        )
    return int(value)


def _list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def load(env: Mapping[str, str], base_dir: Path) -> SentinelConfig:
    """Return the configuration read from ``env``; raise ImproperlyConfigured on bad values."""
    debug = _debug(env)
    broker_url = env.get("SENTINEL_BROKER_URL", "orm://default")
    if not broker_url.startswith("orm://"):
        broker_url = _url("SENTINEL_BROKER_URL", broker_url, {"redis", "rediss"})
    dispatch_ahead = _ahead(env.get("SENTINEL_DISPATCH_AHEAD", "0.5"))
    prometheus_timeout = _seconds(
        "SENTINEL_PROMETHEUS_TIMEOUT", env.get("SENTINEL_PROMETHEUS_TIMEOUT", "5"), maximum=60
    )
    config = SentinelConfig(
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
        secret_key=env.get("SENTINEL_SECRET_KEY", ""),
        allowed_hosts=_list(env.get("SENTINEL_ALLOWED_HOSTS", "127.0.0.1,localhost")),
        debug=debug,
        q_workers=_positive_int(
            "SENTINEL_Q_WORKERS", env.get("SENTINEL_Q_WORKERS", "2"), maximum=64
        ),
        dispatch_ahead=dispatch_ahead,
        prometheus_timeout=prometheus_timeout,
        claim_timeout=_claim_timeout(
            env.get("SENTINEL_CLAIM_TIMEOUT", str(DEFAULT_CLAIM_TIMEOUT)),
            prometheus_timeout=prometheus_timeout,
            dispatch_ahead=dispatch_ahead,
        ),
        # A cap on each Prometheus answer, so one query matching every series cannot exhaust a
        # worker's memory (docs/status.md#ready-is-the-analysis-able-to-do-its-job); at most 1 GiB.
        **_metrics_addr(env.get("SENTINEL_METRICS_ADDR", "127.0.0.1:9100")),
        prometheus_max_bytes=_positive_int(
            "SENTINEL_PROMETHEUS_MAX_BYTES",
            env.get("SENTINEL_PROMETHEUS_MAX_BYTES", str(4 * 1024 * 1024)),
            maximum=1024**3,
        ),
        **_security(env),
        providers_file=_providers_file(env.get("SENTINEL_PROVIDERS_FILE", "")),
        task_key=env.get("SENTINEL_TASK_KEY", ""),
    )
    if config.task_key and config.task_key == config.secret_key:
        raise ImproperlyConfigured(
            "SENTINEL_TASK_KEY equals SENTINEL_SECRET_KEY; the task key must be one the web app "
            "does not hold (docs/security.md)."
        )
    # Checked last, so that a malformed setting is reported before a missing key.
    if not config.secret_key:
        if not debug:
            raise ImproperlyConfigured(
                "SENTINEL_SECRET_KEY must be set when SENTINEL_DEBUG is off; generate one with "
                "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'."
            )
        config = replace(config, secret_key=_DEVELOPMENT_KEY)
    return config


# Used only with SENTINEL_DEBUG on: a development key that says what it is.
_DEVELOPMENT_KEY = "insecure-development-key-set-SENTINEL_SECRET_KEY-in-production"
_AUTHZ_MODES = ("django", "kubernetes")
_HTTP_HEADER = re.compile(r"^[A-Za-z0-9-]+$")


def _security(env: Mapping[str, str]) -> dict[str, Any]:
    """Return the settings of docs/security.md: authorization, SSO headers, metrics token, TLS."""
    authz = env.get("SENTINEL_AUTHZ", "django").strip().lower() or "django"
    if authz not in _AUTHZ_MODES:
        raise ImproperlyConfigured(
            f"SENTINEL_AUTHZ={authz!r} is not an authorization mode; use django or kubernetes."
        )
    headers = {
        name: _header(name, env.get(name, ""))
        for name in ("SENTINEL_REMOTE_USER_HEADER", "SENTINEL_REMOTE_GROUPS_HEADER")
    }
    if headers["SENTINEL_REMOTE_GROUPS_HEADER"] and not headers["SENTINEL_REMOTE_USER_HEADER"]:
        raise ImproperlyConfigured(
            "SENTINEL_REMOTE_GROUPS_HEADER is set without SENTINEL_REMOTE_USER_HEADER; groups "
            "are read only from a proxy that also names the user."
        )
    if "SENTINEL_NUM_PROXIES" in env:
        raise ImproperlyConfigured(
            "SENTINEL_NUM_PROXIES is replaced by SENTINEL_TRUSTED_PROXIES: list the addresses or "
            "CIDRs of the proxies in front instead of counting them (docs/security.md)."
        )
    proxies = _trusted_proxies(env.get("SENTINEL_TRUSTED_PROXIES", ""))
    if headers["SENTINEL_REMOTE_USER_HEADER"] and not proxies:
        raise ImproperlyConfigured(
            "SENTINEL_REMOTE_USER_HEADER is set but SENTINEL_TRUSTED_PROXIES names no proxy; list "
            "the addresses or CIDRs the SSO proxy connects from, or anyone reaching the app could "
            "send the header and be whoever they name."
        )
    # Off unless named: without a proxy that overwrites it, a client could claim HTTPS.
    proxy_header = env.get("SENTINEL_SECURE_PROXY_SSL_HEADER", "")
    origins = _list(env.get("SENTINEL_CSRF_TRUSTED_ORIGINS", ""))
    for origin in origins:
        _url("SENTINEL_CSRF_TRUSTED_ORIGINS", origin, {"http", "https"})
    hsts = env.get("SENTINEL_HSTS_SECONDS", "31536000").strip()
    if not hsts.isdigit():
        raise ImproperlyConfigured(
            f"SENTINEL_HSTS_SECONDS={hsts!r} is not a whole number of seconds (0 turns HSTS off)."
        )
    return {
        "authz": authz,
        "remote_user_header": headers["SENTINEL_REMOTE_USER_HEADER"],
        "remote_groups_header": headers["SENTINEL_REMOTE_GROUPS_HEADER"],
        "metrics_token": env.get("SENTINEL_METRICS_TOKEN", ""),
        "hsts_seconds": int(hsts),
        "secure_ssl_redirect": _bool(
            "SENTINEL_SECURE_SSL_REDIRECT", env.get("SENTINEL_SECURE_SSL_REDIRECT", "")
        ),
        "secure_proxy_ssl_header": _proxy_header(proxy_header),
        "csrf_trusted_origins": origins,
        "trusted_proxies": proxies,
        "secure_cookies": _bool(
            "SENTINEL_SECURE_COOKIES",
            env.get("SENTINEL_SECURE_COOKIES", "false" if _debug(env) else "true"),
        ),
    }


def _providers_file(raw: str) -> str:
    """Return the providers file's path after checking its schema (secrets: the operator)."""
    path = raw.strip()
    if path:
        from sentinel_operator.provider_config import ProvidersError, parse_file

        try:
            parse_file(path, read_secrets=False)
        except ProvidersError as exc:
            raise ImproperlyConfigured(str(exc)) from None
    return path


def _trusted_proxies(raw: str) -> tuple[str, ...]:
    """Return SENTINEL_TRUSTED_PROXIES's networks as text (``10.0.0.7/32``, ``10.42.0.0/16``)."""
    networks = []
    for item in _list(raw):
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"SENTINEL_TRUSTED_PROXIES: {item!r} is not an IP address or CIDR, e.g. "
                "10.0.0.7 or 10.42.0.0/16."
            ) from None
        if network.prefixlen == 0:
            # Every address: the header and X-Forwarded-For would be anyone's to write.
            raise ImproperlyConfigured(
                f"SENTINEL_TRUSTED_PROXIES: {item!r} trusts every address; name the proxies."
            )
        networks.append(str(network))
    return tuple(networks)


def _debug(env: Mapping[str, str]) -> bool:
    return _bool("SENTINEL_DEBUG", env.get("SENTINEL_DEBUG", ""))


def _header(name: str, raw: str) -> str:
    value = raw.strip()
    if value and not _HTTP_HEADER.match(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not an HTTP header name.")
    return value


def _proxy_header(raw: str) -> tuple[str, str] | None:
    # "X-Forwarded-Proto: https" -> ("HTTP_X_FORWARDED_PROTO", "https"); "" turns it off.
    if not raw.strip():
        return None
    header, _, value = raw.partition(":")
    if not value.strip() or not _HTTP_HEADER.match(header.strip()):
        raise ImproperlyConfigured(
            f"SENTINEL_SECURE_PROXY_SSL_HEADER={raw!r} is not 'Header-Name: value', e.g. "
            "'X-Forwarded-Proto: https'."
        )
    return "HTTP_" + header.strip().upper().replace("-", "_"), value.strip()
