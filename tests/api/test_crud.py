"""Create, read, update and delete over HTTP reach the cluster (each kind); the mirror follows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api, MakeApi

pytestmark = pytest.mark.django_db(transaction=True)


def _create(api: Api, namespace: str, name: str = "checkout", **overrides: object) -> dict:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": name, "spec": spec(**overrides)}
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_create_reaches_the_cluster_and_the_mirror(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    body = _create(api, namespace)

    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    # The API writes its parse's defaults out (the CRD has none for interval and failureLimit,
    # docs/resource.md), in the cluster and in the answer.
    assert in_cluster["spec"] == {**spec(), "interval": "30s", "failureLimit": 3, "dryRun": False}
    assert body == {
        "namespace": namespace,
        "name": "checkout",
        "resourceVersion": in_cluster["metadata"]["resourceVersion"],
        "spec": in_cluster["spec"],
        "status": {},
    }
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert row.uid == in_cluster["metadata"]["uid"]
    assert [m.name for m in row.metrics.all()] == ["p99-latency"]
    assert (row.failure_limit, row.interval_seconds) == (3, 30.0)
    assert api.get(f"analyses/{namespace}/checkout/").json() == body


def test_create_answers_with_location(api: Api, namespace: str) -> None:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "web", "spec": spec("web")}
    )
    assert response.status_code == 201
    assert response.headers["Location"] == f"/api/v1/analyses/{namespace}/web/"


def test_create_of_an_existing_name_is_409(api: Api, namespace: str, api_cluster: Cluster) -> None:
    _create(api, namespace)
    before = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)

    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec("other")}
    )

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert "already exists" in response.json()["detail"]
    after = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_create_in_a_missing_namespace_is_a_field_error(api: Api) -> None:
    response = api.post(
        "analyses/", json={"namespace": "no-such-namespace", "name": "x", "spec": spec()}
    )
    assert response.status_code == 400
    assert list(response.json()) == ["namespace"]
    assert not Analysis.objects.exists()


def test_an_analysis_naming_templates_is_written_as_given(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    # docs/templates.md: checked as the CRD checks it, written without the parse's defaults so
    # that the templates' apply; the operator resolves it.
    given = {
        "target": {"kind": "Deployment", "name": "checkout"},
        "templates": [{"name": "golden-signals", "clusterScope": True}],
        "args": [{"name": "service", "value": "checkout"}],
    }
    bad = api.post(
        "analyses/",
        json={
            "namespace": namespace,
            "name": "checkout",
            "spec": {**given, "templates": [{"name": "a"}, {"name": "a"}], "interval": "1s"},
        },
    )
    assert bad.status_code == 400, bad.text
    assert bad.json() == {
        "spec.templates[1]": ["RolloutAnalysisTemplate a is named twice"],
        "spec.interval": ["must be at least 5s, got 1s"],
    }

    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": given}
    )

    assert created.status_code == 201, created.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"] == {**given, "dryRun": False}
    assert created.json()["spec"] == in_cluster["spec"]
    own = {"name": "errors", "query": "sum(rate(e[1m]))", "maxValue": 1}
    patched = api.patch(
        f"analyses/{namespace}/checkout/",
        json={"spec": {"args": [{"name": "service", "value": "cart"}], "metrics": [own]}},
    )
    assert patched.status_code == 200, patched.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"] == {
        **given,
        "args": [{"name": "service", "value": "cart"}],
        "metrics": [own],
        "dryRun": False,
    }


def test_put_replaces_the_spec_in_the_cluster(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    created = _create(api, namespace)
    new_spec = spec(interval="1m", failureLimit=5)
    new_spec["metrics"].append({"name": "errors", "query": "sum(rate(e[1m]))", "maxValue": 1})

    response = api.put(
        f"analyses/{namespace}/checkout/",
        json={"spec": new_spec, "resourceVersion": created["resourceVersion"]},
    )

    assert response.status_code == 200, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"] == {**new_spec, "dryRun": False}
    assert in_cluster["metadata"]["generation"] == 2
    assert response.json()["resourceVersion"] == in_cluster["metadata"]["resourceVersion"]
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert (row.failure_limit, row.interval_seconds) == (5, 60.0)
    assert [m.name for m in row.metrics.all()] == ["p99-latency", "errors"]


def test_patch_merges_into_the_spec_and_keeps_labels(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    _create(api, namespace)
    api_cluster.kubectl("label", "rolloutanalysis", "checkout", "-n", namespace, "team=shop")
    _resync(api_cluster, namespace)

    response = api.patch(f"analyses/{namespace}/checkout/", json={"spec": {"dryRun": True}})

    assert response.status_code == 200, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"]["dryRun"] is True
    assert in_cluster["spec"]["metrics"] == spec()["metrics"]
    assert in_cluster["metadata"]["labels"] == {"team": "shop"}
    assert Analysis.objects.live().get(namespace=namespace, name="checkout").dry_run


def test_body_cannot_move_an_analysis(api: Api, namespace: str) -> None:
    _create(api, namespace)
    response = api.put(
        f"analyses/{namespace}/checkout/", json={"name": "elsewhere", "spec": spec()}
    )
    assert response.status_code == 400
    assert list(response.json()) == ["name"]


def test_delete_removes_from_the_cluster_and_keeps_history(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    _create(api, namespace)

    response = api.delete(f"analyses/{namespace}/checkout/")

    assert response.status_code == 204
    gone = api_cluster.kubectl("get", "rolloutanalysis", "checkout", "-n", namespace, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    row = Analysis.objects.get(namespace=namespace, name="checkout")
    assert row.deleted_at is not None and row.next_due_at is None
    assert api.get(f"analyses/{namespace}/checkout/").status_code == 404


def _resync(cluster: Cluster, namespace: str) -> None:
    """Mirror the namespace from a real list, as the operator's periodic resync does."""
    listed_at = datetime.now(UTC)
    listing = yaml.safe_load(
        cluster.kubectl("get", kube.PLURAL, "-n", namespace, "-o", "yaml").stdout
    )
    mirror.sync_all(listing["items"], listed_at=listed_at, namespaces=[namespace])


