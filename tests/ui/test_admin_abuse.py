"""The admin under abuse (docs/security.md, "Abuse limits"): malformed ids, login guessing,
extreme values, SSO.

In-process with Django's test client: the request handling, middleware and admin are real.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import tokens
from accounts.models import ApiToken
from tests.ui import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    # Failed-login counts live in the cache; other tests' failures must not count here.
    cache.clear()
    yield
    cache.clear()


@pytest.mark.parametrize("object_id", ["abc", "1.5", "-1", "%C3%A9"])
def test_a_malformed_object_id_is_404_or_the_missing_redirect_never_500(
    staff_client: Client, object_id: str
) -> None:
    base = f"/admin/analyses/analysis/{object_id}/"
    assert staff_client.get(f"{base}change/").status_code == 302
    assert staff_client.get(f"{base}delete/").status_code == 302
    assert staff_client.get(f"{base}history/").status_code == 302
    assert staff_client.post(f"{base}resume/").status_code == 404
    assert staff_client.post(f"{base}evaluate/").status_code == 404


@pytest.mark.parametrize("max_value", [5e-324, 1.6e308, -1.6e308, 1.7976931348623157e308])
def test_an_extreme_max_value_still_shows_the_page_and_resume(
    staff_client: Client, max_value: float
) -> None:
    row = factories.analysis(
        "checkout",
        metrics=[{"name": "m", "query": "up", "maxValue": max_value}],
        status_=factories.status(verdict="Fail", failures=3, paused=True),
    )
    factories.history(row, [max_value, 1.6e308, -1.6e308, None, 5e-324], paused_at=2)
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="resume-rollout"' in html
    # NaN as a number, not the letters inside a random token (the CSRF token once held "8nan1").
    drawn = html.split("<svg", 1)[1]
    assert html.count("<svg") >= 1 and not re.search(r"(?<![0-9a-z])nan(?![0-9a-z])", drawn, re.I)


def test_logins_are_throttled_per_username(settings: Any) -> None:
    settings.SENTINEL_LOGIN_ATTEMPTS = 3
    User.objects.create_superuser("root", None, "a-Long-enough-passphrase-7")
    client = Client()
    url = reverse("admin:login")
    for _ in range(3):
        wrong = client.post(url, {"username": "root", "password": "guess"})
        assert wrong.status_code == 200 and "_auth_user_id" not in client.session
    right = client.post(url, {"username": "root", "password": "a-Long-enough-passphrase-7"})
    assert right.status_code == 200
    assert "Too many failed logins" in right.content.decode()
    assert "_auth_user_id" not in client.session
    cache.clear()
    assert (
        client.post(url, {"username": "root", "password": "a-Long-enough-passphrase-7"}).status_code
        == 302
    )


def test_password_validators_refuse_weak_passwords() -> None:
    for weak in ("password", "12345678", "short"):
        with pytest.raises(ValidationError):
            validate_password(weak)
    validate_password("a-Long-enough-passphrase-7")


def test_a_revoked_token_cannot_be_unrevoked_in_the_admin(
    staff_client: Client, superuser: User
) -> None:
    issued = tokens.issue(superuser, now=timezone.now(), name="ci")
    ApiToken.objects.filter(pk=issued.token.pk).update(revoked=True)
    url = reverse("admin:accounts_apitoken_change", args=[issued.token.pk])
    page = staff_client.get(url).content.decode()
    assert 'name="revoked"' not in page
    staff_client.post(url, {"name": "ci"})
    assert ApiToken.objects.get(pk=issued.token.pk).revoked is True


def _sso(settings: Any, proxies: tuple[str, ...] = ("127.0.0.1",)) -> None:
    # The test client's requests come from 127.0.0.1: the trusted proxy unless told otherwise.
    settings.SENTINEL_REMOTE_USER_HEADER = "X-Forwarded-User"
    settings.SENTINEL_REMOTE_GROUPS_HEADER = "X-Forwarded-Groups"
    settings.SENTINEL_TRUSTED_PROXIES = proxies
    settings.AUTHENTICATION_BACKENDS = [
        "accounts.sso.ProxyUserBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]


def test_sso_header_logs_in_and_syncs_groups_only_when_configured(settings: Any) -> None:
    headers = {"X-Forwarded-User": "carol", "X-Forwarded-Groups": "sre, platform"}
    assert Client().get("/admin/", headers=headers).status_code == 302  # header ignored
    assert not User.objects.filter(username="carol").exists()

    _sso(settings)
    client = Client()
    client.get("/admin/", headers=headers)
    carol = User.objects.get(username="carol")
    assert not carol.has_usable_password()
    assert sorted(carol.groups.values_list("name", flat=True)) == ["platform", "sre"]
    assert client.session["_auth_user_id"] == str(carol.pk)
    # A new login through the proxy brings the new group list.
    other = Client()
    other.get("/admin/", headers={"X-Forwarded-User": "carol", "X-Forwarded-Groups": "sre"})
    assert list(carol.groups.values_list("name", flat=True)) == ["sre"]
    # Without the header, the proxy's session ends.
    client.get("/admin/")
    assert "_auth_user_id" not in client.session


def test_the_sso_header_from_elsewhere_authenticates_no_one(settings: Any) -> None:
    """A pod reaching the app without the proxy cannot be admin by sending the header."""
    User.objects.create_superuser("admin", None, "a-Long-enough-passphrase-7")
    _sso(settings, proxies=("10.42.0.0/16",))
    headers = {"X-Forwarded-User": "admin", "X-Forwarded-Groups": "sre"}
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert elsewhere.get("/admin/", headers=headers).status_code == 302  # to the login page
    assert "_auth_user_id" not in elsewhere.session
    assert elsewhere.get("/api/v1/analyses/", headers=headers).status_code == 401
    assert not Group.objects.filter(name="sre").exists()
    # The same request through the proxy's address is the proxy's user.
    through = Client(REMOTE_ADDR="10.42.7.7")
    assert through.get("/admin/", headers=headers).status_code == 200
    assert through.session["_auth_user_id"] == str(User.objects.get(username="admin").pk)
    # A session the proxy opened ends when a request without the proxy comes in on it.
    through.defaults["REMOTE_ADDR"] = "10.1.2.3"
    through.get("/admin/", headers=headers)
    assert "_auth_user_id" not in through.session


def test_login_failures_behind_the_ingress_count_per_client(settings: Any) -> None:
    """Behind trusted proxies the lockout is the client's, not the ingress controller's."""
    settings.SENTINEL_LOGIN_ATTEMPTS = 3
    settings.SENTINEL_TRUSTED_PROXIES = ("10.42.0.0/16",)
    User.objects.create_superuser("root", None, "a-Long-enough-passphrase-7")
    url = reverse("admin:login")
    ingress = Client(REMOTE_ADDR="10.42.1.5")

    def attempt(client: str, username: str, password: str = "guess") -> str:
        headers = {"X-Forwarded-For": f"198.51.100.77, {client}"}
        form = {"username": username, "password": password}
        return ingress.post(url, form, headers=headers).content.decode()

    for name in ("a", "b", "c"):
        attempt("203.0.113.9", f"nobody-{name}")
    # That client is locked out whatever the user name (its address failed three times) ...
    assert "Too many failed logins" in attempt("203.0.113.9", "nobody-d")
    # ... another client through the same ingress is not, and logs in.
    ingress.post(
        url,
        {"username": "root", "password": "a-Long-enough-passphrase-7"},
        headers={"X-Forwarded-For": "203.0.113.10"},
    )
    assert "_auth_user_id" in ingress.session
