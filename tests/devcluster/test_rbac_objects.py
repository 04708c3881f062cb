"""RBAC object builders and an in-memory ``RbacSource`` shared by the test_rbac_* modules.

The source is a real implementation of the protocol over plain objects, the way the
store serves them, so the authorizer is exercised exactly as the server calls it. (Named
test_rbac_* to stay within the files the RBAC tests own; it holds no tests itself.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from devcluster.auth import UserInfo, serviceaccount_user

RBAC = "rbac.authorization.k8s.io"


class Objects:
    """Roles, ClusterRoles and bindings held in lists, answering ``list_rbac``."""

    def __init__(self, *objects: Mapping[str, Any]) -> None:
        self.objects: list[Mapping[str, Any]] = list(objects)
        self.calls = 0

    def add(self, *objects: Mapping[str, Any]) -> None:
        self.objects.extend(objects)

    def list_rbac(self, resource: str, namespace: str | None) -> list[Mapping[str, Any]]:
        self.calls += 1
        kind = {
            "roles": "Role",
            "rolebindings": "RoleBinding",
            "clusterroles": "ClusterRole",
            "clusterrolebindings": "ClusterRoleBinding",
        }[resource]
        return [
            obj
            for obj in self.objects
            if obj["kind"] == kind
            and (namespace is None or obj["metadata"].get("namespace") == namespace)
        ]


def rule(
    verbs: Sequence[str],
    resources: Sequence[str] = (),
    groups: Sequence[str] = ("",),
    names: Sequence[str] = (),
    urls: Sequence[str] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": list(verbs)}
    if urls:
        out["nonResourceURLs"] = list(urls)
    else:
        out["apiGroups"] = list(groups)
        out["resources"] = list(resources)
    if names:
        out["resourceNames"] = list(names)
    return out


def role(name: str, namespace: str, *rules: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": list(rules),
    }


def cluster_role(
    name: str,
    *rules: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
    aggregate: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "rules": list(rules),
    }
    if aggregate:
        obj["aggregationRule"] = {"clusterRoleSelectors": list(aggregate)}
    return obj


def user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def service_account(name: str, namespace: str | None = None) -> dict[str, str]:
    subject = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        subject["namespace"] = namespace
    return subject


def role_binding(
    name: str, namespace: str, role_kind: str, role_name: str, *subjects: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
        "subjects": list(subjects),
    }


def cluster_role_binding(name: str, role_name: str, *subjects: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role_name},
        "subjects": list(subjects),
    }


def person(name: str, *groups: str) -> UserInfo:
    return UserInfo(name, groups=(*groups, "system:authenticated"))


def sa(namespace: str, name: str) -> UserInfo:
    return serviceaccount_user(namespace, name, "uid")
