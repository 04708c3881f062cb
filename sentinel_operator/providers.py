"""The operator's metric providers: one Prometheus-API client each, kept current.

The providers file is described in docs/operations.md#metric-providers.

``Providers`` holds a ``PrometheusClient`` per configured provider, each with its own pooled
``requests.Session`` carrying that provider's headers, credentials and certificates. Before
each evaluation the reconciler calls ``refresh()``: when the providers file or any file it
names (a token, a password, a certificate) changed since it was read, everything is read again
and the clients rebuilt, so a rotated Secret is used by the next evaluation without a restart.
A new version that does not load keeps the previous one in force, logged on one line and
counted in ``sentinel_config_reload_failures_total``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import requests

from sentinel_core import provider as rules
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_operator.prometheus import DEFAULT_MAX_BYTES, PrometheusClient, RequestHook
from sentinel_operator.provider_config import (
    ENV,
    Provider,
    ProvidersError,
    default_provider,
    parse_file,
    with_default,
)

log = logging.getLogger(__name__)

# Called once per HTTP request: provider, HTTP status (or "error"), seconds it took.
ResponseHook = Callable[[str, str, float], None]
# Stat results of the watched files; a change of any of them triggers a reload.
_Stamp = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class _Loaded:
    providers: dict[str, Provider]
    clients: dict[str, PrometheusClient]
    stamp: _Stamp


class Providers:
    """Every configured provider and its client; thread-safe, one per worker process."""

    def __init__(
        self,
        *,
        path: str = "",
        default_url: str,
        default_token: str = "",
        timeout: float = 5.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_request: RequestHook | None = None,
        on_response: ResponseHook | None = None,
        on_reload_failure: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self._default = (default_url, default_token)
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._on_request = on_request
        self._on_response = on_response
        self._on_reload_failure = on_reload_failure
        self._lock = threading.Lock()
        self._loaded = self._first_load()

    @classmethod
    def single(cls, client: PrometheusClient) -> Providers:
        """Return providers with ``client`` as ``default`` and nothing else (tests, bench)."""
        self = cls.__new__(cls)
        self.path = ""
        self._lock = threading.Lock()
        self._on_reload_failure = None
        provider = default_provider(client.base_url, "")
        self._loaded = _Loaded({provider.name: provider}, {provider.name: client}, ())
        return self

    @property
    def default(self) -> PrometheusClient:
        return self._loaded.clients[rules.DEFAULT_PROVIDER]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._loaded.providers)

    def refresh(self) -> bool:
        """Reload when a watched file changed; return whether a new version is in force."""
        if not self.path:
            return False
        loaded = self._loaded
        if _stamp(self._watched(loaded)) == loaded.stamp:
            return False
        with self._lock:
            if self._loaded is not loaded:
                return True
            try:
                self._loaded = self._load()
            except ProvidersError as exc:
                # Keep the stamp of the failed version, so it is reported once, not per batch.
                self._loaded = _Loaded(loaded.providers, loaded.clients, _stamp(self._watched()))
                log.error("providers not reloaded, the previous version stays in force: %s", exc)
                if self._on_reload_failure is not None:
                    self._on_reload_failure()
                return False
        log.info("providers reloaded from %s: %s", self.path, ", ".join(self.names))
        return True

    def pick(self, name: str | None, namespace: str) -> PrometheusClient | Measurement:
        """Return the client of ``name`` for ``namespace``, or the refusal as a measurement.

        The refusal has no metric name yet; the caller fills it in.
        """
        loaded = self._loaded
        known = {p.name: p.namespaces for p in loaded.providers.values()}
        refused = rules.refusal(name or rules.DEFAULT_PROVIDER, namespace, known)
        if refused is not None:
            reason, message = refused
            return Measurement(metric="", error=MeasurementError(reason), message=message)
        return loaded.clients[name or rules.DEFAULT_PROVIDER]

    def allowed(self, namespace: str) -> tuple[str, ...]:
        """Return the names of the providers ``namespace`` may use."""
        return tuple(
            p.name
            for p in self._loaded.providers.values()
            if rules.namespace_allowed(p.namespaces, namespace)
        )

    # -- loading ---------------------------------------------------------------------------

    def _first_load(self) -> _Loaded:
        """Load the file; a worker started after it broke keeps ``default`` working.

        ``runoperator`` refuses to start with a broken file (``check_at_start``); a worker
        process built later (django-q2 recycles them) has no previous version to keep, so it
        runs with ``default`` alone until the file loads again, and says so once.
        """
        try:
            return self._load()
        except ProvidersError as exc:
            if not self.path:
                raise
            log.error("providers not loaded, only 'default' is in force until it loads: %s", exc)
            if self._on_reload_failure is not None:
                self._on_reload_failure()
            url, token = self._default
            fallback = default_provider(url, token)
            return _Loaded(
                {fallback.name: fallback},
                {fallback.name: self._client(fallback)},
                _stamp((self.path,)),
            )

    def _watched(self, loaded: _Loaded | None = None) -> tuple[str, ...]:
        providers = (loaded or self._loaded).providers.values()
        return (self.path, *sorted({f for p in providers for f in p.files}))

    def _load(self) -> _Loaded:
        url, token = self._default
        found = parse_file(self.path) if self.path else ()
        providers = with_default(found, url, token)
        clients = {p.name: self._client(p) for p in providers}
        by_name = {p.name: p for p in providers}
        files = (self.path, *sorted({f for p in providers for f in p.files})) if self.path else ()
        return _Loaded(by_name, clients, _stamp(files))

    def _client(self, provider: Provider) -> PrometheusClient:
        session = requests.Session()
        session.headers.update(dict(provider.headers))
        if provider.password:
            session.auth = requests.auth.HTTPBasicAuth(provider.username, provider.password)
        if provider.ca_file:
            session.verify = provider.ca_file
        if provider.cert_file and provider.key_file:
            session.cert = (provider.cert_file, provider.key_file)
        name = provider.name
        hook = self._on_response

        def on_response(code: str, seconds: float) -> None:
            if hook is not None:
                hook(name, code, seconds)

        return PrometheusClient(
            provider.url,
            token=provider.token,
            timeout=provider.timeout or self._timeout,
            session=session,
            on_request=self._on_request,
            max_bytes=self._max_bytes,
            # The default provider's messages stay as they were before providers existed.
            provider="" if name == rules.DEFAULT_PROVIDER else name,
            secrets=provider.secrets,
            on_response=on_response,
        )


def _stamp(paths: tuple[str, ...]) -> _Stamp:
    stamps = []
    for path in paths:
        try:
            # stat() follows symlinks: a Secret volume swaps its ..data link on rotation.
            info = os.stat(path)
            stamps.append((path, info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append((path, -1, -1))
    return tuple(stamps)


def check_at_start(path: str) -> None:
    """Raise ProvidersError when SENTINEL_PROVIDERS_FILE names an unusable file."""
    if path:
        parse_file(path)


__all__ = ["ENV", "Providers", "ProvidersError", "check_at_start"]
