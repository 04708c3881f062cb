"""openapi: the /openapi/v3 index and per group-version documents, checked for exactly what
kubectl reads from them (explain, QueryParamVerifierV3, strategic-merge-patch support)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from devcluster import openapi
from devcluster.resources import Registry, ResourceType, types_from_crd
from testkit.paths import CRD_PATH

RA_ITEM = "/apis/sentinel.example.com/v1alpha1/namespaces/{namespace}/rolloutanalyses/{name}"
DEPLOY_ITEM = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
RA_COMPONENT = "com.example.sentinel.v1alpha1.RolloutAnalysis"


@pytest.fixture(scope="module")
def types() -> list[ResourceType]:
    registry = Registry()
    crd = yaml.safe_load(CRD_PATH.read_text())
    registry.set_crd(crd["metadata"]["name"], types_from_crd(crd))
    return registry.types


def _document(types: list[ResourceType], group: str, version: str) -> dict[str, Any]:
    selected = [t for t in types if (t.group, t.version) == (group, version)]
    return openapi.openapi_v3_document(group, version, selected)


def test_index_lists_every_group_version_with_its_hash(types: list[ResourceType]) -> None:
    index = openapi.openapi_v3_index(types)
    assert {"api/v1", "apis/apps/v1", "apis/sentinel.example.com/v1alpha1"} <= set(index["paths"])
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    expected = openapi.openapi_v3_hash(_document(types, "apps", "v1"))
    assert url == f"/openapi/v3/apis/apps/v1?hash={expected}"
    assert len(expected) == 128 and expected == expected.upper()


def test_the_hash_follows_the_crd_schema(types: list[ResourceType]) -> None:
    crd = yaml.safe_load(CRD_PATH.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["description"] = "Changed."
    changed = types_from_crd(crd)
    before = openapi.openapi_v3_hash(_document(types, "sentinel.example.com", "v1alpha1"))
    after = openapi.openapi_v3_hash(
        openapi.openapi_v3_document("sentinel.example.com", "v1alpha1", changed)
    )
    assert before != after


def test_patch_operations_advertise_field_validation(types: list[ResourceType]) -> None:
    """resource.QueryParamVerifierV3: a PATCH with the GVK lists the fieldValidation param."""
    document = _document(types, "sentinel.example.com", "v1alpha1")
    patch = document["paths"][RA_ITEM]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "sentinel.example.com", "kind": "RolloutAnalysis", "version": "v1alpha1",
    }  # fmt: skip
    assert patch["x-kubernetes-action"] == "patch"
    query = {p["name"] for p in patch["parameters"] if p["in"] == "query"}
    assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= query
    for method in ("put", "get", "delete"):
        assert document["paths"][RA_ITEM][method]["x-kubernetes-action"] == method
    collection = document["paths"][RA_ITEM.removesuffix("/{name}")]
    assert collection["post"]["x-kubernetes-action"] == "post"
    assert "fieldValidation" in {p["name"] for p in collection["post"]["parameters"]}
    assert collection["get"]["x-kubernetes-action"] == "list"


def test_strategic_merge_patch_only_for_builtin_kinds(types: list[ResourceType]) -> None:
    smp = "application/strategic-merge-patch+json"
    apps = _document(types, "apps", "v1")
    assert smp in apps["paths"][DEPLOY_ITEM]["patch"]["requestBody"]["content"]
    custom = _document(types, "sentinel.example.com", "v1alpha1")
    content = custom["paths"][RA_ITEM]["patch"]["requestBody"]["content"]
    assert smp not in content and "application/merge-patch+json" in content


def test_custom_component_carries_gvk_and_descriptions(types: list[ResourceType]) -> None:
    document = _document(types, "sentinel.example.com", "v1alpha1")
    component = document["components"]["schemas"][RA_COMPONENT]
    assert component["x-kubernetes-group-version-kind"] == [
        {"group": "sentinel.example.com", "kind": "RolloutAnalysis", "version": "v1alpha1"}
    ]
    spec = component["properties"]["spec"]
    assert spec["description"] == "What to measure, against which workload, and when to pause it."
    assert spec["properties"]["metrics"]["description"].startswith("PromQL metrics evaluated")
    assert component["properties"]["metadata"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": component["properties"]["metadata"]["description"],
    }
    assert component["properties"]["kind"]["description"].startswith("Kind is a string value")


def test_subresources_have_their_own_kinds(types: list[ResourceType]) -> None:
    apps = _document(types, "apps", "v1")
    scale = apps["paths"][f"{DEPLOY_ITEM}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling", "kind": "Scale", "version": "v1",
    }  # fmt: skip
    assert "io.k8s.api.autoscaling.v1.Scale" in apps["components"]["schemas"]
    status = apps["paths"][f"{DEPLOY_ITEM}/status"]
    assert status["put"]["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
    assert "delete" not in status
    core = _document(types, "", "v1")
    token = core["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]
    assert token["post"]["x-kubernetes-group-version-kind"] == {
        "group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1",
    }  # fmt: skip


def test_create_only_kinds_and_cluster_scoped_paths(types: list[ResourceType]) -> None:
    authz = _document(types, "authorization.k8s.io", "v1")
    review = authz["paths"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]
    assert set(review) == {"post", "parameters"}
    core = _document(types, "", "v1")
    assert "/api/v1/namespaces/{name}" in core["paths"]
    assert "/api/v1/namespaces/{namespace}/namespaces" not in core["paths"]
    assert core["paths"]["/api/v1/configmaps"]["get"]["x-kubernetes-action"] == "list"


@pytest.mark.parametrize(
    ("group", "version"),
    [("", "v1"), ("apps", "v1"), ("sentinel.example.com", "v1alpha1"),
     ("rbac.authorization.k8s.io", "v1"), ("apiextensions.k8s.io", "v1")],
)  # fmt: skip
def test_every_ref_resolves_inside_its_document(
    types: list[ResourceType], group: str, version: str
) -> None:
    document = _document(types, group, version)
    schemas = document["components"]["schemas"]
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    assert refs
    missing = {r for r in refs if r.removeprefix("#/components/schemas/") not in schemas}
    assert missing == set()


def test_no_openapi_v2(types: list[ResourceType]) -> None:
    assert openapi.openapi_v2_document(types) is None
