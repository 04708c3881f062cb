"""Who sent a request: the socket's peer, or the client the trusted proxies report.

``SENTINEL_TRUSTED_PROXIES`` (addresses and CIDRs, docs/security.md#proxies-in-front) names the
proxies in front of the web app: the ingress controller, an SSO proxy. ``from_trusted_proxy``
says whether a request's socket peer is one of them; only such a request may carry the SSO
proxy's user header (``accounts.sso``). ``client_address`` is what the login and token-failure
lockouts count by: behind trusted proxies, the rightmost ``X-Forwarded-For`` hop that is not
itself a trusted proxy — the address the outermost trusted proxy saw. Hops left of it were
written by the client and are never believed, so inventing the header makes no new client.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(names: tuple[str, ...]) -> tuple[_Network, ...]:
    # Checked at start-up (sentinel_site.config); parsed once per distinct setting.
    return tuple(ipaddress.ip_network(name, strict=False) for name in names)


def _trusted() -> tuple[_Network, ...]:
    return _networks(tuple(getattr(settings, "SENTINEL_TRUSTED_PROXIES", ())))


def _parse(text: str) -> _Address | None:
    """Return the address of one hop (``203.0.113.9``, ``[2001:db8::1]:443``); None if garbled."""
    hop = text.strip()
    if hop.startswith("["):
        hop = hop[1:].partition("]")[0]
    elif hop.count(":") == 1:
        hop = hop.partition(":")[0]  # IPv4 with a port, as some proxies write it
    try:
        address = ipaddress.ip_address(hop)
    except ValueError:
        return None
    # An IPv4 client reaching an IPv6 socket is ::ffff:a.b.c.d; compare it as IPv4.
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _is_trusted(address: _Address | None, networks: tuple[_Network, ...]) -> bool:
    return address is not None and any(address in network for network in networks)


def from_trusted_proxy(request: Any) -> bool:
    """Return whether ``request`` came straight from a proxy of ``SENTINEL_TRUSTED_PROXIES``."""
    return _is_trusted(_parse(request.META.get("REMOTE_ADDR", "")), _trusted())


def client_address(request: Any) -> str:
    """Return the address ``request`` is counted under by the lockouts.

    The socket's peer, unless that is a trusted proxy: then ``X-Forwarded-For`` is read from
    the right, past every trusted hop, and the first other hop is the client. A garbled hop
    ends the walk at the last trusted one (it was not written by a proxy we trust).
    """
    remote = request.META.get("REMOTE_ADDR", "")
    networks = _trusted()
    peer = _parse(remote)
    if not _is_trusted(peer, networks):
        return str(peer) if peer is not None else remote
    client: _Address = peer  # type: ignore[assignment]
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    for hop in reversed(forwarded.split(",")):
        address = _parse(hop)
        if address is None:
            break
        client = address
        if not _is_trusted(address, networks):
            break
    return str(client)
