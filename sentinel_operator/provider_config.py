"""The providers file (SENTINEL_PROVIDERS_FILE, docs/operations.md#metric-providers): its schema.

``sentinel_config.files`` reads it, as it reads the notification channels: one line per mistake,
naming the file, the provider and the field.

Every address and secret of a metric provider is the operator's configuration, never a
resource's: a resource names a provider, this file says where it is, how to authenticate and
which namespaces may use it. Secrets are paths to files (mounted from Secrets), read when the
file is loaded, so that rotating a Secret needs no restart (``providers.Providers``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from sentinel_config import files as config_files
from sentinel_core.provider import DEFAULT_PROVIDER, MAX_PROVIDER_NAME_LENGTH

ENV = "SENTINEL_PROVIDERS_FILE"
_HEADER = re.compile(r"^[A-Za-z0-9-]+$")
# Credentials go in files; a header holding one would sit in a ConfigMap in plain text.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_DURATION = re.compile(r"^(?P<value>\d+(\.\d+)?)(?P<unit>ms|s|m)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}
_MAX_TIMEOUT = 300.0
# A secret file larger than this is a wrong path, not a token.
_MAX_SECRET_BYTES = 64 * 1024


# The providers file is unusable; ``str()`` is the one line to log or exit with.
ProvidersError = config_files.ConfigFileError


class BasicAuth(config_files.Strict):
    username: Annotated[str, Field(min_length=1)]
    password_file: str = Field(alias="passwordFile", min_length=1)


class TLS(config_files.Strict):
    ca_file: str | None = Field(default=None, alias="caFile", min_length=1)
    cert_file: str | None = Field(default=None, alias="certFile", min_length=1)
    key_file: str | None = Field(default=None, alias="keyFile", min_length=1)

    @model_validator(mode="after")
    def _pair(self) -> TLS:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("certFile and keyFile go together (a client certificate and its key)")
        return self


class ProviderModel(config_files.Strict):
    name: str = Field(
        min_length=1,
        max_length=MAX_PROVIDER_NAME_LENGTH,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    )
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token_file: str | None = Field(default=None, alias="bearerTokenFile", min_length=1)
    basic_auth: BasicAuth | None = Field(default=None, alias="basicAuth")
    tls: TLS | None = None
    timeout: float | None = None
    namespaces: list[Annotated[str, Field(min_length=1)]] | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be a http or https URL")
        if parts.username or parts.password:
            raise ValueError("may not carry user:password; use basicAuth with a passwordFile")
        return value.rstrip("/")

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER.match(name) or "\n" in text or "\r" in text:
                raise ValueError(f"{name!r} is not an HTTP header name with a one-line value")
            if name.lower() in _CREDENTIAL_HEADERS:
                raise ValueError(
                    f"{name!r} carries credentials; use bearerTokenFile or basicAuth instead"
                )
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> float | None:
        if value is None:
            return None
        match = _DURATION.match(str(value).strip())
        seconds = float(match["value"]) * _UNIT[match["unit"]] if match else -1.0
        if not 0 < seconds <= _MAX_TIMEOUT:
            raise ValueError(f"must be a duration above 0 and at most {_MAX_TIMEOUT:g}s, e.g. 10s")
        return seconds

    @model_validator(mode="after")
    def _one_auth(self) -> ProviderModel:
        if self.bearer_token_file is not None and self.basic_auth is not None:
            raise ValueError("bearerTokenFile and basicAuth are exclusive; give one")
        return self


class ProvidersModel(config_files.Strict):
    providers: list[ProviderModel] = Field(min_length=1)


@dataclass(frozen=True)
class Provider:
    """One provider, its secrets read (never shown: ``repr`` hides them)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    token: str = field(default="", repr=False)
    username: str = ""
    password: str = field(default="", repr=False)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    timeout: float | None = None
    # None: every watched namespace may use it.
    namespaces: tuple[str, ...] | None = None
    # Every file the provider depends on, watched for changes (token rotation).
    files: tuple[str, ...] = ()

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.token, self.password) if s)


def parse_file(path: str, *, read_secrets: bool = True) -> tuple[Provider, ...]:
    """Return the providers of the file at ``path``; raise ProvidersError with one line.

    ``read_secrets`` False checks the schema only (the web app, which mounts no Secret, only
    needs names and namespaces).
    """
    entries = config_files.Entries(ENV, path, "providers", "provider")
    model = config_files.read(path, ProvidersModel, entries)
    config_files.check_unique([item.name for item in model.providers], entries)
    return tuple(_provider(entries.where, item, read_secrets) for item in model.providers)


def _provider(where: str, item: ProviderModel, read_secrets: bool) -> Provider:
    def secret(field_name: str, path: str) -> str:
        if not read_secrets:
            return ""
        return _read_secret(f"{where}: provider {item.name!r} field {field_name}", path)

    tls = item.tls or TLS()
    files = [f for f in (item.bearer_token_file, tls.ca_file, tls.cert_file, tls.key_file) if f]
    if item.basic_auth is not None:
        files.append(item.basic_auth.password_file)
    if read_secrets:
        for name, path in (("tls.caFile", tls.ca_file), ("tls.certFile", tls.cert_file)):
            if path is not None:
                _read_secret(f"{where}: provider {item.name!r} field {name}", path)
        if tls.key_file is not None:
            _read_secret(f"{where}: provider {item.name!r} field tls.keyFile", tls.key_file)
    return Provider(
        name=item.name,
        url=item.url,
        headers=tuple(item.headers.items()),
        token=secret("bearerTokenFile", item.bearer_token_file) if item.bearer_token_file else "",
        username=item.basic_auth.username if item.basic_auth else "",
        password=(
            secret("basicAuth.passwordFile", item.basic_auth.password_file)
            if item.basic_auth
            else ""
        ),
        ca_file=tls.ca_file,
        cert_file=tls.cert_file,
        key_file=tls.key_file,
        timeout=item.timeout,
        namespaces=tuple(item.namespaces) if item.namespaces is not None else None,
        files=tuple(files),
    )


def _read_secret(what: str, path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_SECRET_BYTES + 1)
    except FileNotFoundError:
        raise ProvidersError(f"{what}: file not found") from None
    except OSError as exc:
        raise ProvidersError(f"{what}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > _MAX_SECRET_BYTES:
        raise ProvidersError(f"{what}: larger than {_MAX_SECRET_BYTES // 1024} KiB") from None
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        raise ProvidersError(f"{what}: the file is empty")
    return text


def default_provider(url: str, token: str) -> Provider:
    """Return the ``default`` provider of SENTINEL_PROMETHEUS_URL (and its optional token)."""
    return Provider(name=DEFAULT_PROVIDER, url=url.rstrip("/"), token=token)


def with_default(providers: tuple[Provider, ...], url: str, token: str) -> tuple[Provider, ...]:
    """Add ``default`` from SENTINEL_PROMETHEUS_URL unless the file defines it itself."""
    if any(p.name == DEFAULT_PROVIDER for p in providers):
        return providers
    return (default_provider(url, token), *providers)
