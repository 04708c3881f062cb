"""SENTINEL_NAMESPACES bounds the web app (docs/security.md#who-can-do-what, the web side).

An analysis outside the scope may be in the cluster and in the mirror (applied with kubectl,
mirrored as the watch would): the API never lists or shows it, and refuses to create one there
with a 400 naming ``namespace`` and nothing written. ``analyses.services`` refuses too, as the
last line behind the API and the admin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from analyses import mirror, services
from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_core.spec import parse_spec
from testkit.manifests import analysis_spec as spec
from testkit.manifests import rollout_analysis
from testkit.namespaces import fresh_namespace
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outside(cluster_client: kube.KubeClient) -> Iterator[str]:
    """A second namespace, which the tests leave out of SENTINEL_NAMESPACES."""
    with fresh_namespace(cluster_client, "out") as name:
        yield name


@pytest.fixture
def scoped(settings: Any, namespace: str) -> str:
    settings.SENTINEL_NAMESPACES = (namespace,)
    return namespace


def _applied(client: kube.KubeClient, namespace: str, name: str) -> Analysis:
    """Create the resource in the cluster (as kubectl would) and mirror it (as the watch would)."""
    created = client.request(
        "POST", kube.analyses_path(namespace), body=rollout_analysis(name, namespace, spec())
    )
    row, _ = mirror.upsert_from_resource(created)
    return row


def _in_cluster(client: kube.KubeClient, namespace: str, name: str) -> bool:
    try:
        client.request("GET", kube.analysis_path(namespace, name))
    except kube.NotFound:
        return False
    return True


def test_create_outside_the_scope_is_400_naming_namespace_and_writes_nothing(
    api: Api, scoped: str, outside: str, cluster_client: kube.KubeClient
) -> None:
    response = api.post("analyses/", json={"namespace": outside, "name": "x", "spec": spec()})
    assert response.status_code == 400, response.text
    assert list(response.json()) == ["namespace"]
    assert "outside SENTINEL_NAMESPACES" in response.json()["namespace"][0]
    assert not _in_cluster(cluster_client, outside, "x")
    assert not Analysis.objects.filter(namespace=outside).exists()
    # Inside the scope the same body is created.
    inside = api.post("analyses/", json={"namespace": scoped, "name": "x", "spec": spec()})
    assert inside.status_code == 201, inside.text


def test_an_analysis_outside_the_scope_is_never_listed_or_shown(
    api: Api, scoped: str, outside: str, cluster_client: kube.KubeClient
) -> None:
    _applied(cluster_client, scoped, "seen")
    hidden = _applied(cluster_client, outside, "hidden")
    due = hidden.next_due_at
    listed = api.get("analyses/").json()["results"]
    assert [(a["namespace"], a["name"]) for a in listed] == [(scoped, "seen")]
    assert api.get(f"analyses/?namespace={outside}").json()["results"] == []
    base = f"analyses/{outside}/hidden/"
    assert api.get(base).status_code == 404
    assert api.get(f"{base}evaluations/").status_code == 404
    for action in ("resume/", "evaluate/"):
        assert api.post(base + action).status_code == 404
    assert api.patch(base, json={"spec": {"failureLimit": 9}}).status_code == 404
    assert api.delete(base).status_code == 404
    assert _in_cluster(cluster_client, outside, "hidden")
    hidden.refresh_from_db()
    # evaluate/ did not make it due, DELETE did not mark it deleted.
    assert (hidden.next_due_at, hidden.deleted_at) == (due, None)


def test_services_refuse_writes_outside_the_scope(
    scoped: str, outside: str, cluster_client: kube.KubeClient, settings: Any
) -> None:
    with pytest.raises(services.ResourceRejected) as refused:
        services.create_analysis(outside, "x", parse_spec(spec(), strict=True))
    assert list(refused.value.field_errors) == ["namespace"]
    assert not _in_cluster(cluster_client, outside, "x")
    # A row mirrored while the scope was wider is still not written through.
    settings.SENTINEL_NAMESPACES = (scoped, outside)
    row = _applied(cluster_client, outside, "old")
    settings.SENTINEL_NAMESPACES = (scoped,)
    due = row.next_due_at
    for write in (
        lambda: services.delete_analysis(row),
        lambda: services.evaluate_now(row),
        lambda: services.resume_analysis(row, actor="someone"),
    ):
        with pytest.raises(services.ResourceRejected):
            write()
    assert _in_cluster(cluster_client, outside, "old")
    row.refresh_from_db()
    assert (row.next_due_at, row.deleted_at) == (due, None)
