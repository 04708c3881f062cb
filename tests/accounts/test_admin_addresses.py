"""API tokens and namespace grants in the admin, at their new address and at their old one.

They moved from the analyses app to ``accounts`` (docs/architecture.md): their pages are now
under ``/admin/accounts/``, and a bookmark of the old ``/admin/analyses/…`` address is
redirected to the same page there, query string included.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from accounts import tokens
from accounts.models import NamespaceGrant

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("platform", "platform@example.com", None))
    return client


def test_the_pages_are_under_accounts(staff_client: Client) -> None:
    assert reverse("admin:accounts_apitoken_changelist") == "/admin/accounts/apitoken/"
    assert reverse("admin:accounts_namespacegrant_add") == "/admin/accounts/namespacegrant/add/"
    assert staff_client.get("/admin/accounts/apitoken/").status_code == 200
    assert staff_client.get("/admin/accounts/namespacegrant/").status_code == 200


def test_an_old_address_is_redirected_to_the_same_page(staff_client: Client) -> None:
    user = User.objects.get(username="platform")
    token = tokens.issue(user, now=datetime.now(UTC), name="ci").token
    grant = NamespaceGrant.objects.create(user=user, namespace="shop")
    for old, new in (
        ("/admin/analyses/apitoken/?q=ci", "/admin/accounts/apitoken/?q=ci"),
        (
            f"/admin/analyses/apitoken/{token.pk}/change/",
            f"/admin/accounts/apitoken/{token.pk}/change/",
        ),
        (
            f"/admin/analyses/namespacegrant/{grant.pk}/change/",
            f"/admin/accounts/namespacegrant/{grant.pk}/change/",
        ),
    ):
        answer = staff_client.get(old)
        assert (answer.status_code, answer["Location"]) == (301, new)
        assert staff_client.get(new).status_code == 200
    # The analyses' own pages are not redirected.
    assert staff_client.get("/admin/analyses/analysis/").status_code == 200
