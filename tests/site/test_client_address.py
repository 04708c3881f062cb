"""The client the lockouts count and where the SSO header may come from (accounts.client_address).

Behind trusted proxies the client is the rightmost X-Forwarded-For hop that is not itself a
trusted proxy; what a client writes left of it is never believed, and without trusted proxies
the header is ignored altogether (docs/security.md#proxies-in-front).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from accounts.client_address import client_address, from_trusted_proxy

INGRESS = "10.42.0.0/16"  # the ingress controller's pods


def _request(remote: str, forwarded: str | None = None) -> Any:
    headers = {} if forwarded is None else {"X-Forwarded-For": forwarded}
    return RequestFactory().get("/", REMOTE_ADDR=remote, headers=headers)


@pytest.mark.parametrize(
    ("remote", "forwarded", "client"),
    [
        # No proxy trusted here: the socket's peer, whatever the header says.
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),
        # The ingress appended the peer it saw; what the client invented stays left of it.
        ("10.42.1.5", "198.51.100.1, 203.0.113.9", "203.0.113.9"),
        # Two trusted hops (an SSO proxy behind the ingress): skipped from the right.
        ("10.42.1.5", "203.0.113.9, 10.42.3.3", "203.0.113.9"),
        # IPv4 with a port, and IPv6 in brackets with a port, as some proxies write them.
        ("10.42.1.5", "203.0.113.9:51234", "203.0.113.9"),
        ("10.42.1.5", "[2001:db8::7]:443", "2001:db8::7"),
        # A garbled hop ends the walk at the last trusted one: it was not a proxy's write.
        ("10.42.1.5", "203.0.113.9, not-an-address, 10.42.3.3", "10.42.3.3"),
        # A trusted proxy without the header (a probe): the proxy itself.
        ("10.42.1.5", None, "10.42.1.5"),
        # An IPv4 peer on an IPv6 socket is compared as IPv4.
        ("::ffff:10.42.1.5", "203.0.113.9", "203.0.113.9"),
    ],
)
def test_client_address_is_the_rightmost_untrusted_hop(
    settings: Any, remote: str, forwarded: str | None, client: str
) -> None:
    settings.SENTINEL_TRUSTED_PROXIES = (INGRESS,) if remote != "203.0.113.9" else ()
    assert client_address(_request(remote, forwarded)) == client


def test_an_invented_header_makes_no_new_client(settings: Any) -> None:
    settings.SENTINEL_TRUSTED_PROXIES = (INGRESS,)
    invented = {
        client_address(_request("10.42.1.5", f"192.0.2.{n}, 203.0.113.9")) for n in range(9)
    }
    assert invented == {"203.0.113.9"}


def test_only_the_trusted_proxies_are_trusted(settings: Any) -> None:
    settings.SENTINEL_TRUSTED_PROXIES = (INGRESS,)
    assert from_trusted_proxy(_request("10.42.1.5"))
    assert not from_trusted_proxy(_request("10.43.1.5"))
    assert not from_trusted_proxy(_request("garbage"))
    settings.SENTINEL_TRUSTED_PROXIES = ()
    assert not from_trusted_proxy(_request("10.42.1.5"))
