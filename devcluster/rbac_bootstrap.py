"""The bootstrap ClusterRoles and ClusterRoleBindings every Kubernetes cluster starts with.

rbac.py merges :data:`BOOTSTRAP_CLUSTER_ROLES` and :data:`BOOTSTRAP_CLUSTER_ROLE_BINDINGS` under
the RBAC objects of the store when it authorizes a request; objects of the same name in the
store win. The data is a subset of kube-apiserver's bootstrap policy, as plain JSON objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BOOTSTRAP_CLUSTER_ROLES",
    "BOOTSTRAP_CLUSTER_ROLE_BINDINGS",
    "DEFAULT_USER_ROLES",
    "MASTERS_GROUP",
    "RBAC_GROUP",
]

RBAC_GROUP = "rbac.authorization.k8s.io"
MASTERS_GROUP = "system:masters"


def _bootstrap_role(
    name: str,
    rules: list[dict[str, Any]],
    *,
    label: str = "",
    aggregates: str = "",
) -> dict[str, Any]:
    """Return a bootstrap ClusterRole; ``label``/``aggregates`` name aggregate-to-* labels."""
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    if label:
        labels[f"{RBAC_GROUP}/aggregate-to-{label}"] = "true"
    role: dict[str, Any] = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }
    if aggregates:
        selector = {"matchLabels": {f"{RBAC_GROUP}/aggregate-to-{aggregates}": "true"}}
        role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
    return role


def _bootstrap_binding(name: str, groups: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]


# The user-facing roles admin ⊇ edit ⊇ view, built by aggregation as on a real cluster so
# that a CRD's own aggregate-to-view/edit/admin roles extend them. Their base rules are
# the real ones restricted to the built-in kinds devcluster serves.
DEFAULT_USER_ROLES: tuple[dict[str, Any], ...] = (
    _bootstrap_role("admin", [], aggregates="admin"),
    _bootstrap_role("edit", [], label="admin", aggregates="edit"),
    _bootstrap_role("view", [], label="edit", aggregates="view"),
    _bootstrap_role(
        "system:aggregate-to-admin",
        [
            {
                "apiGroups": [RBAC_GROUP],
                "resources": ["roles", "rolebindings"],
                "verbs": [*_READ, *_WRITE],
            },
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["localsubjectaccessreviews"],
                "verbs": ["create"],
            },
        ],
        label="admin",
    ),
    _bootstrap_role(
        "system:aggregate-to-edit",
        [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": _READ},
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts", "configmaps", "secrets", "events"],
                "verbs": _WRITE,
            },
            {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
            {
                "apiGroups": ["apps"],
                "resources": [
                    "deployments",
                    "deployments/scale",
                    "statefulsets",
                    "statefulsets/scale",
                    "daemonsets",
                    "replicasets",
                    "replicasets/scale",
                ],
                "verbs": _WRITE,
            },
        ],
        label="edit",
    ),
    _bootstrap_role(
        "system:aggregate-to-view",
        [
            {"apiGroups": [""], "resources": ["serviceaccounts", "configmaps"], "verbs": _READ},
            {"apiGroups": [""], "resources": ["events", "namespaces/status"], "verbs": _READ},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": _READ},
            {
                "apiGroups": ["apps"],
                "resources": [
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "statefulsets",
                    "statefulsets/scale",
                    "statefulsets/status",
                    "daemonsets",
                    "daemonsets/status",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "controllerrevisions",
                ],
                "verbs": _READ,
            },
        ],
        label="view",
    ),
)

_PUBLIC_URLS = ["/livez", "/readyz", "/healthz", "/version", "/version/"]
# The subset of kube-apiserver's bootstrap policy (plugin/pkg/auth/authorizer/rbac/
# bootstrappolicy) that matters to a client: cluster-admin, who may discover, who may
# ask about itself, and the default user roles. The store may hold objects of the same
# names; its copies then win.
BOOTSTRAP_CLUSTER_ROLES: tuple[dict[str, Any], ...] = (
    _bootstrap_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _bootstrap_role(
        "system:discovery",
        [
            {
                "nonResourceURLs": [
                    *_PUBLIC_URLS,
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
                "verbs": ["get"],
            }
        ],
    ),
    _bootstrap_role(
        "system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_URLS, "verbs": ["get"]}]
    ),
    _bootstrap_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    ),
    # Every ServiceAccount may read the issuer's discovery documents (devcluster serves
    # none, but the grant shows in `kubectl auth can-i --list`). The real server's
    # system:cluster-trust-bundle-discovery is left out: see docs/devcluster.md.
    _bootstrap_role(
        "system:service-account-issuer-discovery",
        [
            {
                "nonResourceURLs": [
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                "verbs": ["get"],
            }
        ],
    ),
    *DEFAULT_USER_ROLES,
)
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: tuple[dict[str, Any], ...] = (
    _bootstrap_binding("cluster-admin", [MASTERS_GROUP]),
    _bootstrap_binding("system:discovery", ["system:authenticated"]),
    _bootstrap_binding(
        "system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]
    ),
    _bootstrap_binding("system:basic-user", ["system:authenticated"]),
    _bootstrap_binding("system:service-account-issuer-discovery", ["system:serviceaccounts"]),
)
