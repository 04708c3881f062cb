"""DRF throttles of the REST API (docs/security.md#abuse-limits): 429 with ``Retry-After``.

``EvaluateThrottle`` limits ``evaluate/`` per user (each call makes the operator query
Prometheus); ``TokenFailureThrottle`` limits failed token authentications per client address
(``accounts.client_address``: behind trusted proxies, the client they report), and is consulted
by ``analyses.api.authentication`` only for a token that did not authenticate. Rates come
from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, read on every request (DRF reads them once
at import), so that a deployment and a test can change them.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from accounts.client_address import client_address


class _LiveRates:
    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # type: ignore[attr-defined]

    def get_ident(self, request: Request) -> str:
        return client_address(request)


class EvaluateThrottle(_LiveRates, UserRateThrottle):
    # Counted per user (per address for the anonymous, who never get this far).
    scope = "evaluate"


class TokenFailureThrottle(_LiveRates, SimpleRateThrottle):
    """Counts failures only: ``blocked`` looks, ``failed`` records one."""

    # Counted per client address (X-Forwarded-For only through SENTINEL_TRUSTED_PROXIES).
    scope = "token_failure"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def blocked(self, request: Request) -> bool:
        """Return whether this client has failed too often within the window."""
        if self.rate is None:
            return False
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def failed(self, request: Request) -> None:
        """Record one failed authentication of this client."""
        if self.rate is None:
            return
        self.blocked(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)