def test_resource_applied_with_kubectl_shows_through_the_mirror(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    manifest = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "from-kubectl", "namespace": namespace},
        "spec": spec("api", interval="10s"),
    }
    api_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    assert api.get(f"analyses/{namespace}/from-kubectl/").status_code == 404

    _resync(api_cluster, namespace)

    body = api.get(f"analyses/{namespace}/from-kubectl/").json()
    assert body["spec"]["interval"] == "10s"
    assert body["spec"]["dryRun"] is False  # defaulted by the API server
    # failureLimit is not (docs/resource.md): the mirror's parse applies the default.
    assert "failureLimit" not in body["spec"]
    row = Analysis.objects.live().get(namespace=namespace, name="from-kubectl")
    assert row.failure_limit == 3
    listed = api.get("analyses/", params={"namespace": namespace}).json()
    assert [item["name"] for item in listed["results"]] == ["from-kubectl"]


def test_list_filters_and_search(api: Api, make_api: MakeApi, namespace: str) -> None:
    for name, target in [("alpha", "checkout"), ("beta", "cart"), ("gamma", "payments")]:
        _create(api, namespace, name, target=target)
    Analysis.objects.filter(namespace=namespace, name="alpha").update(
        last_verdict="Fail", paused=True
    )
    Analysis.objects.filter(namespace=namespace, name="beta").update(last_verdict="Pass")

    def names(**params: str) -> list[str]:
        response = api.get("analyses/", params={"namespace": namespace, **params})
        assert response.status_code == 200, response.text
        return [item["name"] for item in response.json()["results"]]

    assert names() == ["alpha", "beta", "gamma"]
    assert names(verdict="Fail") == ["alpha"]
    assert names(verdict="Pass") == ["beta"]
    assert names(paused="true") == ["alpha"]
    assert names(paused="false") == ["beta", "gamma"]
    assert names(search="PAY") == ["gamma"]  # the target's name, case-insensitively
    assert names(search="bet") == ["beta"]
    assert api.get("analyses/", params={"namespace": "elsewhere"}).json()["results"] == []

    bad = api.get("analyses/", params={"verdict": "Maybe", "paused": "perhaps"})
    assert bad.status_code == 400
    assert set(bad.json()) == {"verdict", "paused"}


def test_list_pages(api: Api, namespace: str) -> None:
    for index in range(3):
        _create(api, namespace, f"a{index}", target=f"t{index}")
    first = api.get("analyses/", params={"namespace": namespace, "page_size": 2}).json()
    assert first["count"] == 3
    assert [item["name"] for item in first["results"]] == ["a0", "a1"]
    second = api.get(first["next"]).json()
    assert [item["name"] for item in second["results"]] == ["a2"]
