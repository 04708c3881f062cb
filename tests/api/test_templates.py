"""docs/api.md#templates: both template kinds through the REST API, read and written in the cluster.

On both clusters (the real kube-apiserver validates with the template CRDs' schema and CEL
rules): create, list, detail, replace, delete, the 409 of a stale resourceVersion, the 400 with
the API server's field paths, who may write where; on devcluster an injected 503.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from accounts import tokens
from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_json
from testkit.devcluster import DevCluster
from testkit.namespaces import unique_name
from tests.api.authz_setup import use_mode
from tests.api.client import ALL_PERMISSIONS, Api, MakeApi, make_user

pytestmark = pytest.mark.django_db(transaction=True)

_CLUSTER_TEMPLATES = f"/apis/{kube.GROUP}/{kube.VERSION}/clusterrolloutanalysistemplates"


def _spec(max_value: float = 0.01) -> dict[str, Any]:
    return {
        "description": "Share of 5xx responses.",
        "args": [{"name": "service"}, {"name": "window", "default": "5m"}],
        "failureLimit": 2,
        "metrics": [
            {
                "name": "error-rate",
                "query": 'sum(rate(http_requests_total{service="{{ args.service }}"}[5m]))',
                "maxValue": max_value,
            }
        ],
    }


@pytest.fixture
def cluster_template(cluster_client: kube.KubeClient) -> Iterator[str]:
    """A fresh cluster template name, deleted afterwards (cluster templates outlive namespaces)."""
    name = unique_name("tmpl")
    yield name
    with contextlib.suppress(kube.NotFound):
        cluster_client.request("DELETE", f"{_CLUSTER_TEMPLATES}/{name}")


def _api_for(user: User, live_server: Any) -> Api:
    issued = tokens.issue(user, now=timezone.now())
    return Api(f"{live_server.url}/api/v1/", {"Authorization": f"Token {issued.plaintext}"})


def test_namespaced_template_round_trip_and_conflict(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    created = api.post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["namespace"] == namespace and body["name"] == "errors"
    assert body["generation"] == 1
    assert created.headers["Location"] == f"/api/v1/templates/{namespace}/errors/"
    in_cluster = kubectl_json(api_cluster, "ratmpl", "errors", "-n", namespace)
    assert in_cluster["spec"]["metrics"][0]["maxValue"] == 0.01

    listing = api.get(f"templates/{namespace}/")
    assert [item["name"] for item in listing.json()] == ["errors"]
    assert api.get(f"templates/{namespace}/errors/").json()["spec"] == in_cluster["spec"]
    assert api.get(f"templates/{namespace}/missing/").status_code == 404
    # A segment that cannot name an object is 404 without asking the cluster.
    assert api.get(f"templates/{namespace}/Not_A_Name/").status_code == 404
    assert api.request("OPTIONS", f"templates/{namespace}/errors/").status_code == 200

    # A replacement keeps nothing of the old spec (failureLimit and args are gone).
    spec = {"metrics": [{"name": "p99", "query": "vector(1)", "maxValue": 2}]}
    replaced = api.put(
        f"templates/{namespace}/errors/",
        json={"spec": spec, "resourceVersion": body["resourceVersion"]},
    )
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["generation"] == 2
    assert kubectl_json(api_cluster, "ratmpl", "errors", "-n", namespace)["spec"] == spec

    # The first version is stale now: the replace and the delete are refused, nothing changes.
    stale = {"spec": _spec(), "resourceVersion": body["resourceVersion"]}
    put = api.put(f"templates/{namespace}/errors/", json=stale)
    delete = api.delete(
        f"templates/{namespace}/errors/", params={"resourceVersion": body["resourceVersion"]}
    )
    for response in (put, delete):
        assert response.status_code == 409, response.text
        assert "changed in the cluster" in response.json()["detail"]
    again = api.post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
    assert again.status_code == 409 and "already exists" in again.json()["detail"]
    assert kubectl_json(api_cluster, "ratmpl", "errors", "-n", namespace)["spec"] == spec

    assert api.delete(f"templates/{namespace}/errors/").status_code == 204
    assert api.get(f"templates/{namespace}/").json() == []


def test_api_server_validation_is_400_with_field_paths(api: Api, namespace: str) -> None:
    spec = _spec()
    del spec["metrics"][0]["maxValue"]
    spec["args"].append({"name": "1bad"})
    response = api.post(f"templates/{namespace}/", json={"name": "errors", "spec": spec})
    assert response.status_code == 400, response.text
    fields = response.json()
    assert any(path.startswith("spec.metrics[0]") for path in fields), fields
    assert any(path.startswith("spec.args[2]") for path in fields), fields
    assert api.get(f"templates/{namespace}/").json() == []


def test_cluster_templates_are_written_by_superusers_only(
    make_api: MakeApi, live_server: Any, api_cluster: Cluster, cluster_template: str
) -> None:
    everything = make_api(*ALL_PERMISSIONS)
    refused = everything.post("clustertemplates/", json={"name": cluster_template, "spec": _spec()})
    assert refused.status_code == 403
    assert "superusers" in refused.json()["detail"]

    root = _api_for(make_user(is_superuser=True), live_server)
    created = root.post("clustertemplates/", json={"name": cluster_template, "spec": _spec()})
    assert created.status_code == 201, created.text
    assert "namespace" not in created.json()
    assert created.headers["Location"] == f"/api/v1/clustertemplates/{cluster_template}/"

    # Anyone who may view analyses reads them; only a superuser changes them.
    reader = make_api("view_analysis")
    assert cluster_template in [item["name"] for item in reader.get("clustertemplates/").json()]
    assert reader.get(f"clustertemplates/{cluster_template}/").json()["spec"]["failureLimit"] == 2
    for response in (
        everything.put(f"clustertemplates/{cluster_template}/", json={"spec": _spec(0.5)}),
        everything.delete(f"clustertemplates/{cluster_template}/"),
    ):
        assert response.status_code == 403
    assert kubectl_json(api_cluster, "cratmpl", cluster_template)["metadata"]["generation"] == 1

    replaced = root.put(f"clustertemplates/{cluster_template}/", json={"spec": _spec(0.5)})
    assert replaced.status_code == 200, replaced.text
    assert kubectl_json(api_cluster, "cratmpl", cluster_template)["spec"]["metrics"][0][
        "maxValue"
    ] == pytest.approx(0.5)
    assert root.delete(f"clustertemplates/{cluster_template}/").status_code == 204
    assert root.get(f"clustertemplates/{cluster_template}/").status_code == 404


def test_with_kubernetes_authz_rbac_decides_who_writes_cluster_templates(
    live_server: Any,
    api_cluster: Cluster,
    cluster_client: kube.KubeClient,
    cluster_template: str,
    settings: Any,
) -> None:
    """docs/security.md: a SubjectAccessReview on cluster templates decides, not is_superuser."""
    use_mode(settings, "kubernetes")
    # A Django superuser the cluster's RBAC binds to nothing: refused, nothing written.
    root = _api_for(make_user(is_superuser=True), live_server)
    refused = root.post("clustertemplates/", json={"name": cluster_template, "spec": _spec()})
    assert refused.status_code == 403, refused.text
    assert "clusterrolloutanalysistemplates" in refused.json()["detail"]
    assert cluster_template not in api_cluster.kubectl("get", "cratmpl", "-o", "name").stdout

    # A user holding no Django superuser flag but bound by a ClusterRole to write them: allowed.
    platform = make_user(*ALL_PERMISSIONS, namespaces=())
    role = f"sentinel-{platform.get_username()}-cratmpl".lower()
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    cluster_client.request(
        "POST",
        f"{rbac}/clusterroles",
        body={
            "metadata": {"name": role},
            "rules": [
                {
                    "apiGroups": [kube.GROUP],
                    "resources": ["clusterrolloutanalysistemplates"],
                    "verbs": ["create", "update", "delete"],
                }
            ],
        },
    )
    subject = {"kind": "User", "name": platform.get_username(), "apiGroup": rbac.split("/")[2]}
    cluster_client.request(
        "POST",
        f"{rbac}/clusterrolebindings",
        body={
            "metadata": {"name": role},
            "roleRef": {"apiGroup": subject["apiGroup"], "kind": "ClusterRole", "name": role},
            "subjects": [subject],
        },
    )
    try:
        writer = _api_for(platform, live_server)
        created = writer.post("clustertemplates/", json={"name": cluster_template, "spec": _spec()})
        assert created.status_code == 201, created.text
        replaced = writer.put(f"clustertemplates/{cluster_template}/", json={"spec": _spec(0.5)})
        assert replaced.status_code == 200, replaced.text
        assert kubectl_json(api_cluster, "cratmpl", cluster_template)["metadata"]["generation"] == 2
        # The superuser is still refused a write of the template that now exists.
        assert root.delete(f"clustertemplates/{cluster_template}/").status_code == 403
        assert writer.delete(f"clustertemplates/{cluster_template}/").status_code == 204
    finally:
        for kind in ("clusterrolebindings", "clusterroles"):
            with contextlib.suppress(kube.NotFound):
                cluster_client.request("DELETE", f"{rbac}/{kind}/{role}")


def test_namespace_grants_decide_for_namespaced_templates(
    make_api: MakeApi, live_server: Any, namespace: str, settings: Any
) -> None:
    outsider = _api_for(make_user(*ALL_PERMISSIONS, namespaces=("elsewhere",)), live_server)
    assert outsider.get(f"templates/{namespace}/").status_code == 403
    response = outsider.post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
    assert response.status_code == 403
    assert f"namespace {namespace}" in response.json()["detail"]
    # Without the model permission even a granted namespace is closed.
    assert (
        make_api("view_analysis")
        .post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
        .status_code
        == 403
    )
    # Outside SENTINEL_NAMESPACES, as for analyses: a create is 400 naming it, a read 404.
    settings.SENTINEL_NAMESPACES = ("some-other-namespace",)
    root = _api_for(make_user(is_superuser=True), live_server)
    created = root.post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
    assert created.status_code == 400
    assert "outside SENTINEL_NAMESPACES" in created.json()["namespace"][0]
    assert root.get(f"templates/{namespace}/").status_code == 404
    assert root.get(f"templates/{namespace}/errors/").status_code == 404


def test_injected_503_is_503_and_nothing_is_written(
    api: Api, namespace: str, api_faults: DevCluster
) -> None:
    created = api.post(f"templates/{namespace}/", json={"name": "errors", "spec": _spec()})
    assert created.status_code == 201, created.text
    api_faults.inject_fault(
        path_regex=f"/namespaces/{namespace}/rolloutanalysistemplates", status=503
    )
    try:
        responses = [
            api.get(f"templates/{namespace}/"),
            api.post(f"templates/{namespace}/", json={"name": "new", "spec": _spec()}),
            api.put(f"templates/{namespace}/errors/", json={"spec": _spec(0.5)}),
            api.delete(f"templates/{namespace}/errors/"),
        ]
    finally:
        api_faults.clear_faults()
    for response in responses:
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "cluster_unavailable"
        assert "cannot be reached" in response.json()["detail"]
    listing = kubectl_json(api_faults, "ratmpl", "-n", namespace)
    assert [item["metadata"]["name"] for item in listing["items"]] == ["errors"]
    assert listing["items"][0]["spec"]["metrics"][0]["maxValue"] == 0.01
