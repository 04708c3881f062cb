"""Bearer-token authentication for devcluster: the admin token and ServiceAccount tokens.

The HTTP layer (``devcluster.server``) builds one :class:`Authenticator` at start-up,
calls :meth:`Authenticator.authenticate` with each request's ``Authorization`` header
(``None`` from it means 401) and :meth:`Authenticator.issue_token` for the TokenRequest
subresource (``kubectl create token SA``).

ServiceAccount tokens are self-contained HS256 JWTs carrying the claims a real
kube-apiserver puts in bound tokens (``sub``, ``aud``, ``exp``, ``kubernetes.io``). They
are bound to the ServiceAccount's uid, so deleting and recreating the account revokes
every token issued for the old one, as on a real cluster.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ISSUER = "https://kubernetes.default.svc.cluster.local"
# What kube-apiserver accepts by default (--api-audiences defaults to the issuer); a
# TokenRequest without audiences gets these.
API_AUDIENCES: tuple[str, ...] = (ISSUER,)
# kube-apiserver tolerates this much clock skew on "nbf"/"iat".
NOT_BEFORE_LEEWAY = dt.timedelta(seconds=60)
KEY_FILE = "serviceaccount-signing.key"
KEY_BYTES = 32
_SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    """The authenticated identity of a request, as Kubernetes' user.Info."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # user.Info's extra, as (key, values) pairs so that the identity stays hashable.
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


# The extra a ServiceAccount token's user gets: which credential (JWT ID) authenticated it.
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"

ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True)
class TokenClaims:
    """The verified content of a ServiceAccount token."""

    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    issued_at: dt.datetime
    expires_at: dt.datetime
    token_id: str = ""  # the jti claim


def serviceaccount_user(namespace: str, name: str, uid: str = "", token_id: str = "") -> UserInfo:
    """Return the identity Kubernetes gives a ServiceAccount (authenticated by ``token_id``)."""
    return UserInfo(
        f"{_SA_PREFIX}{namespace}:{name}",
        uid,
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        ((CREDENTIAL_ID, (f"JTI={token_id}",)),) if token_id else (),
    )


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Authenticator:
    """Turn ``Authorization`` headers into :class:`UserInfo`; sign ServiceAccount tokens."""

    def __init__(
        self,
        signing_key: bytes,
        admin_token: str,
        *,
        clock: Callable[[], dt.datetime] = _utcnow,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        api_audiences: Sequence[str] = API_AUDIENCES,
    ) -> None:
        if len(signing_key) < 16:
            raise ValueError("The ServiceAccount signing key must be at least 16 bytes long.")
        if not admin_token:
            raise ValueError("The admin token must not be empty.")
        self._key = signing_key
        self._admin_token = admin_token
        self._clock = clock
        self._random_bytes = random_bytes
        self.api_audiences = tuple(api_audiences)
        # A key id lets a token be told apart from one signed by another devcluster's
        # key without revealing anything about the key.
        self._kid = _b64encode(hashlib.sha256(b"kid:" + signing_key).digest()[:12])

    def authenticate(
        self,
        authorization: str | None,
        serviceaccount_uid: Callable[[str, str], str | None],
        *,
        now: dt.datetime | None = None,
    ) -> UserInfo | None:
        """Return the user a request's ``Authorization`` header proves, or None (401).

        ``serviceaccount_uid(namespace, name)`` returns the ServiceAccount's current uid
        or None when it does not exist; a token for another uid is rejected.
        """
        token = bearer_token(authorization)
        if token is None:
            return None
        if hmac.compare_digest(token.encode(), self._admin_token.encode()):
            return UserInfo("admin", groups=("system:masters", "system:authenticated"))
        claims = self.verify(token, now=now)
        if claims is None:
            return None
        if serviceaccount_uid(claims.namespace, claims.name) != claims.uid:
            return None
        return serviceaccount_user(claims.namespace, claims.name, claims.uid, claims.token_id)

    def verify(self, token: str, *, now: dt.datetime | None = None) -> TokenClaims | None:
        """Return the claims of a ServiceAccount token signed by this key, or None.

        Checks the signature, the time window and that an audience is one the API
        server accepts; whether the ServiceAccount still exists is up to the caller.
        """
        payload = self._verified_payload(token)
        if payload is None:
            return None
        try:
            claims = _claims(payload)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        moment = now if now is not None else self._clock()
        if moment >= claims.expires_at or moment + NOT_BEFORE_LEEWAY < claims.issued_at:
            return None
        if not set(claims.audiences) & set(self.api_audiences):
            return None
        if payload.get("sub") != f"{_SA_PREFIX}{claims.namespace}:{claims.name}":
            return None
        return claims

    def issue_token(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        expiration_seconds: int,
        audiences: Sequence[str],
        now: dt.datetime,
    ) -> tuple[str, dt.datetime]:
        """Sign a token for a ServiceAccount; return it and its expirationTimestamp.

        Empty ``audiences`` mean the API server's own, as in a TokenRequest.
        """
        if expiration_seconds <= 0:
            raise ValueError("expiration_seconds must be positive.")
        issued = now.replace(microsecond=0)
        expires = issued + dt.timedelta(seconds=expiration_seconds)
        payload = {
            "aud": list(audiences) or list(self.api_audiences),
            "exp": int(expires.timestamp()),
            "iat": int(issued.timestamp()),
            "iss": ISSUER,
            # A random (version 4) UUID, as kube-apiserver's token generator makes it.
            "jti": str(uuid.UUID(bytes=self._random_bytes(16), version=4)),
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": name, "uid": uid},
            },
            "nbf": int(issued.timestamp()),
            "sub": f"{_SA_PREFIX}{namespace}:{name}",
        }
        header = {"alg": "HS256", "kid": self._kid, "typ": "JWT"}
        signing_input = f"{_b64json(header)}.{_b64json(payload)}"
        return f"{signing_input}.{self._sign(signing_input)}", expires

    def _sign(self, signing_input: str) -> str:
        return _b64encode(hmac.new(self._key, signing_input.encode(), hashlib.sha256).digest())

    def _verified_payload(self, token: str) -> dict[str, Any] | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        signing_input = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._sign(signing_input).encode(), parts[2].encode()):
            return None
        try:
            header = json.loads(_b64decode(parts[0]))
            payload = json.loads(_b64decode(parts[1]))
        except (ValueError, binascii.Error):
            return None
        # The signature already proves we wrote it; checking alg still refuses a token
        # whose header someone managed to get signed with another meaning.
        if not isinstance(header, dict) or header.get("alg") != "HS256":
            return None
        return payload if isinstance(payload, dict) else None


