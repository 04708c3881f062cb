"""Structural schemas for the built-in kinds devcluster serves, generated from the official
``kubernetes`` client's models.

resources.py attaches ``schema_for(...)`` to every built-in ResourceType, so built-in
objects are pruned, defaulted and validated by schema.py like custom resources;
openapi.py publishes ``definitions_for(...)`` as OpenAPI v3 components for ``kubectl
explain`` and kubectl's strategic-merge-patch computation.

Each model class gives its properties (``openapi_types``/``attribute_map``), which of them
are required (pydantic fields without a default) and their descriptions; the class
docstring gives the type's description. What the models do not carry is added from small
tables: Kubernetes list types and patch strategies, int-or-string and quantity fields.
JSONSchemaProps (CRD schemas) is recursive and arbitrary; it becomes an object that keeps
unknown fields, so a CRD's schema is stored exactly as written.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

from kubernetes.client import models

_REF_PREFIX = "#/components/schemas/"

# (group, version, kind) -> model class name in kubernetes.client.models.
_KINDS: dict[tuple[str, str, str], str] = {
    ("", "v1", "Namespace"): "V1Namespace",
    ("", "v1", "Event"): "CoreV1Event",
    ("", "v1", "ConfigMap"): "V1ConfigMap",
    ("", "v1", "Secret"): "V1Secret",
    ("", "v1", "ServiceAccount"): "V1ServiceAccount",
    ("events.k8s.io", "v1", "Event"): "EventsV1Event",
    ("apps", "v1", "Deployment"): "V1Deployment",
    ("apps", "v1", "StatefulSet"): "V1StatefulSet",
    ("apps", "v1", "DaemonSet"): "V1DaemonSet",
    ("apps", "v1", "ReplicaSet"): "V1ReplicaSet",
    ("apps", "v1", "ControllerRevision"): "V1ControllerRevision",
    ("autoscaling", "v1", "Scale"): "V1Scale",
    ("coordination.k8s.io", "v1", "Lease"): "V1Lease",
    ("rbac.authorization.k8s.io", "v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"): "V1RoleBinding",
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"): "V1CustomResourceDefinition",
    ("authentication.k8s.io", "v1", "TokenRequest"): "AuthenticationV1TokenRequest",
    ("authentication.k8s.io", "v1", "SelfSubjectReview"): "V1SelfSubjectReview",
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"): "V1SelfSubjectAccessReview",
    ("authorization.k8s.io", "v1", "SubjectAccessReview"): "V1SubjectAccessReview",
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"): "V1LocalSubjectAccessReview",
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"): "V1SelfSubjectRulesReview",
}

# Go package (OpenAPI name prefix) of the group each root kind lives in.
_PACKAGES = {
    "": "io.k8s.api.core",
    "apps": "io.k8s.api.apps",
    "autoscaling": "io.k8s.api.autoscaling",
    "events.k8s.io": "io.k8s.api.events",
    "coordination.k8s.io": "io.k8s.api.coordination",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "authentication.k8s.io": "io.k8s.api.authentication",
    "authorization.k8s.io": "io.k8s.api.authorization",
}
_NAME_PREFIXES = {
    "Core": "",
    "Events": "events.k8s.io",
    "Rbac": "rbac.authorization.k8s.io",
    "Authentication": "authentication.k8s.io",
    "Apiextensions": "apiextensions.k8s.io",
}
_META = "io.k8s.apimachinery.pkg.apis.meta"
_META_TYPES = frozenset(
    {
        "ObjectMeta", "ListMeta", "LabelSelector", "LabelSelectorRequirement",
        "ManagedFieldsEntry", "OwnerReference", "Condition", "Status", "StatusCause",
        "StatusDetails", "DeleteOptions", "Preconditions", "FieldSelectorRequirement",
    }
)  # fmt: skip
_MODEL_NAME = re.compile(
    r"^(Core|Events|Rbac|Authentication|Apiextensions)?(V\d+(?:alpha\d+|beta\d+)?)(\w+)$"
)

# (model, JSON field) -> extensions the Go types declare with +listType/+patchStrategy.
_LIST_EXTENSIONS: dict[tuple[str, str], dict[str, Any]] = {}


def _list_map(strategy: str, *keys: str) -> dict[str, Any]:
    return {
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
        "x-kubernetes-patch-strategy": strategy,
        "x-kubernetes-patch-merge-key": keys[0],
    }


def _patch_only(strategy: str, key: str) -> dict[str, Any]:
    return {"x-kubernetes-patch-strategy": strategy, "x-kubernetes-patch-merge-key": key}


for _model in ("V1PodSpec",):
    _LIST_EXTENSIONS[(_model, "containers")] = _list_map("merge", "name")
    _LIST_EXTENSIONS[(_model, "initContainers")] = _list_map("merge", "name")
    _LIST_EXTENSIONS[(_model, "ephemeralContainers")] = _list_map("merge", "name")
    _LIST_EXTENSIONS[(_model, "volumes")] = _list_map("merge,retainKeys", "name")
    _LIST_EXTENSIONS[(_model, "imagePullSecrets")] = _patch_only("merge", "name")
    _LIST_EXTENSIONS[(_model, "hostAliases")] = _list_map("merge", "ip")
    _LIST_EXTENSIONS[(_model, "schedulingGates")] = _list_map("merge", "name")
    _LIST_EXTENSIONS[(_model, "resourceClaims")] = _list_map("merge,retainKeys", "name")
    _LIST_EXTENSIONS[(_model, "topologySpreadConstraints")] = _list_map(
        "merge", "topologyKey", "whenUnsatisfiable"
    )
for _model in ("V1Container", "V1EphemeralContainer"):
    _LIST_EXTENSIONS[(_model, "env")] = _list_map("merge", "name")
    _LIST_EXTENSIONS[(_model, "ports")] = _list_map("merge", "containerPort", "protocol")
    _LIST_EXTENSIONS[(_model, "volumeMounts")] = _list_map("merge", "mountPath")
    _LIST_EXTENSIONS[(_model, "volumeDevices")] = _list_map("merge", "devicePath")
for _model in (
    "V1DeploymentStatus",
    "V1StatefulSetStatus",
    "V1DaemonSetStatus",
    "V1NamespaceStatus",
    "V1CustomResourceDefinitionStatus",
):
    # The models do not mark condition types required, so these stay patch-only lists.
    _LIST_EXTENSIONS[(_model, "conditions")] = _patch_only("merge", "type")
_LIST_EXTENSIONS[("V1ObjectMeta", "ownerReferences")] = _list_map("merge", "uid")
_LIST_EXTENSIONS[("V1ObjectMeta", "finalizers")] = {
    "x-kubernetes-list-type": "set",
    "x-kubernetes-patch-strategy": "merge",
}
_LIST_EXTENSIONS[("V1ServiceAccount", "secrets")] = _patch_only("merge", "name")
_LIST_EXTENSIONS[("V1DeploymentSpec", "strategy")] = {"x-kubernetes-patch-strategy": "retainKeys"}

# (model, JSON field) -> the value Go defaulting gives an absent field; only unconditional
# scalar defaults fit a schema. ContainerPort.protocol must default: it is a list-map key.
_DEFAULTS: dict[tuple[str, str], Any] = {
    ("V1ContainerPort", "protocol"): "TCP",
    ("V1DeploymentSpec", "replicas"): 1,
    ("V1DeploymentSpec", "revisionHistoryLimit"): 10,
    ("V1DeploymentSpec", "progressDeadlineSeconds"): 600,
    ("V1StatefulSetSpec", "replicas"): 1,
    ("V1StatefulSetSpec", "revisionHistoryLimit"): 10,
    ("V1StatefulSetSpec", "podManagementPolicy"): "OrderedReady",
    ("V1DaemonSetSpec", "revisionHistoryLimit"): 10,
    ("V1Container", "terminationMessagePath"): "/dev/termination-log",
    ("V1Container", "terminationMessagePolicy"): "File",
    ("V1PodSpec", "restartPolicy"): "Always",
    ("V1PodSpec", "dnsPolicy"): "ClusterFirst",
    ("V1PodSpec", "schedulerName"): "default-scheduler",
    ("V1PodSpec", "terminationGracePeriodSeconds"): 30,
}

# `object` fields that are IntOrString in Go; every other `object` is free-form JSON.
_INT_OR_STRING_FIELDS = frozenset(
    {"maxSurge", "maxUnavailable", "minAvailable", "port", "targetPort"}
)
# String (or map of string) fields that are resource.Quantity in Go: 1, 0.5 and "500m" all fit.
_QUANTITY_FIELDS = frozenset(
    {"limits", "requests", "overhead", "sizeLimit", "divisor", "capacity", "allocatable", "hard",
     "used", "allocatedResources"}
)  # fmt: skip
_PRIMITIVES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
}
_FREE_FORM = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_RECURSIVE = frozenset({"V1JSONSchemaProps"})


def model_for(group: str, version: str, kind: str) -> str | None:
    """Return the kubernetes client model class name of a built-in kind, if we know it."""
    return _KINDS.get((group, version, kind))


def schema_for(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """Return the inline structural schema of a built-in kind (a fresh copy), or None."""
    model = model_for(group, version, kind)
    return None if model is None else copy.deepcopy(_inline_schema(model))


def definitions_for(group: str, version: str, kind: str) -> tuple[str, dict[str, Any]] | None:
    """Return (component name, {component name: schema}) for a built-in kind's OpenAPI v3.

    Schemas refer to each other with ``$ref: #/components/schemas/<name>``; the root one
    carries ``x-kubernetes-group-version-kind``.
    """
    model = model_for(group, version, kind)
    if model is None:
        return None
    definitions = copy.deepcopy(_reachable(model))
    root = component_name(model)
    definitions[root]["x-kubernetes-group-version-kind"] = [
        {"group": group, "kind": kind, "version": version}
    ]
    return root, definitions


def component_name(model: str) -> str:
    """Return the OpenAPI component name of a model, e.g. io.k8s.api.apps.v1.DeploymentSpec."""
    match = _MODEL_NAME.match(model)
    if match is None:
        return model
    prefix, version, type_name = match.groups()
    if type_name in _META_TYPES:
        package = _META
    elif prefix is not None:
        package = _PACKAGES[_NAME_PREFIXES[prefix]]
    else:
        package = _PACKAGES[_model_groups().get(model, "")]
    return f"{package}.{version.lower()}.{type_name}"


@functools.cache
def _model_groups() -> dict[str, str]:
    """Return model -> API group, by which root kinds reach it (core wins for shared types)."""
    groups: dict[str, str] = {}
    core_roots = [model for (group, _, _), model in _KINDS.items() if group == ""]
    for model in [*core_roots, "V1PodTemplateSpec"]:
        for reached in _references(model):
            groups.setdefault(reached, "")
    for (group, _, _), model in _KINDS.items():
        for reached in _references(model):
            groups.setdefault(reached, group)
    return groups


def _references(model: str) -> list[str]:
    seen: list[str] = []
    stack = [model]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.append(current)
        stack.extend(ref for ref in _model_refs(current) if ref not in _RECURSIVE)
    return seen


def _model_refs(model: str) -> list[str]:
    cls = getattr(models, model)
    return [
        ref
        for type_string in cls.openapi_types.values()
        for ref in re.findall(r"[A-Za-z][A-Za-z0-9]*", type_string)
        if ref not in _PRIMITIVES and ref not in ("List", "Dict", "object") and hasattr(models, ref)
    ]


@functools.cache
def _definition(model: str) -> dict[str, Any]:
    """Return the OpenAPI schema of one model, with $refs to the models it uses."""
    cls = getattr(models, model)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for attr, type_string in cls.openapi_types.items():
        name = cls.attribute_map[attr]
        field = cls.model_fields.get(attr)
        prop = _type_schema(type_string, name)
        description = field.description if field is not None else None
        if description:
            prop["description"] = description
        elif type_string in _RECURSIVE:
            prop["description"] = _class_description(getattr(models, type_string))
        elif "allOf" in prop:
            # The models keep no description for a property of another model's type; use
            # the type's. A plain $ref (not allOf) makes `kubectl explain` print it once.
            ref = prop["allOf"][0]["$ref"]
            target = getattr(models, type_string, None)
            prop = {"$ref": ref}
            if target is not None and _class_description(target):
                prop["description"] = _class_description(target)
        prop.update(_LIST_EXTENSIONS.get((model, name), {}))
        if (model, name) in _DEFAULTS:
            prop["default"] = _DEFAULTS[(model, name)]
        properties[name] = prop
        if field is not None and field.is_required():
            required.append(name)
    schema: dict[str, Any] = {"type": "object"}
    description = _class_description(cls)
    if description:
        schema["description"] = description
    schema["properties"] = properties
    if required:
        schema["required"] = required
    return schema


def _class_description(cls: type) -> str:
    text = (cls.__doc__ or "").split("Attributes:")[0]
    text = "\n".join(line.strip() for line in text.strip().splitlines())
    return "" if text.startswith("NOTE: This class is auto generated") else text


def _type_schema(type_string: str, name: str) -> dict[str, Any]:
    if type_string.startswith("List[") and type_string.endswith("]"):
        return {"type": "array", "items": _item_schema(type_string[5:-1], name)}
    if type_string.startswith("Dict[str, ") and type_string.endswith("]"):
        return {"type": "object", "additionalProperties": _item_schema(type_string[10:-1], name)}
    if type_string == "object":
        if name in _INT_OR_STRING_FIELDS:
            return {"x-kubernetes-int-or-string": True}
        return dict(_FREE_FORM)
    if type_string == "str" and name in _QUANTITY_FIELDS:
        return {"type": "string", "format": "quantity"}
    if type_string in _PRIMITIVES:
        return dict(_PRIMITIVES[type_string])
    if type_string in _RECURSIVE:
        return dict(_FREE_FORM)
    return {"allOf": [{"$ref": _REF_PREFIX + component_name(type_string)}]}


def _item_schema(type_string: str, name: str) -> dict[str, Any]:
    if type_string == "str" and name in _QUANTITY_FIELDS:
        return {"type": "string", "format": "quantity"}
    return _type_schema(type_string, name)


def model_definitions(model: str) -> dict[str, Any]:
    """Return {component name: schema} for ``model`` and every model it refers to (a copy)."""
    return copy.deepcopy(_reachable(model))


@functools.cache
def _reachable(model: str) -> dict[str, Any]:
    return {component_name(m): _definition(m) for m in _references(model)}


@functools.cache
def _inline_schema(model: str) -> dict[str, Any]:
    definitions = _reachable(model)
    return _inline(definitions[component_name(model)], definitions, ())


def _inline(
    schema: Mapping[str, Any], definitions: Mapping[str, Any], stack: tuple[str, ...]
) -> dict[str, Any]:
    """Return ``schema`` with every $ref replaced by the referenced schema (cycles cut)."""
    result: dict[str, Any] = {}
    for key, value in schema.items():
        ref = value[0].get("$ref") if key == "allOf" and len(value) == 1 else None
        if key == "$ref":
            ref = value
        if ref is not None:
            name = ref.removeprefix(_REF_PREFIX)
            resolved = (
                dict(_FREE_FORM)
                if name in stack
                else _inline(definitions[name], definitions, (*stack, name))
            )
            result = {**resolved, **result}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            result[key] = _inline(value, definitions, stack)
        elif key == "properties":
            result[key] = {k: _inline(v, definitions, stack) for k, v in value.items()}
        else:
            result[key] = value
    return result
