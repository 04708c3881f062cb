"""Issue and check REST API tokens (docs/api.md#authentication-and-errors).

``create_api_token`` (the management command) calls ``issue``; the DRF authentication class
``analyses.api.authentication.ApiTokenAuthentication`` calls ``check``. A token is shown once,
when issued; only its sha256 digest is stored, so a database dump reveals no usable token.
Revoking is a flag on the row (or deleting it) in the admin.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.base_user import AbstractBaseUser

from accounts.models import ApiToken

# Marks the string as ours (secret scanners and people recognise it); not part of the secret.
TOKEN_PREFIX = "rs_"
# 32 random bytes: 256 bits, the same strength as the digest that stores it.
_SECRET_BYTES = 32
# Characters of the plaintext kept on the row to recognise a token ("rs_AbCd1234").
_SHOWN = 11
# ``last_used_at`` is refreshed at most this often, so authenticating is normally read-only.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedToken:
    """A new token: the row, and the plaintext that exists only in this object."""

    token: ApiToken
    plaintext: str


def digest(plaintext: str) -> str:
    """Return the stored form of ``plaintext``."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def issue(
    user: AbstractBaseUser,
    *,
    now: datetime,
    name: str = "",
    expires_in: timedelta | None = None,
    random_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> IssuedToken:
    """Create a token for ``user`` and return it with its plaintext (never stored)."""
    secret = random_bytes(_SECRET_BYTES).hex()
    plaintext = f"{TOKEN_PREFIX}{secret}"
    row = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=plaintext[:_SHOWN],
        digest=digest(plaintext),
        created_at=now,
        expires_at=now + expires_in if expires_in is not None else None,
    )
    return IssuedToken(token=row, plaintext=plaintext)


def check(plaintext: str, *, now: datetime) -> ApiToken | None:
    """Return the live token matching ``plaintext``, or None when unknown, expired or revoked.

    Malformed input yields None, never an exception; the user must still be checked for
    ``is_active`` by the caller.
    """
    if not plaintext.startswith(TOKEN_PREFIX) or len(plaintext) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest(plaintext), revoked=False)
        .first()
    )
    if token is None or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= _LAST_USED_RESOLUTION:
        # A single UPDATE: no read-modify-write race, and only once a minute per token.
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