def bearer_token(authorization: str | None) -> str | None:
    """Return the token of a ``Bearer`` header the way kube-apiserver parses it."""
    if authorization is None:
        return None
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def load_or_create_key(
    data_dir: Path | None, *, random_bytes: Callable[[int], bytes] = secrets.token_bytes
) -> bytes:
    """Return the ServiceAccount signing key, kept in ``data_dir`` when one is given.

    Without a data dir every start gets a fresh key, so tokens die with the process
    just as the objects do.
    """
    if data_dir is None:
        return random_bytes(KEY_BYTES)
    path = Path(data_dir) / KEY_FILE
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    if len(key) >= KEY_BYTES:
        return key
    key = random_bytes(KEY_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return key


def _claims(payload: Mapping[str, Any]) -> TokenClaims:
    k8s = payload["kubernetes.io"]
    account = k8s["serviceaccount"]
    audiences = payload["aud"]
    if isinstance(audiences, str):
        audiences = [audiences]
    values = (k8s["namespace"], account["name"], account["uid"], *audiences)
    if not all(isinstance(value, str) for value in values):
        raise TypeError("token claims must be strings")
    return TokenClaims(
        namespace=k8s["namespace"],
        name=account["name"],
        uid=account["uid"],
        audiences=tuple(audiences),
        issued_at=dt.datetime.fromtimestamp(int(payload.get("nbf", payload["iat"])), dt.UTC),
        expires_at=dt.datetime.fromtimestamp(int(payload["exp"]), dt.UTC),
        token_id=str(payload.get("jti") or ""),
    )


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64json(value: Mapping[str, Any]) -> str:
    return _b64encode(json.dumps(value, separators=(",", ":"), sort_keys=True).encode())
