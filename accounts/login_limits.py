"""Throttled admin logins (docs/security.md#abuse-limits).

``sentinel_site.admin_site`` installs ``ThrottledLoginForm`` as the admin site's login form.
After ``SENTINEL_LOGIN_ATTEMPTS`` failures within ``SENTINEL_LOGIN_WINDOW_SECONDS`` for one
username, or from one client address, further attempts are refused without checking the
password, until the window has passed. The address is the client the trusted proxies report
(``accounts.client_address``), not the ingress controller every request arrives from. Counts
live in Django's cache (per web process).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError

from accounts.client_address import client_address

_PREFIX = "sentinel-login-failures"


class ThrottledLoginForm(AdminAuthenticationForm):
    """The admin's login form, refusing a username or address that failed too often."""

    def clean(self) -> dict[str, Any]:
        keys = self._keys()
        limit = int(getattr(settings, "SENTINEL_LOGIN_ATTEMPTS", 5))
        if any(cache.get(key, 0) >= limit for key in keys):
            minutes = max(1, int(getattr(settings, "SENTINEL_LOGIN_WINDOW_SECONDS", 300)) // 60)
            raise ValidationError(
                f"Too many failed logins; try again in {minutes} minutes.", code="throttled"
            )
        try:
            return super().clean()
        except ValidationError:
            window = int(getattr(settings, "SENTINEL_LOGIN_WINDOW_SECONDS", 300))
            for key in keys:
                cache.add(key, 0, window)
                cache.incr(key)
            raise

    def _keys(self) -> list[str]:
        username = str(self.data.get("username", ""))[:150].lower()
        address = client_address(self.request) if self.request else ""
        return [f"{_PREFIX}:user:{username}", f"{_PREFIX}:addr:{address}"]
