"""Abuse limits of the web app: sizes, nesting, throttles, tokens, auth on docs.

The limits are those of docs/security.md#abuse-limits.

Over HTTP against the live server like the other API tests. Throttle rates are lowered through
``REST_FRAMEWORK`` for the test, and Django's cache (where DRF keeps throttle history) is
cleared first, so that earlier tests' requests do not count.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts import tokens
from accounts.models import ApiToken
from analyses.api.parsers import BoundedJSONParser, PayloadTooLarge
from testkit.manifests import analysis_spec as spec
from tests.api.client import ALL_PERMISSIONS, Api, MakeApi, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def _rates(settings: Any, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"evaluate": "30/min", "token_failure": "60/min", **rates},
    }


def test_a_body_over_one_mib_is_413_and_writes_nothing(api: Api, namespace: str) -> None:
    body = {"namespace": namespace, "name": "big", "spec": spec(), "padding": "x" * (1 << 20)}
    response = api.post("analyses/", json=body)
    assert response.status_code == 413, response.text
    assert response.json()["code"] == "payload_too_large"
    assert api.get(f"analyses/{namespace}/big/").status_code == 404


def test_a_body_without_length_is_capped_by_the_parser() -> None:
    # Chunked bodies announce no length; the parser stops reading past the limit.
    with pytest.raises(PayloadTooLarge):
        BoundedJSONParser().parse(io.BytesIO(b'"' + b"x" * (1 << 20) + b'"'))


def test_brackets_inside_strings_are_not_nesting() -> None:
    # PromQL is full of brackets ("rate(x[5m])"); only JSON structure counts toward the depth.
    body = {"query": "[" * 1000 + '\\"{' * 100, "nested": [[[[{"ok": True}]]]]}
    parsed = BoundedJSONParser().parse(io.BytesIO(json.dumps(body).encode()))
    assert parsed == body


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"namespace": ',
        b"\xff\xfe not utf-8",
        b'{"spec": NaN}',
    ],
    ids=["deep-list", "deep-object", "truncated", "not-utf8", "nan"],
)
def test_malformed_or_deep_json_is_400_never_500(api: Api, raw: bytes) -> None:
    response = api.post("analyses/", data=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    assert response.json()["code"] == "parse_error"


def test_evaluate_is_throttled_with_retry_after(api: Api, namespace: str, settings: Any) -> None:
    _rates(settings, evaluate="2/min")
    created = api.post("analyses/", json={"namespace": namespace, "name": "a", "spec": spec()})
    assert created.status_code == 201, created.text
    answers = [api.post(f"analyses/{namespace}/a/evaluate/") for _ in range(3)]
    assert [r.status_code for r in answers] == [202, 202, 429]
    assert 1 <= int(answers[2].headers["Retry-After"]) <= 60
    assert answers[2].json()["code"] == "throttled"


def test_token_failures_are_throttled_with_retry_after(
    make_api: MakeApi, live_server: Any, settings: Any
) -> None:
    _rates(settings, token_failure="3/min")
    wrong = Api(f"{live_server.url}/api/v1/", {"Authorization": "Token rs_" + "0" * 64})
    codes = [wrong.get("analyses/").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    refused = wrong.get("analyses/")
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    # Requests without a token (sessions, anonymous) are not what this throttle counts.
    assert requests.get(f"{live_server.url}/api/v1/analyses/", timeout=10).status_code == 401
    # An invented X-Forwarded-For does not make a new client (no proxy is configured).
    spoofed = wrong.get("analyses/", headers={"X-Forwarded-For": "203.0.113.9"})
    assert spoofed.status_code == 429


def test_a_valid_token_is_never_blocked_by_others_bad_ones(
    make_api: MakeApi, live_server: Any, settings: Any
) -> None:
    """Failures are throttled, a correct token never: 429 for the guesses, 200 for the holder."""
    _rates(settings, token_failure="3/min")
    base = f"{live_server.url}/api/v1/"
    wrong = Api(base, {"Authorization": "Token rs_" + "0" * 64})
    assert [wrong.get("analyses/").status_code for _ in range(4)] == [401, 401, 401, 429]
    # Same address (the live server sees 127.0.0.1 for both), a valid token: answered.
    assert make_api(*ALL_PERMISSIONS).get("analyses/").status_code == 200
    assert wrong.get("analyses/").status_code == 429


def test_token_failures_behind_trusted_proxies_count_per_client(
    make_api: MakeApi, live_server: Any, settings: Any
) -> None:
    """Behind an ingress (127.0.0.1 here) each client has its own count, from X-Forwarded-For."""
    _rates(settings, token_failure="3/min")
    settings.SENTINEL_TRUSTED_PROXIES = ("127.0.0.1",)
    wrong = Api(f"{live_server.url}/api/v1/", {"Authorization": "Token rs_" + "0" * 64})

    def status(client: str) -> int:
        # The client's own invented hop comes first; the proxy appended the peer it saw.
        return wrong.get(
            "analyses/", headers={"X-Forwarded-For": f"192.0.2.1, {client}"}
        ).status_code

    assert [status("203.0.113.9") for _ in range(4)] == [401, 401, 401, 429]
    assert status("203.0.113.10") == 401  # another client: not locked out
    # Without the trust, the same header is the proxy's own address for everyone.
    settings.SENTINEL_TRUSTED_PROXIES = ()
    cache.clear()
    assert [status(f"203.0.113.{n}") for n in range(4)] == [401, 401, 401, 429]


def test_an_expired_token_no_longer_authenticates(live_server: Any) -> None:
    user = make_user(*ALL_PERMISSIONS)
    now = timezone.now()
    expired = tokens.issue(user, now=now - timedelta(days=2), expires_in=timedelta(days=1))
    valid = tokens.issue(user, now=now, expires_in=timedelta(days=1))
    base = f"{live_server.url}/api/v1/"
    answer = Api(base, {"Authorization": f"Token {expired.plaintext}"}).get("analyses/")
    assert answer.status_code == 401
    assert "expired" in answer.json()["detail"]
    assert Api(base, {"Authorization": f"Token {valid.plaintext}"}).get("analyses/").ok


def test_create_api_token_takes_expires_in(capsys: pytest.CaptureFixture[str]) -> None:
    user = make_user("view_analysis")
    before = timezone.now()
    call_command("create_api_token", user.get_username(), "--expires-in", "90d")
    plaintext = capsys.readouterr().out.strip()
    token = tokens.check(plaintext, now=timezone.now())
    assert token is not None and token.expires_at is not None
    assert timedelta(days=90) <= token.expires_at - before < timedelta(days=90, minutes=1)
    with pytest.raises(CommandError, match="--expires-in"):
        call_command("create_api_token", user.get_username(), "--expires-in", "soon")


def test_a_revoked_token_stays_revoked() -> None:
    user = make_user("view_analysis")
    issued = tokens.issue(user, now=timezone.now())
    ApiToken.objects.filter(pk=issued.token.pk).update(revoked=True)
    row = ApiToken.objects.get(pk=issued.token.pk)
    row.revoked = False
    row.save()
    assert ApiToken.objects.get(pk=row.pk).revoked is True
    assert tokens.check(issued.plaintext, now=timezone.now()) is None


@pytest.mark.parametrize("path", ["schema/", "schema/docs/"])
def test_the_schema_and_its_docs_need_a_login(
    path: str, make_api: MakeApi, live_server: Any
) -> None:
    assert make_api(None).get(path).status_code == 401
    assert make_api("view_analysis").get(path).status_code == 200


def test_unknown_api_paths_are_401_without_credentials(make_api: MakeApi) -> None:
    anonymous = make_api(None).get("no-such-endpoint/")
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "not_authenticated"
    known = make_api("view_analysis").get("no-such-endpoint/")
    assert known.status_code == 404 and known.json()["code"] == "not_found"


def test_metrics_needs_the_token_or_is_not_served(live_server: Any, settings: Any) -> None:
    url = f"{live_server.url}/metrics"
    assert requests.get(url, timeout=10).status_code == 404
    settings.SENTINEL_METRICS_TOKEN = "scrape-me"
    assert requests.get(url, timeout=10).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert requests.get(url, headers=wrong, timeout=10).status_code == 401
    right = {"Authorization": "Bearer scrape-me"}
    answer = requests.get(url, headers=right, timeout=10)
    assert answer.status_code == 200
    assert "sentinel_" in answer.text
