"""Registry of the resource types devcluster serves: built-in kinds plus every served CRD version.

The server routes requests through ``Registry.lookup``; discovery and OpenAPI documents
are generated from ``Registry.types``. CRD objects become ``ResourceType`` values through
``types_from_crd``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
# apiextensions-apiserver lists a custom resource's verbs in this (unsorted) order.
CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True)
class ResourceType:
    """One served resource (group, version, plural) and what the server knows about it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    schema: Mapping[str, Any] | None = None
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # True for CRD-defined kinds: strategic merge patch is refused and status rules differ.
    custom: bool = field(default=False, compare=False)
    # Kinds that share storage across versions/groups use the same storage key.
    storage_group: str | None = field(default=None, compare=False)

    @property
    def group_version(self) -> str:
        """Return "v1" for the core group, "group/version" otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> str:
        """Return the key objects of this type are stored under (shared by all versions)."""
        group = self.group if self.storage_group is None else self.storage_group
        return f"{group}/{self.plural}"

    @property
    def persisted(self) -> bool:
        """Return whether objects of this type are stored (review kinds are not)."""
        return "get" in self.verbs


def _builtin(
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    short_names: tuple[str, ...] = (),
    subresources: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
    categories: tuple[str, ...] = (),
    storage_group: str | None = None,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short_names,
        categories=categories,
        subresources=frozenset(subresources),
        verbs=verbs,
        storage_group=storage_group,
    )


_BUILTINS: tuple[ResourceType, ...] = (
    _builtin("", "v1", "Namespace", "namespaces", False, ("ns",), ("status",)),
    _builtin("", "v1", "Event", "events", True, ("ev",)),
    _builtin("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    _builtin("", "v1", "Secret", "secrets", True),
    _builtin("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    # Stored but inert (nothing routes traffic); kubectl cluster-info lists them.
    _builtin("", "v1", "Service", "services", True, ("svc",), ("status",), categories=("all",)),
    _builtin(
        "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)
    ),
    _builtin("events.k8s.io", "v1", "Event", "events", True, ("ev",), storage_group=""),
    _builtin(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        True,
        ("deploy",),
        ("status", "scale"),
        categories=("all",),
    ),
    # The other kinds a RolloutAnalysis guards: stored, defaulted and validated; their status
    # is the one their controllers write once the pods run (builtins.simulate_*_status).
    _builtin(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        True,
        ("sts",),
        ("status", "scale"),
        categories=("all",),
    ),
    _builtin(
        "apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), categories=("all",)
    ),
    # Listed and watched by the operator's caches (docs/architecture.md#reads-from-caches):
    # stored, served and watched as any kind; no controller here makes them (docs/devcluster.md).
    _builtin(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        True,
        ("rs",),
        ("status", "scale"),
        categories=("all",),
    ),
    _builtin("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    _builtin("coordination.k8s.io", "v1", "Lease", "leases", True),
    _builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        verbs=CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        False,
        verbs=CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        True,
        verbs=CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        False,
        verbs=CREATE_ONLY,
    ),
    _builtin(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        verbs=CREATE_ONLY,
    ),
)


def _with_builtin_schema(rtype: ResourceType) -> ResourceType:
    try:
        from devcluster.builtin_schemas import schema_for
    except ImportError:
        return rtype
    schema = schema_for(rtype.group, rtype.version, rtype.kind)
    if schema is None:
        return rtype
    return ResourceType(**{**rtype.__dict__, "schema": schema})


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """Return one ResourceType per served version of a CustomResourceDefinition object."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    result = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        result.append(
            ResourceType(
                group=spec.get("group", ""),
                version=version.get("name", ""),
                kind=names.get("kind", ""),
                plural=names.get("plural", ""),
                singular=names.get("singular") or names.get("kind", "").lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset(key for key in ("status", "scale") if key in subresources),
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                verbs=CUSTOM_VERBS,
                custom=True,
            )
        )
    return result


# The order of kube-apiserver v1.37's /apis (its groups' priorities); a client resolving a
# name that two groups share ("events") takes the first. CRD groups follow.
_GROUP_ORDER = (
    "", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io",
    "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
    "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
    "discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io",
    "storagemigration.k8s.io",
)  # fmt: skip


class Registry:
    """Thread-safe set of served types: the built-ins plus the current CRDs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builtins = tuple(_with_builtin_schema(rtype) for rtype in _BUILTINS)
        self._crd_types: dict[str, list[ResourceType]] = {}

    def set_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        """Serve ``types`` for the CRD called ``crd_name`` (replacing its previous types)."""
        with self._lock:
            self._crd_types[crd_name] = types

    def remove_crd(self, crd_name: str) -> None:
        """Stop serving the CRD called ``crd_name``."""
        with self._lock:
            self._crd_types.pop(crd_name, None)

    @property
    def types(self) -> list[ResourceType]:
        """Return every served type, built-ins first."""
        with self._lock:
            custom = [rtype for types in self._crd_types.values() for rtype in types]
        return [*self._builtins, *custom]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """Return the type served at /apis/{group}/{version}/{plural}, if any."""
        for rtype in self.types:
            if (rtype.group, rtype.version, rtype.plural) == (group, version, plural):
                return rtype
        return None

    def group_versions(self) -> dict[str, list[str]]:
        """Return {group: [versions]} in serving order ("" is the core group): built-in
        groups in kube-apiserver's order, then the CRDs' groups."""
        result: dict[str, list[str]] = {}
        for rtype in self.types:
            versions = result.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        rank = {group: index for index, group in enumerate(_GROUP_ORDER)}
        ordered = sorted(result, key=lambda group: rank.get(group, len(rank)))
        return {group: result[group] for group in ordered}
