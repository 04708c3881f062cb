"""devcluster.auth: the admin token, ServiceAccount tokens and the signing key."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import stat
from pathlib import Path

import pytest

from devcluster.auth import (
    API_AUDIENCES,
    KEY_FILE,
    Authenticator,
    UserInfo,
    bearer_token,
    load_or_create_key,
)

KEY = b"k" * 32
ADMIN = "admin-token-123"
NOW = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)


class Accounts:
    """ServiceAccounts by (namespace, name) -> uid, the lookup the store provides."""

    def __init__(self) -> None:
        self.uids: dict[tuple[str, str], str] = {}

    def __call__(self, namespace: str, name: str) -> str | None:
        return self.uids.get((namespace, name))


@pytest.fixture
def accounts() -> Accounts:
    found = Accounts()
    found.uids[("sentinel", "operator")] = "uid-1"
    return found


@pytest.fixture
def auth() -> Authenticator:
    return Authenticator(KEY, ADMIN, clock=lambda: NOW)


def _issue(auth: Authenticator, seconds: int = 3600, audiences: tuple[str, ...] = ()) -> str:
    token, _ = auth.issue_token(
        "sentinel", "operator", "uid-1", expiration_seconds=seconds, audiences=audiences, now=NOW
    )
    return token


def _payload(token: str) -> dict[str, object]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_admin_token_is_a_cluster_admin(auth: Authenticator, accounts: Accounts) -> None:
    user = auth.authenticate(f"Bearer {ADMIN}", accounts)
    assert user == UserInfo("admin", groups=("system:masters", "system:authenticated"))


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "BeArEr"])
def test_bearer_scheme_is_case_insensitive(
    auth: Authenticator, accounts: Accounts, scheme: str
) -> None:
    assert auth.authenticate(f"{scheme} {ADMIN}", accounts) is not None


@pytest.mark.parametrize(
    "header",
    [None, "", ADMIN, f"Basic {ADMIN}", "Bearer", "Bearer ", f"Bearer  {ADMIN}", "Bearer wrong"],
)
def test_missing_or_malformed_headers_are_rejected(
    auth: Authenticator, accounts: Accounts, header: str | None
) -> None:
    assert auth.authenticate(header, accounts) is None


def test_bearer_token_parsing_matches_kube_apiserver() -> None:
    assert bearer_token("  Bearer abc  ") == "abc"
    # kube-apiserver splits on single spaces and takes the second field.
    assert bearer_token("Bearer abc def") == "abc"
    assert bearer_token("Bearer\tabc") is None


def test_serviceaccount_token_round_trip(auth: Authenticator, accounts: Accounts) -> None:
    token, expires = auth.issue_token(
        "sentinel", "operator", "uid-1", expiration_seconds=3600, audiences=(), now=NOW
    )
    assert expires == NOW + dt.timedelta(hours=1)
    user = auth.authenticate(f"Bearer {token}", accounts)
    claims = auth.verify(token, now=NOW)
    assert claims is not None
    assert user == UserInfo(
        "system:serviceaccount:sentinel:operator",
        "uid-1",
        ("system:serviceaccounts", "system:serviceaccounts:sentinel", "system:authenticated"),
        # Which token it was, by its JWT ID (a UUID), as kube-apiserver records it.
        (("authentication.kubernetes.io/credential-id", (f"JTI={claims.token_id}",)),),
    )
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", claims.token_id
    )


def test_token_carries_the_claims_of_a_bound_token(auth: Authenticator) -> None:
    payload = _payload(_issue(auth))
    assert payload["sub"] == "system:serviceaccount:sentinel:operator"
    assert payload["aud"] == list(API_AUDIENCES)
    assert payload["kubernetes.io"] == {
        "namespace": "sentinel",
        "serviceaccount": {"name": "operator", "uid": "uid-1"},
    }
    assert payload["exp"] == int(NOW.timestamp()) + 3600
    assert payload["iat"] == int(NOW.timestamp())


def test_token_expires(auth: Authenticator, accounts: Accounts) -> None:
    token = _issue(auth, seconds=600)
    header = f"Bearer {token}"
    assert auth.authenticate(header, accounts, now=NOW + dt.timedelta(seconds=599)) is not None
    assert auth.authenticate(header, accounts, now=NOW + dt.timedelta(seconds=600)) is None
    assert auth.authenticate(header, accounts, now=NOW + dt.timedelta(days=1)) is None


def test_token_from_the_future_is_rejected_beyond_clock_skew(
    auth: Authenticator, accounts: Accounts
) -> None:
    header = f"Bearer {_issue(auth)}"
    assert auth.authenticate(header, accounts, now=NOW - dt.timedelta(seconds=30)) is not None
    assert auth.authenticate(header, accounts, now=NOW - dt.timedelta(minutes=5)) is None


def test_clock_is_used_when_no_time_is_passed(accounts: Accounts) -> None:
    times = [NOW]
    auth = Authenticator(KEY, ADMIN, clock=lambda: times[0])
    header = f"Bearer {_issue(auth, seconds=600)}"
    assert auth.authenticate(header, accounts) is not None
    times[0] = NOW + dt.timedelta(hours=1)
    assert auth.authenticate(header, accounts) is None


def test_tampered_token_is_rejected(auth: Authenticator, accounts: Accounts) -> None:
    header_part, payload_part, signature = _issue(auth).split(".")
    payload = _payload(f"x.{payload_part}.y")
    payload["kubernetes.io"]["namespace"] = "kube-system"  # type: ignore[index]
    payload["sub"] = "system:serviceaccount:kube-system:operator"
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    accounts.uids[("kube-system", "operator")] = "uid-1"
    assert auth.authenticate(f"Bearer {header_part}.{forged}.{signature}", accounts) is None
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert auth.authenticate(f"Bearer {header_part}.{payload_part}.{flipped}", accounts) is None


@pytest.mark.parametrize("token", ["a.b", "a.b.c.d", "...", "!!.??.**", "e30.e30.e30"])
def test_garbage_tokens_are_rejected(auth: Authenticator, accounts: Accounts, token: str) -> None:
    assert auth.authenticate(f"Bearer {token}", accounts) is None


def test_token_signed_with_another_key_is_rejected(accounts: Accounts) -> None:
    other = Authenticator(b"o" * 32, ADMIN, clock=lambda: NOW)
    token = _issue(other)
    assert (
        Authenticator(KEY, ADMIN, clock=lambda: NOW).authenticate(f"Bearer {token}", accounts)
        is None
    )


def test_deleted_serviceaccount_invalidates_its_tokens(
    auth: Authenticator, accounts: Accounts
) -> None:
    header = f"Bearer {_issue(auth)}"
    del accounts.uids[("sentinel", "operator")]
    assert auth.authenticate(header, accounts) is None


def test_recreated_serviceaccount_does_not_accept_old_tokens(
    auth: Authenticator, accounts: Accounts
) -> None:
    header = f"Bearer {_issue(auth)}"
    accounts.uids[("sentinel", "operator")] = "uid-2"
    assert auth.authenticate(header, accounts) is None


def test_token_for_another_audience_is_not_accepted_by_the_api(
    auth: Authenticator, accounts: Accounts
) -> None:
    assert auth.authenticate(f"Bearer {_issue(auth, audiences=('vault',))}", accounts) is None
    both = _issue(auth, audiences=("vault", API_AUDIENCES[0]))
    assert _payload(both)["aud"] == ["vault", API_AUDIENCES[0]]
    assert auth.authenticate(f"Bearer {both}", accounts) is not None


def test_signing_key_persists_in_the_data_dir(tmp_path: Path) -> None:
    first = load_or_create_key(tmp_path)
    assert len(first) == 32
    assert load_or_create_key(tmp_path) == first
    assert stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600


def test_tokens_survive_a_restart_with_the_same_data_dir(
    tmp_path: Path, accounts: Accounts
) -> None:
    before = Authenticator(load_or_create_key(tmp_path), ADMIN, clock=lambda: NOW)
    after = Authenticator(load_or_create_key(tmp_path), "new-admin", clock=lambda: NOW)
    assert after.authenticate(f"Bearer {_issue(before)}", accounts) is not None


def test_without_data_dir_each_key_is_fresh() -> None:
    assert load_or_create_key(None) != load_or_create_key(None)
    assert load_or_create_key(None, random_bytes=lambda n: b"r" * n) == b"r" * 32


def test_truncated_key_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_bytes(b"short")
    key = load_or_create_key(tmp_path, random_bytes=lambda n: b"z" * n)
    assert key == b"z" * 32
    assert (tmp_path / KEY_FILE).read_bytes() == key


def test_weak_configuration_fails_loudly() -> None:
    with pytest.raises(ValueError, match="signing key"):
        Authenticator(b"short", ADMIN)
    with pytest.raises(ValueError, match="admin token"):
        Authenticator(KEY, "")
