"""Writes the cluster refuses or cannot take: 409, 503, 400 — and nothing written anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from analyses.models import Analysis
from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_json
from testkit.devcluster import DevCluster
from testkit.manifests import analysis_spec as spec
from testkit.namespaces import unique_name
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)


def _row(namespace: str, name: str = "checkout") -> dict[str, Any]:
    """Return the mirror row's columns that a failed write must leave alone."""
    row = Analysis.objects.get(namespace=namespace, name=name)
    return {
        "resource_version": row.resource_version,
        "spec": row.spec,
        "deleted_at": row.deleted_at,
        "failure_limit": row.failure_limit,
        "metrics": [(m.name, m.max_value) for m in row.metrics.all()],
    }


@pytest.fixture
def created(api: Api, namespace: str) -> dict[str, Any]:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_stale_resource_version_is_409_and_nothing_is_written(
    api: Api, namespace: str, api_cluster: Cluster, created: dict[str, Any]
) -> None:
    # Someone edits the resource with kubectl; the mirror has not seen it (no watch here).
    api_cluster.kubectl(
        "patch",
        "rolloutanalysis",
        "checkout",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec": {"failureLimit": 7}}',
    )
    edited = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    before = _row(namespace)

    put = api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=4)})
    patch = api.patch(
        f"analyses/{namespace}/checkout/",
        json={"spec": {"dryRun": True}, "resourceVersion": created["resourceVersion"]},
    )
    delete = api.delete(f"analyses/{namespace}/checkout/")

    for response in (put, patch, delete):
        assert response.status_code == 409, response.text
        body = response.json()
        assert body["code"] == "conflict"
        assert "changed in the cluster" in body["detail"]
    after = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert after["metadata"]["resourceVersion"] == edited["metadata"]["resourceVersion"]
    assert after["spec"]["failureLimit"] == 7
    assert _row(namespace) == before


def test_status_writes_of_the_operator_do_not_block_edits(
    api: Api, namespace: str, api_cluster: Cluster, created: dict[str, Any]
) -> None:
    # The operator writes status (a new resourceVersion) before the mirror has seen it.
    client = kube.KubeClient(kube.load_api_client(str(api_cluster.kubeconfig)))
    path = kube.analysis_path(namespace, "checkout")
    resource = client.request("GET", path)
    status = {"failures": 2, "lastVerdict": "Fail"}
    client.request("PUT", f"{path}/status", body={**resource, "status": status})

    put = api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=4)})
    assert put.status_code == 200, put.text
    delete_stale = api.delete(
        f"analyses/{namespace}/checkout/", params={"resourceVersion": created["resourceVersion"]}
    )
    # An explicit version is honoured strictly: the spec edit above moved the resource on.
    assert delete_stale.status_code == 409

    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"]["failureLimit"] == 4
    assert in_cluster["status"] == status
    assert put.json()["status"] == status
    client.request("PUT", f"{path}/status", body={**in_cluster, "status": {"failures": 0}})
    assert api.delete(f"analyses/{namespace}/checkout/").status_code == 204


def test_client_resource_version_is_the_precondition(
    api: Api, namespace: str, api_cluster: Cluster, created: dict[str, Any]
) -> None:
    response = api.put(
        f"analyses/{namespace}/checkout/",
        json={"spec": spec(failureLimit=4), "resourceVersion": "1"},
    )
    assert response.status_code == 409
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"]["failureLimit"] == 3

    response = api.put(
        f"analyses/{namespace}/checkout/",
        json={"spec": spec(failureLimit=4), "resourceVersion": created["resourceVersion"]},
    )
    assert response.status_code == 200, response.text


def test_deleted_in_the_cluster_is_409(
    api: Api, namespace: str, api_cluster: Cluster, created: dict[str, Any]
) -> None:
    api_cluster.kubectl("delete", "rolloutanalysis", "checkout", "-n", namespace)
    before = _row(namespace)

    response = api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=4)})

    assert response.status_code == 409
    assert "deleted in the cluster" in response.json()["detail"]
    assert _row(namespace) == before


def test_injected_503_is_503_and_nothing_is_written(
    api: Api, namespace: str, api_faults: DevCluster, created: dict[str, Any]
) -> None:
    before = _row(namespace)
    path = f"/namespaces/{namespace}/rolloutanalyses"
    api_faults.inject_fault(path_regex=path, status=503)
    try:
        responses = [
            api.post("analyses/", json={"namespace": namespace, "name": "new", "spec": spec()}),
            api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=4)}),
            api.delete(f"analyses/{namespace}/checkout/"),
            api.post(f"analyses/{namespace}/checkout/resume/"),
        ]
    finally:
        api_faults.clear_faults()

    for response in responses:
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "cluster_unavailable"
        assert response.headers["Retry-After"] == "5"
    assert not Analysis.objects.filter(namespace=namespace, name="new").exists()
    assert _row(namespace) == before
    listing = kubectl_json(api_faults, "rolloutanalyses", "-n", namespace)
    assert [item["metadata"]["name"] for item in listing["items"]] == ["checkout"]
    assert listing["items"][0]["spec"]["failureLimit"] == 3


def test_api_server_refusal_is_400_and_nothing_is_written(
    api: Api, namespace: str, api_faults: DevCluster
) -> None:
    api_faults.inject_fault(path_regex=f"/namespaces/{namespace}/", status=422, times=1)
    try:
        response = api.post(
            "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
        )
    finally:
        api_faults.clear_faults()

    assert response.status_code == 400
    assert list(response.json()) == ["non_field_errors"]
    assert not Analysis.objects.exists()
    assert kubectl_json(api_faults, "rolloutanalyses", "-n", namespace)["items"] == []


def test_stopped_cluster_is_503_and_nothing_is_written(
    api: Api, settings: Any, restartable_cluster: Cluster
) -> None:
    # On real, the session's API server itself is stopped (restarted after the test).
    cluster = restartable_cluster
    namespace = unique_name("api")
    cluster.kubectl("create", "namespace", namespace)
    settings.SENTINEL_KUBECONFIG = str(cluster.kubeconfig)
    try:
        created = api.post(
            "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
        )
        assert created.status_code == 201, created.text
        before = _row(namespace)
    finally:
        cluster.stop()

    responses = [
        api.post("analyses/", json={"namespace": namespace, "name": "other", "spec": spec()}),
        api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=4)}),
        api.patch(f"analyses/{namespace}/checkout/", json={"spec": {"dryRun": True}}),
        api.delete(f"analyses/{namespace}/checkout/"),
        api.post(f"analyses/{namespace}/checkout/resume/"),
    ]

    for response in responses:
        assert response.status_code == 503, response.text
        assert "cannot be reached" in response.json()["detail"]
    assert list(Analysis.objects.values_list("name", flat=True)) == ["checkout"]
    assert _row(namespace) == before
    # Reads come from the mirror and keep working while the cluster is away.
    assert api.get(f"analyses/{namespace}/checkout/").json()["spec"] == created.json()["spec"]


# The kubeconfig is broken before any cluster is reached: nothing here depends on the kind.
@pytest.mark.clusters("dev")
def test_unreadable_kubeconfig_is_503(
    api: Api, namespace: str, settings: Any, tmp_path: Path
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config"}))
    settings.SENTINEL_KUBECONFIG = str(broken)
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
    )
    assert response.status_code == 503
    assert "configuration" in response.json()["detail"]
    assert not Analysis.objects.exists()
