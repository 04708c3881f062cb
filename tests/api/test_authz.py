"""Per-namespace authorization in the REST API, in both SENTINEL_AUTHZ modes.

A user holding every model permission but granted only namespace ``a`` cannot see, edit,
resume or evaluate analyses in ``b``: they are not listed and are 404, and creating one there is
403 with nothing written. A user who may see ``b`` but not act there gets 403 instead. With
``SENTINEL_AUTHZ=kubernetes`` the answers are devcluster's RBAC authorizer's, to real
SubjectAccessReviews; the test user also holds a ``*`` grant then, which must not count.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from accounts import access, tokens
from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube
from testkit.manifests import analysis_spec as spec
from testkit.manifests import rollout_analysis
from testkit.namespaces import fresh_namespace
from tests.api.authz_setup import MODES, grant, use_mode
from tests.api.client import ALL_PERMISSIONS, Api, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, settings: Any) -> str:
    use_mode(settings, request.param)
    return request.param


@pytest.fixture
def other(cluster_client: kube.KubeClient) -> Iterator[str]:
    """Namespace ``b``: the one the user was not granted."""
    with fresh_namespace(cluster_client, "b") as name:
        yield name


def _applied(client: kube.KubeClient, namespace: str, name: str) -> Analysis:
    created = client.request(
        "POST", kube.analyses_path(namespace), body=rollout_analysis(name, namespace, spec())
    )
    return mirror.upsert_from_resource(created)[0]


def _api_of(user: User, live_server: Any) -> Api:
    issued = tokens.issue(user, now=timezone.now())
    return Api(f"{live_server.url}/api/v1/", {"Authorization": f"Token {issued.plaintext}"})


def _user(mode: str) -> User:
    # In kubernetes mode a "*" grant is present and must be ignored: RBAC alone decides.
    return make_user(*ALL_PERMISSIONS, namespaces=("*",) if mode == "kubernetes" else ())


def test_a_user_granted_only_a_cannot_see_edit_resume_or_evaluate_in_b(
    mode: str,
    namespace: str,
    other: str,
    cluster_client: kube.KubeClient,
    live_server: Any,
) -> None:
    user = _user(mode)
    grant(cluster_client, namespace, user=user, edit=True, resume=True)
    mine = _applied(cluster_client, namespace, "mine")
    theirs = _applied(cluster_client, other, "theirs")
    due = theirs.next_due_at
    api = _api_of(user, live_server)

    listed = api.get("analyses/").json()["results"]
    assert [(a["namespace"], a["name"]) for a in listed] == [(namespace, "mine")]
    base = f"analyses/{other}/theirs/"
    assert api.get(base).status_code == 404
    assert api.get(f"{base}evaluations/").status_code == 404
    assert api.post(f"{base}resume/").status_code == 404
    assert api.post(f"{base}evaluate/").status_code == 404
    assert api.patch(base, json={"spec": {"failureLimit": 9}}).status_code == 404
    assert api.delete(base).status_code == 404
    created = api.post("analyses/", json={"namespace": other, "name": "new", "spec": spec()})
    assert created.status_code == 403, created.text
    with pytest.raises(kube.NotFound):
        cluster_client.request("GET", kube.analysis_path(other, "new"))
    in_cluster = cluster_client.request("GET", kube.analysis_path(other, "theirs"))
    # The refused PATCH's 9 is nowhere (the CRD defaults no failureLimit: docs/templates.md).
    assert in_cluster["spec"].get("failureLimit") == theirs.spec.get("failureLimit") != 9
    theirs.refresh_from_db()
    assert (theirs.next_due_at, theirs.deleted_at) == (due, None)

    # The same user acts freely in a.
    assert api.get(f"analyses/{namespace}/mine/").status_code == 200
    assert api.post(f"analyses/{namespace}/mine/evaluate/").status_code == 202
    patched = api.patch(f"analyses/{namespace}/mine/", json={"spec": {"failureLimit": 7}})
    assert patched.status_code == 200, patched.text
    assert mine.pk is not None


def test_a_user_who_may_only_view_b_gets_403_on_acting_there(
    mode: str,
    namespace: str,
    other: str,
    cluster_client: kube.KubeClient,
    live_server: Any,
) -> None:
    user = _user(mode)
    # Viewing b comes through a group: Django's groups are what the review sends.
    viewers = Group.objects.create(name=f"viewers-{user.get_username()}")
    user.groups.add(viewers)
    grant(cluster_client, other, group=viewers)
    _applied(cluster_client, other, "theirs")
    api = _api_of(user, live_server)

    assert api.get(f"analyses/{other}/theirs/").status_code == 200
    assert [a["name"] for a in api.get("analyses/").json()["results"]] == ["theirs"]
    base = f"analyses/{other}/theirs/"
    for response in (
        api.post(f"{base}resume/"),
        api.post(f"{base}evaluate/"),
        api.patch(base, json={"spec": {"failureLimit": 9}}),
        api.delete(base),
    ):
        assert response.status_code == 403, response.text
        assert other in response.json()["detail"]


def test_superusers_are_everywhere_with_django_grants_only(
    namespace: str, cluster_client: kube.KubeClient, live_server: Any, settings: Any
) -> None:
    _applied(cluster_client, namespace, "any")
    api = _api_of(make_user(is_superuser=True, namespaces=()), live_server)
    use_mode(settings, "django")
    assert api.get(f"analyses/{namespace}/any/").status_code == 200
    # With kubernetes, RBAC decides for everyone; this user has no binding.
    use_mode(settings, "kubernetes")
    assert api.get(f"analyses/{namespace}/any/").status_code == 404


def test_review_answers_are_cached_for_a_few_seconds_then_asked_again(
    namespace: str, cluster_client: kube.KubeClient, live_server: Any, settings: Any
) -> None:
    use_mode(settings, "kubernetes")
    settings.SENTINEL_AUTHZ_CACHE_SECONDS = 3600.0
    user = make_user(*ALL_PERMISSIONS, namespaces=())
    grant(cluster_client, namespace, user=user)
    _applied(cluster_client, namespace, "cached")
    api = _api_of(user, live_server)
    assert api.get(f"analyses/{namespace}/cached/").status_code == 200
    # RBAC changes; within the cache lifetime the earlier answer stands ...
    binding = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings"
    cluster_client.request("DELETE", f"{binding}/sentinel-{user.get_username()}")
    assert api.get(f"analyses/{namespace}/cached/").status_code == 200
    # ... and once it has passed, the cluster is asked again.
    settings.SENTINEL_AUTHZ_CACHE_SECONDS = 0.0
    use_mode(settings, "kubernetes")
    assert api.get(f"analyses/{namespace}/cached/").status_code == 404


def test_an_unanswerable_review_denies(
    namespace: str, cluster_client: kube.KubeClient, live_server: Any, settings: Any, tmp_path: Any
) -> None:
    user = make_user(*ALL_PERMISSIONS, namespaces=())
    grant(cluster_client, namespace, user=user, edit=True, resume=True)
    _applied(cluster_client, namespace, "guarded")
    api = _api_of(user, live_server)
    use_mode(settings, "kubernetes")
    assert api.get(f"analyses/{namespace}/guarded/").status_code == 200
    # No API server where the kubeconfig points: the web app fails closed.
    settings.SENTINEL_KUBECONFIG = str(tmp_path / "missing-kubeconfig")
    use_mode(settings, "kubernetes")
    assert api.get("analyses/").json()["results"] == []
    assert api.get(f"analyses/{namespace}/guarded/").status_code == 404


@pytest.mark.clusters("real")
def test_a_django_group_named_system_masters_is_not_sent_to_kubernetes(
    namespace: str, cluster_client: kube.KubeClient, live_server: Any, settings: Any
) -> None:
    """Django names are an admin's or an SSO proxy's: ``system:masters`` gives no rights.

    On the real API server ``system:masters`` is allowed everything; were the Django group sent
    in the SubjectAccessReview, this user would see, edit and resume in every namespace.
    """
    use_mode(settings, "kubernetes")
    _applied(cluster_client, namespace, "guarded")
    user = make_user(*ALL_PERMISSIONS, namespaces=())
    user.groups.add(Group.objects.create(name="system:masters"))
    api = _api_of(user, live_server)
    assert api.get(f"analyses/{namespace}/guarded/").status_code == 404
    assert api.get("analyses/").json()["results"] == []
    assert api.post(f"analyses/{namespace}/guarded/resume/").status_code == 404
    # Other groups are still sent: one bound by RBAC gives this user its rights.
    team = Group.objects.create(name="team-sre")
    user.groups.add(team)
    grant(cluster_client, namespace, group=team, resume=True)
    access.clear_cache()
    assert api.get(f"analyses/{namespace}/guarded/").status_code == 200
    # A Django user with a Kubernetes system name is denied without asking, even where RBAC
    # binds that name.
    admin = make_user(*ALL_PERMISSIONS, namespaces=())
    User.objects.filter(pk=admin.pk).update(username="system:sentinel-admin")
    admin.refresh_from_db()
    grant(cluster_client, namespace, user=admin, resume=True)
    assert _api_of(admin, live_server).get(f"analyses/{namespace}/guarded/").status_code == 404
