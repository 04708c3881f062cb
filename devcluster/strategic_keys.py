"""The ``patchStrategy``/``patchMergeKey`` struct tags of the built-in kinds, as a data table.

strategic.py reads :data:`STRATEGIC_PATCH_FIELDS` to decide, field by field, whether a list is
merged by key or replaced and whether a map keeps only the patched keys (``retainKeys``); a kind
missing from the table has no strategic merge patch (the server answers 415).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["STRATEGIC_PATCH_FIELDS"]

_CONTAINER_LISTS: dict[str, tuple[str, str]] = {
    "ports": ("merge", "containerPort"),
    "env": ("merge", "name"),
    "volumeMounts": ("merge", "mountPath"),
    "volumeDevices": ("merge", "devicePath"),
}
_POD_SPEC_FIELDS: dict[str, tuple[str, str]] = {
    "volumes": ("merge,retainKeys", "name"),
    "initContainers": ("merge", "name"),
    "containers": ("merge", "name"),
    "ephemeralContainers": ("merge", "name"),
    "imagePullSecrets": ("merge", "name"),
    "hostAliases": ("merge", "ip"),
    "topologySpreadConstraints": ("merge", "topologyKey"),
    "schedulingGates": ("merge", "name"),
    "resourceClaims": ("merge,retainKeys", "name"),
    **{
        f"{containers}.{field}": strategy
        for containers in ("initContainers", "containers", "ephemeralContainers")
        for field, strategy in _CONTAINER_LISTS.items()
    },
}
_OBJECT_META_FIELDS: dict[str, tuple[str, str]] = {
    "finalizers": ("merge", ""),
    "ownerReferences": ("merge", "uid"),
}


def _prefixed(prefix: str, fields: Mapping[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {f"{prefix}.{path}": strategy for path, strategy in fields.items()}


_METADATA = _prefixed("metadata", _OBJECT_META_FIELDS)
_POD_TEMPLATE = {
    **_prefixed("metadata", _OBJECT_META_FIELDS),
    **_prefixed("spec", _POD_SPEC_FIELDS),
}

STRATEGIC_PATCH_FIELDS: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("apps", "Deployment"): {
        **_METADATA,
        "spec.strategy": ("retainKeys", ""),
        **_prefixed("spec.template", _POD_TEMPLATE),
        "status.conditions": ("merge", "type"),
    },
    ("apps", "StatefulSet"): {
        **_METADATA,
        **_prefixed("spec.template", _POD_TEMPLATE),
        "status.conditions": ("merge", "type"),
    },
    ("apps", "DaemonSet"): {
        **_METADATA,
        **_prefixed("spec.template", _POD_TEMPLATE),
        "status.conditions": ("merge", "type"),
    },
    ("", "Pod"): {
        **_METADATA,
        **_prefixed("spec", _POD_SPEC_FIELDS),
        "status.conditions": ("merge", "type"),
    },
    ("", "Namespace"): {**_METADATA, "status.conditions": ("merge", "type")},
    ("", "ServiceAccount"): {**_METADATA, "secrets": ("merge", "name")},
    ("", "ConfigMap"): _METADATA,
    ("", "Secret"): _METADATA,
    ("", "Event"): _METADATA,
    ("events.k8s.io", "Event"): _METADATA,
    ("coordination.k8s.io", "Lease"): _METADATA,
    ("rbac.authorization.k8s.io", "Role"): _METADATA,
    ("rbac.authorization.k8s.io", "ClusterRole"): _METADATA,
    ("rbac.authorization.k8s.io", "RoleBinding"): _METADATA,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _METADATA,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _METADATA,
}
"""``patchStrategy`` and ``patchMergeKey`` struct tags of the built-in kinds devcluster serves.

Keyed by (group, kind), then by the dotted field path from the object root (list elements add
no path segment). Fields not listed are maps merged key by key and lists replaced whole, as for
untagged Go fields. Taken from k8s.io/api core/v1, apps/v1 and meta/v1 types.go.
"""
