"""Single sign-on behind an authenticating proxy, on Django's remote-user machinery.

How to run it safely: docs/security.md#running-behind-an-sso-proxy.

With ``SENTINEL_REMOTE_USER_HEADER`` set (e.g. ``X-Forwarded-User``), ``ProxyUserMiddleware``
logs in the user the proxy names, creating it on first sight, and ``ProxyUserBackend`` syncs
the user's Django groups with ``SENTINEL_REMOTE_GROUPS_HEADER`` (comma-separated) at each login.
Unset (the default), the middleware does nothing. The headers are believed only on a request
whose socket peer is one of ``SENTINEL_TRUSTED_PROXIES`` (``accounts.client_address``); from
anywhere else they are dropped before Django's middleware looks, so such a request is treated as
carrying none. The proxy MUST still strip these headers from what clients send: whoever can set
the header through it is whoever they claim to be (docs/security.md).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware
from django.contrib.auth.models import Group
from django.http import HttpRequest

from accounts.client_address import from_trusted_proxy

# Groups past this many are ignored: a header is not a way to create thousands of rows.
_MAX_GROUPS = 100


def _meta_key(header: str) -> str:
    return "HTTP_" + header.upper().replace("-", "_")


class ProxyUserMiddleware(RemoteUserMiddleware):
    """``RemoteUserMiddleware`` reading the header named by ``SENTINEL_REMOTE_USER_HEADER``."""

    @property  # type: ignore[override]
    def header(self) -> str:
        return _meta_key(settings.SENTINEL_REMOTE_USER_HEADER)

    def process_request(self, request: HttpRequest) -> None:
        if not getattr(settings, "SENTINEL_REMOTE_USER_HEADER", ""):
            return None
        _drop_unless_trusted(request)
        return super().process_request(request)

    async def aprocess_request(self, request: HttpRequest) -> None:
        if not getattr(settings, "SENTINEL_REMOTE_USER_HEADER", ""):
            return None
        _drop_unless_trusted(request)
        return await super().aprocess_request(request)


def _drop_unless_trusted(request: HttpRequest) -> None:
    """Remove the proxy's headers from a request that did not come from a trusted proxy."""
    if from_trusted_proxy(request):
        return
    for name in ("SENTINEL_REMOTE_USER_HEADER", "SENTINEL_REMOTE_GROUPS_HEADER"):
        header = getattr(settings, name, "")
        if header:
            request.META.pop(_meta_key(header), None)


class ProxyUserBackend(RemoteUserBackend):
    """Users named by the proxy; their groups follow ``SENTINEL_REMOTE_GROUPS_HEADER``."""

    def configure_user(self, request: Any, user: Any, created: bool = True) -> Any:
        header = getattr(settings, "SENTINEL_REMOTE_GROUPS_HEADER", "")
        if created:
            # Only the proxy vouches for this user; no password can log it in.
            user.set_unusable_password()
            user.save(update_fields=["password"])
        if header and request is not None:
            raw = request.META.get(_meta_key(header), "")
            names = sorted({name.strip() for name in raw.split(",") if name.strip()})
            user.groups.set(
                [Group.objects.get_or_create(name=name[:150])[0] for name in names[:_MAX_GROUPS]]
            )
        return user
