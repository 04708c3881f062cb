"""Decode the Kubernetes protobuf request bodies kubectl sends for built-in kinds.

kubectl's typed clients (``create namespace|serviceaccount|configmap|secret|deployment|
role...``, ``create token``, ``auth can-i``) encode bodies as
``application/vnd.kubernetes.protobuf`` and client-go never falls back to JSON for
protobuf, so the server must read them. Only the messages those commands send are
described here (field numbers from k8s.io/api generated.proto); unknown fields are
skipped. server.py calls ``decode`` and stores the resulting JSON-shaped dict.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from devcluster.status import ApiError

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# message name -> {field number: (json name, type)}; a type is a scalar name, a message
# name, "[]" + type for repeated, "map:" + value type, or a trailing "?" for pointer
# scalars whose zero value is meaningful.
_M: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {
        1: ("typeMeta", "TypeMeta"),
        2: ("raw", "bytes"),
        3: ("contentEncoding", "string"),
        4: ("contentType", "string"),
    },
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {
        1: ("name", "string"),
        2: ("generateName", "string"),
        3: ("namespace", "string"),
        5: ("uid", "string"),
        6: ("resourceVersion", "string"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "Time"),
        9: ("deletionTimestamp", "Time"),
        10: ("deletionGracePeriodSeconds", "int?"),
        11: ("labels", "map:string"),
        12: ("annotations", "map:string"),
        13: ("ownerReferences", "[]OwnerReference"),
        14: ("finalizers", "[]string"),
    },
    "OwnerReference": {
        1: ("kind", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
        5: ("apiVersion", "string"),
        6: ("controller", "bool?"),
        7: ("blockOwnerDeletion", "bool?"),
    },
    "LabelSelector": {
        1: ("matchLabels", "map:string"),
        2: ("matchExpressions", "[]LabelSelectorRequirement"),
    },
    "LabelSelectorRequirement": {
        1: ("key", "string"),
        2: ("operator", "string"),
        3: ("values", "[]string"),
    },
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "[]string")},
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta"),
        2: ("secrets", "[]ObjectReference"),
        3: ("imagePullSecrets", "[]LocalObjectReference"),
        4: ("automountServiceAccountToken", "bool?"),
    },
    "ObjectReference": {
        1: ("kind", "string"),
        2: ("namespace", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
        5: ("apiVersion", "string"),
        6: ("resourceVersion", "string"),
        7: ("fieldPath", "string"),
    },
    "LocalObjectReference": {1: ("name", "string")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "map:string"),
        3: ("binaryData", "map:bytes"),
        4: ("immutable", "bool?"),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "map:bytes"),
        3: ("type", "string"),
        4: ("stringData", "map:string"),
        5: ("immutable", "bool?"),
    },
    "Deployment": {1: ("metadata", "ObjectMeta"), 2: ("spec", "DeploymentSpec")},
    "DeploymentSpec": {
        1: ("replicas", "int?"),
        2: ("selector", "LabelSelector"),
        3: ("template", "PodTemplateSpec"),
        4: ("strategy", "DeploymentStrategy"),
        5: ("minReadySeconds", "int"),
        6: ("revisionHistoryLimit", "int?"),
        7: ("paused", "bool"),
        9: ("progressDeadlineSeconds", "int?"),
    },
    "DeploymentStrategy": {1: ("type", "string"), 2: ("rollingUpdate", "RollingUpdate")},
    "RollingUpdate": {1: ("maxUnavailable", "IntOrString"), 2: ("maxSurge", "IntOrString")},
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodSpec": {
        2: ("containers", "[]Container"),
        3: ("restartPolicy", "string"),
        4: ("terminationGracePeriodSeconds", "int?"),
        6: ("dnsPolicy", "string"),
        7: ("nodeSelector", "map:string"),
        8: ("serviceAccountName", "string"),
        19: ("schedulerName", "string"),
        20: ("initContainers", "[]Container"),
    },
    "Container": {
        1: ("name", "string"),
        2: ("image", "string"),
        3: ("command", "[]string"),
        4: ("args", "[]string"),
        5: ("workingDir", "string"),
        6: ("ports", "[]ContainerPort"),
        7: ("env", "[]EnvVar"),
        8: ("resources", "ResourceRequirements"),
        13: ("terminationMessagePath", "string"),
        14: ("imagePullPolicy", "string"),
        20: ("terminationMessagePolicy", "string"),
    },
    "ContainerPort": {
        1: ("name", "string"),
        2: ("hostPort", "int"),
        3: ("containerPort", "int"),
        4: ("protocol", "string"),
        5: ("hostIP", "string"),
    },
    "EnvVar": {1: ("name", "string"), 2: ("value", "string")},
    "ResourceRequirements": {1: ("limits", "map:Quantity"), 2: ("requests", "map:Quantity")},
    "Quantity": {1: ("string", "string")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "string")},
    "TokenRequest": {1: ("metadata", "ObjectMeta"), 2: ("spec", "TokenRequestSpec")},
    "TokenRequestSpec": {
        1: ("audiences", "[]string"),
        3: ("boundObjectRef", "BoundObjectReference"),
        4: ("expirationSeconds", "int?"),
    },
    "BoundObjectReference": {
        1: ("kind", "string"),
        2: ("apiVersion", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "ObjectMeta"),
        2: ("spec", "SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
    },
    "SubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SubjectAccessReviewSpec")},
    "LocalSubjectAccessReview": {
        1: ("metadata", "ObjectMeta"),
        2: ("spec", "SubjectAccessReviewSpec"),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
        3: ("user", "string"),
        4: ("groups", "[]string"),
        6: ("uid", "string"),
    },
    "ResourceAttributes": {
        1: ("namespace", "string"),
        2: ("verb", "string"),
        3: ("group", "string"),
        4: ("version", "string"),
        5: ("resource", "string"),
        6: ("subresource", "string"),
        7: ("name", "string"),
    },
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
    "SelfSubjectRulesReview": {
        1: ("metadata", "ObjectMeta"),
        2: ("spec", "SelfSubjectRulesReviewSpec"),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string")},
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta")},
    "Role": {1: ("metadata", "ObjectMeta"), 2: ("rules", "[]PolicyRule")},
    "ClusterRole": {
        1: ("metadata", "ObjectMeta"),
        2: ("rules", "[]PolicyRule"),
        3: ("aggregationRule", "AggregationRule"),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "[]LabelSelector")},
    "PolicyRule": {
        1: ("verbs", "[]string"),
        2: ("apiGroups", "[]string"),
        3: ("resources", "[]string"),
        4: ("resourceNames", "[]string"),
        5: ("nonResourceURLs", "[]string"),
    },
    "RoleBinding": {
        1: ("metadata", "ObjectMeta"),
        2: ("subjects", "[]Subject"),
        3: ("roleRef", "RoleRef"),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "ObjectMeta"),
        2: ("subjects", "[]Subject"),
        3: ("roleRef", "RoleRef"),
    },
    "Subject": {
        1: ("kind", "string"),
        2: ("apiGroup", "string"),
        3: ("name", "string"),
        4: ("namespace", "string"),
    },
    "RoleRef": {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "MapEntry": {1: ("key", "string"), 2: ("value", "bytes")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int?"),
        2: ("preconditions", "Preconditions"),
        3: ("orphanDependents", "bool?"),
        4: ("propagationPolicy", "string"),
        5: ("dryRun", "[]string"),
    },
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    fields, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.append((number, wire, value))
    return fields


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, raw: Any) -> Any:
    if kind == "string":
        return bytes(raw).decode("utf-8")
    if kind == "bytes":
        return bytes(raw)
    if kind == "int":
        return _signed(int(raw))
    if kind == "bool":
        return bool(raw)
    return _message(kind, bytes(raw))


def _message(name: str, data: bytes) -> Any:
    spec = _M[name]
    result: dict[str, Any] = {}
    for number, _wire, raw in _fields(data):
        if number not in spec:
            continue
        key, kind = spec[number]
        pointer = kind.endswith("?")
        kind = kind.rstrip("?")
        if kind.startswith("[]"):
            result.setdefault(key, []).append(_scalar(kind[2:], raw))
        elif kind.startswith("map:"):
            entry = {n: v for n, _w, v in _fields(bytes(raw))}
            value_kind = kind[4:]
            value = _scalar(value_kind, entry.get(2, b""))
            if value_kind == "bytes":
                value = base64.b64encode(value).decode()
            elif value_kind == "Quantity":
                value = value.get("string", "")
            result.setdefault(key, {})[bytes(entry.get(1, b"")).decode()] = value
        else:
            value = _scalar(kind, raw)
            if kind == "Time":
                value = _time(value)
            elif kind == "IntOrString":
                value = (
                    value.get("intVal", 0) if value.get("type", 0) == 0 else value.get("strVal", "")
                )
            if pointer or value not in ("", 0, False, {}, [], None):
                result[key] = value
    return result


def _time(value: dict[str, Any]) -> str | None:
    seconds = value.get("seconds", 0)
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode(body: bytes) -> dict[str, Any]:
    """Return the JSON-shaped object of a protobuf request body, or raise a 415/400."""
    if not body.startswith(MAGIC):
        raise ApiError(
            400, "the body of the request was in an unknown format: missing protobuf envelope"
        )
    try:
        envelope = _message("Unknown", body[len(MAGIC) :])
        type_meta = envelope.get("typeMeta") or {}
        kind = type_meta.get("kind", "")
        if kind not in _M:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - protobuf is not "
                f"supported for {kind or 'this kind'}; send application/json",
                reason="UnsupportedMediaType",
            )
        obj = _message(kind, envelope.get("raw", b""))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body of the request could not be decoded: {exc}") from exc
    if type_meta.get("apiVersion"):
        obj["apiVersion"] = type_meta["apiVersion"]
    obj["kind"] = kind
    return obj
