"""builtin_schemas: structural schemas generated from the real kubernetes client models, and
what schema.py does with them for Deployments and friends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster import builtin_schemas, crd_validation, schema

KINDS = [
    ("", "v1", "Namespace"),
    ("", "v1", "Event"),
    ("events.k8s.io", "v1", "Event"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "ServiceAccount"),
    ("apps", "v1", "Deployment"),
    ("autoscaling", "v1", "Scale"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
]


@pytest.mark.parametrize(("group", "version", "kind"), KINDS)
def test_every_builtin_schema_is_structural(group: str, version: str, kind: str) -> None:
    generated = builtin_schemas.schema_for(group, version, kind)
    assert generated is not None
    assert generated["type"] == "object"
    assert {"apiVersion", "kind", "metadata"} <= set(generated["properties"])
    assert crd_validation.structural_causes(generated, "openAPIV3Schema") == []


def test_unknown_kinds_have_no_schema() -> None:
    assert builtin_schemas.schema_for("apps", "v1", "StatefulSetOfDreams") is None
    assert builtin_schemas.definitions_for("sentinel.example.com", "v1alpha1", "X") is None


def test_schema_for_returns_a_fresh_copy() -> None:
    first = builtin_schemas.schema_for("", "v1", "ConfigMap")
    assert first is not None
    first["properties"].clear()
    again = builtin_schemas.schema_for("", "v1", "ConfigMap")
    assert again is not None and "data" in again["properties"]


@pytest.fixture(scope="module")
def deployment_schema() -> dict[str, Any]:
    generated = builtin_schemas.schema_for("apps", "v1", "Deployment")
    assert generated is not None
    return generated


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "1"}],
                            "resources": {"limits": {"cpu": 0.5, "memory": "1Gi"},
                                          "requests": {"cpu": 1}},
                            "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                        }
                    ]
                },
            },
        },
    }  # fmt: skip


def test_a_realistic_deployment_is_valid_and_kept(deployment_schema: dict[str, Any]) -> None:
    obj = _deployment()
    assert schema.validate(deployment_schema, obj) == []
    assert schema.prune(deployment_schema, obj) == (obj, [])


def test_deployment_gets_go_defaults(deployment_schema: dict[str, Any]) -> None:
    obj = _deployment()
    del obj["spec"]["replicas"]
    del obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"]
    defaulted = schema.apply_defaults(deployment_schema, obj)
    spec = defaulted["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (
        1, 10, 600,
    )  # fmt: skip
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"]) == ("Always", "ClusterFirst")
    assert pod["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "status" not in defaulted
    assert schema.validate(deployment_schema, defaulted) == []


def test_deployment_descriptions_come_from_the_models(deployment_schema: dict[str, Any]) -> None:
    spec = deployment_schema["properties"]["spec"]
    assert spec["description"].startswith("DeploymentSpec is the specification")
    assert spec["properties"]["replicas"]["description"].startswith("Number of desired pods.")
    assert spec["properties"]["replicas"]["type"] == "integer"


def test_deployment_required_fields(deployment_schema: dict[str, Any]) -> None:
    obj = _deployment()
    del obj["spec"]["selector"]
    del obj["spec"]["template"]["spec"]["containers"][0]["name"]
    assert [str(c) for c in schema.validate(deployment_schema, obj)] == [
        "spec.template.spec.containers[0].name: Required value",
        "spec.selector: Required value",
    ]


def test_duplicate_list_map_keys_in_a_deployment(deployment_schema: dict[str, Any]) -> None:
    obj = _deployment()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "A", "value": "2"})
    container["ports"].append({"containerPort": 80, "protocol": "TCP"})
    obj["spec"]["template"]["spec"]["containers"].append(copy.deepcopy(container))
    lines = [str(c) for c in schema.validate(deployment_schema, obj)]
    prefix = "spec.template.spec.containers"
    assert lines == [
        f'{prefix}[1]: Duplicate value: {{"name":"web"}}',
        f'{prefix}[0].ports[1]: Duplicate value: {{"containerPort":80,"protocol":"TCP"}}',
        f'{prefix}[0].env[1]: Duplicate value: {{"name":"A"}}',
        f'{prefix}[1].ports[1]: Duplicate value: {{"containerPort":80,"protocol":"TCP"}}',
        f'{prefix}[1].env[1]: Duplicate value: {{"name":"A"}}',
    ]


def test_deployment_type_errors_and_unknown_fields(deployment_schema: dict[str, Any]) -> None:
    obj = _deployment()
    obj["spec"]["replicas"] = "two"
    obj["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = True
    obj["spec"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    pruned, dropped = schema.prune(deployment_schema, obj)
    assert dropped == ["spec.template.spec.containers[0].imagee"]
    assert [str(c) for c in schema.validate(deployment_schema, pruned)] == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
        'integer: "string"',
        'spec.strategy.rollingUpdate.maxSurge: Invalid value: "boolean": '
        'spec.strategy.rollingUpdate.maxSurge in body must be of type integer,string: "boolean"',
    ]


def test_crd_schemas_inside_a_crd_are_kept_verbatim() -> None:
    crd_schema = builtin_schemas.schema_for(
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition"
    )
    assert crd_schema is not None
    open_api = {
        "type": "object",
        "x-kubernetes-list-type": "map",
        "properties": {"spec": {"type": "object", "x-anything": [1, {"nested": True}]}},
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": open_api}}
            ],
        },
    }  # fmt: skip
    assert schema.prune(crd_schema, crd) == (crd, [])
    assert schema.validate(crd_schema, crd) == []


def test_rbac_and_token_request_required_fields() -> None:
    binding = builtin_schemas.schema_for("rbac.authorization.k8s.io", "v1", "RoleBinding")
    assert binding is not None
    obj = {"metadata": {"name": "b"}, "subjects": [{"kind": "ServiceAccount"}]}
    assert [str(c) for c in schema.validate(binding, obj)] == [
        "subjects[0].name: Required value",
        "roleRef: Required value",
    ]
    token = builtin_schemas.schema_for("authentication.k8s.io", "v1", "TokenRequest")
    assert token is not None
    # kubectl create token sends "audiences": null when --audience is not given.
    request = {"spec": {"audiences": None, "expirationSeconds": 3600}}
    defaulted = schema.apply_defaults(token, request)
    assert schema.validate(token, defaulted) == []


def test_definitions_use_kube_apiserver_component_names() -> None:
    found = builtin_schemas.definitions_for("apps", "v1", "Deployment")
    assert found is not None
    root, definitions = found
    assert root == "io.k8s.api.apps.v1.Deployment"
    assert definitions[root]["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    for name in (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "io.k8s.api.core.v1.PodTemplateSpec",
        "io.k8s.api.core.v1.Container",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    ):
        assert name in definitions
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]
    }
    assert builtin_schemas.component_name("CoreV1Event") == "io.k8s.api.core.v1.Event"
    assert builtin_schemas.component_name("EventsV1Event") == "io.k8s.api.events.v1.Event"
