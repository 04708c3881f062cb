"""The admin site around the pages (sentinel_site.admin_site): sections in the product's order,
django-q2's tables for superusers only, titles that say what a page lists or shows.

Django's test client against the site's HTML: the index's sections, the sidebar of a list page,
each page's ``<h1>`` and ``<title>``.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from accounts import tokens
from accounts.models import NamespaceGrant
from tests.ui import factories

pytestmark = pytest.mark.django_db

# What the index and the sidebar list, section by section, for a superuser.
SUPERUSER_SECTIONS = [
    ("Rollout analyses", ["Analyses"]),
    ("Notifications", ["Deliveries"]),
    ("Users and access", ["Users", "Groups", "Namespace grants", "API tokens"]),
    ("Django Q", ["Failed tasks", "Queued tasks", "Scheduled tasks", "Successful tasks"]),
]


def _sections(page: str, container: str) -> list[tuple[str, list[str]]]:
    """Return (section, model names) in page order from the app list inside ``container``."""
    start = page.index(container)
    html = page[start:]
    found = []
    for match in re.finditer(r'<caption>\s*<a [^>]*class="section"[^>]*>([^<]+)</a>', html):
        rest = html[match.end() :].split("</table>", 1)[0]
        names = re.findall(r'<th scope="row" id="[^"]*">\s*(?:<a [^>]*>)?([^<]+?)\s*<', rest)
        found.append((match.group(1), names))
    return found


def test_the_index_lists_the_product_first_and_the_task_tables_last(
    staff_client: Client,
) -> None:
    page = staff_client.get(reverse("admin:index")).content.decode()
    assert _sections(page, 'id="sentinel-sections"') == SUPERUSER_SECTIONS


def test_the_sidebar_lists_the_sections_in_the_same_order(staff_client: Client) -> None:
    page = staff_client.get(reverse("admin:analyses_analysis_changelist")).content.decode()
    assert _sections(page, 'id="nav-sidebar"') == SUPERUSER_SECTIONS


def test_the_task_tables_are_for_superusers_only(db: None) -> None:
    # Every permission there is, django-q2's included, but not a superuser.
    user = User.objects.create_user("operator", None, None, is_staff=True)
    user.user_permissions.set(Permission.objects.all())
    NamespaceGrant.objects.create(user=user, namespace="*", can_view=True)
    client = Client()
    client.force_login(user)

    page = client.get(reverse("admin:index")).content.decode()
    assert [name for name, _ in _sections(page, 'id="sentinel-sections"')] == [
        "Rollout analyses",
        "Notifications",
        "Users and access",
    ]
    for model in ("schedule", "success", "failure", "ormq"):
        assert client.get(reverse(f"admin:django_q_{model}_changelist")).status_code == 403
    assert client.get("/admin/django_q/").status_code == 404


@pytest.mark.parametrize(
    ("url", "title"),
    [
        (reverse("admin:analyses_analysis_changelist"), "Analyses"),
        (reverse("admin:notifications_delivery_changelist"), "Deliveries"),
        (reverse("admin:accounts_apitoken_changelist"), "API tokens"),
        (reverse("admin:accounts_namespacegrant_changelist"), "Namespace grants"),
        (reverse("admin:auth_user_changelist"), "Users"),
        (reverse("admin:django_q_failure_changelist"), "Failed tasks"),
        (reverse("admin:analyses_analysis_add"), "Add analysis"),
    ],
)
def test_list_pages_are_titled_by_what_they_list(
    staff_client: Client, url: str, title: str
) -> None:
    page = staff_client.get(url).content.decode()
    assert f"<h1>{title}</h1>" in page
    assert f"<title>{title} | Rollout Sentinel</title>" in page
    assert "Select " not in page.split("<body", 1)[0]


def test_change_pages_are_titled_by_their_object(
    staff_client: Client, viewer_client: Client, superuser: User
) -> None:
    checkout = factories.analysis("checkout")
    token = tokens.issue(superuser, now=factories.T0, name="ci deploys").token

    analysis = staff_client.get(reverse("admin:analyses_analysis_change", args=[checkout.pk]))
    page = analysis.content.decode()
    assert "<h1>Analysis shop/checkout</h1>" in page
    assert "<title>Analysis shop/checkout | Rollout Sentinel</title>" in page
    # The same for a user who may only look.
    viewed = viewer_client.get(reverse("admin:analyses_analysis_change", args=[checkout.pk]))
    assert "<h1>Analysis shop/checkout</h1>" in viewed.content.decode()

    edit = staff_client.get(reverse("admin:accounts_apitoken_change", args=[token.pk]))
    assert f"<h1>Edit API token {token}</h1>" in edit.content.decode()
    assert f"<title>Edit API token {token} | Rollout Sentinel</title>" in edit.content.decode()
