"""Scope and per-namespace authorization in the admin, in both SENTINEL_AUTHZ modes
(docs/security.md, "Who can do what").

A staff user holding every model permission but granted only namespace ``a`` neither sees
nor changes, resumes or evaluates analyses in ``b``, nor adds one there; the overview (the
index) counts only ``a``. Seeing ``b`` without the right to act makes the actions 403 and hides
their buttons.
With ``SENTINEL_AUTHZ=kubernetes`` the web app asks the UI devcluster with real
SubjectAccessReviews; the grants are RBAC Roles there (tests/api/authz_setup.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from sentinel_cluster import kube
from testkit.clusters import kube_client
from testkit.devcluster import DevCluster
from testkit.namespaces import fresh_namespace
from tests.api.authz_setup import MODES, grant, use_mode
from tests.ui import factories
from tests.ui.forms import change_form

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cluster(ui_cluster: DevCluster, settings: Any) -> kube.KubeClient:
    # The SubjectAccessReviews go where the web app's writes go.
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    return kube_client(ui_cluster)


@pytest.fixture
def two_namespaces(cluster: kube.KubeClient) -> Iterator[tuple[str, str]]:
    with fresh_namespace(cluster, "a") as a, fresh_namespace(cluster, "b") as b:
        yield a, b


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, settings: Any) -> str:
    use_mode(settings, request.param)
    return request.param


def _staff(name: str) -> tuple[User, Client]:
    user = User.objects.create_user(name, None, None, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="analyses"))
    client = Client()
    client.force_login(user)
    return user, client


def _paused(name: str, namespace: str) -> Analysis:
    return factories.analysis(
        name,
        namespace=namespace,
        status_=factories.status(verdict="Fail", failures=3, paused=True),
    )


def _url(name: str, analysis: Analysis) -> str:
    return reverse(f"admin:analyses_analysis_{name}", args=[analysis.pk])


def test_a_user_granted_only_a_cannot_see_edit_resume_or_evaluate_in_b(
    mode: str, cluster: kube.KubeClient, two_namespaces: tuple[str, str]
) -> None:
    a, b = two_namespaces
    user, client = _staff(f"alice-{mode}-{a}")
    grant(cluster, a, user=user, edit=True, resume=True)
    mine, theirs = _paused("mine", a), _paused("theirs", b)
    due = theirs.next_due_at

    listing = client.get(reverse("admin:analyses_analysis_changelist")).content.decode()
    assert _url("change", mine) in listing and _url("change", theirs) not in listing
    # Unknown to this user: the admin's "does not exist" redirect, never the page.
    page = client.get(_url("change", theirs))
    assert page.status_code == 302 and page["Location"] == reverse("admin:index")
    edit = client.post(_url("change", theirs), change_form(theirs, failure_limit=9))
    assert edit.status_code == 302
    assert client.get(_url("delete", theirs)).status_code == 302
    for action in ("resume", "evaluate"):
        assert client.post(_url(action, theirs)).status_code == 404
    theirs.refresh_from_db()
    assert (theirs.next_due_at, theirs.failure_limit, theirs.deleted_at) == (due, 3, None)
    added = client.post(
        reverse("admin:analyses_analysis_add"), change_form(None, namespace=b, name="new")
    )
    assert added.status_code == 200
    assert f"You may not create analyses in namespace {b}." in added.content.decode()
    assert not Analysis.objects.filter(namespace=b, name="new").exists()
    overview = client.get(reverse("admin:index"))
    assert overview.context["total"].count == 1

    # In a the same user sees the page with its actions, and "Evaluate now" works.
    own = client.get(_url("change", mine)).content.decode()
    assert 'id="resume-rollout"' in own and _url("evaluate", mine) in own
    assert client.post(_url("evaluate", mine)).status_code == 302
    mine.refresh_from_db()
    assert mine.next_due_at is not None


def test_a_user_who_may_only_view_b_gets_403_on_its_actions(
    mode: str, cluster: kube.KubeClient, two_namespaces: tuple[str, str]
) -> None:
    _, b = two_namespaces
    user, client = _staff(f"bob-{mode}-{b}")
    viewers = Group.objects.create(name=f"viewers-{b}")
    user.groups.add(viewers)
    grant(cluster, b, group=viewers)
    theirs = _paused("theirs", b)

    page = client.get(_url("change", theirs))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="resume-rollout"' not in html and 'name="_save"' not in html
    for action in ("resume", "evaluate"):
        assert client.post(_url(action, theirs)).status_code == 403
    assert client.get(_url("delete", theirs)).status_code == 403


def test_the_admin_neither_shows_nor_adds_analyses_outside_the_scope(
    settings: Any, staff_client: Client
) -> None:
    settings.SENTINEL_NAMESPACES = ("shop",)
    inside, outside = _paused("in", "shop"), _paused("out", "elsewhere")
    listing = staff_client.get(reverse("admin:analyses_analysis_changelist")).content.decode()
    assert _url("change", inside) in listing and _url("change", outside) not in listing
    assert staff_client.get(_url("change", outside)).status_code == 302
    assert staff_client.post(_url("resume", outside)).status_code == 404
    added = staff_client.post(
        reverse("admin:analyses_analysis_add"), change_form(None, namespace="elsewhere", name="x")
    )
    assert added.status_code == 200
    assert "outside SENTINEL_NAMESPACES" in added.content.decode()
    assert not Analysis.objects.filter(name="x").exists()


def test_namespace_grants_are_edited_in_the_admin(staff_client: Client) -> None:
    someone = User.objects.create_user("someone", None, None)
    response = staff_client.post(
        reverse("admin:accounts_namespacegrant_add"),
        {"user": someone.pk, "namespace": "shop", "can_view": "on", "can_resume": "on"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert someone.namespace_grants.get().can_resume
    both = staff_client.post(
        reverse("admin:accounts_namespacegrant_add"),
        {"user": someone.pk, "group": Group.objects.create(name="g").pk, "namespace": "x"},
    )
    assert "Choose either a user or a group." in both.content.decode()
