"""RBAC shapes beyond one Role, judged by `kubectl auth can-i`: ClusterRoles bound cluster-wide
or per namespace, resourceNames, `can-i --list`, and TokenRequest limits.
"""

from __future__ import annotations

from typing import Any

from testkit.devcluster import DevCluster
from testkit.manifests import to_yaml

RBAC = "rbac.authorization.k8s.io/v1"


def _service_account_token(cluster: DevCluster, ns: str, *objects: dict[str, Any]) -> str:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(account, *objects))
    return cluster.kubectl("create", "token", "bot", "-n", ns).stdout.strip()


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules}


def _binding(kind: str, name: str, role_kind: str, role: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}],
    }


def _can_i(cluster: DevCluster, token: str, *args: str) -> str:
    return cluster.kubectl("auth", "can-i", *args, token=token, check=False).stdout.strip()


READ_DEPLOYMENTS = [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]


def test_cluster_role_binding_grants_in_every_namespace(cluster: DevCluster, ns: str) -> None:
    role = f"{ns}-reader"
    token = _service_account_token(
        cluster,
        ns,
        _cluster_role(role, READ_DEPLOYMENTS),
        _binding("ClusterRoleBinding", role, "ClusterRole", role, ns),
    )
    try:
        assert _can_i(cluster, token, "list", "deployments", "-n", "default") == "yes"
        assert _can_i(cluster, token, "list", "deployments", "--all-namespaces") == "yes"
        assert _can_i(cluster, token, "delete", "deployments", "-n", "default") == "no"
    finally:
        cluster.kubectl("delete", f"clusterrolebinding/{role}", f"clusterrole/{role}")


def test_role_binding_to_cluster_role_grants_in_its_namespace_only(
    cluster: DevCluster, ns: str
) -> None:
    role = f"{ns}-reader"
    token = _service_account_token(
        cluster,
        ns,
        _cluster_role(role, READ_DEPLOYMENTS),
        _binding("RoleBinding", "reader", "ClusterRole", role, ns),
    )
    try:
        assert _can_i(cluster, token, "list", "deployments", "-n", ns) == "yes"
        assert _can_i(cluster, token, "list", "deployments", "-n", "default") == "no"
        assert _can_i(cluster, token, "list", "deployments", "--all-namespaces") == "no"
    finally:
        cluster.kubectl("delete", "clusterrole", role)


def test_resource_names_limit_the_grant(cluster: DevCluster, ns: str) -> None:
    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "one"},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments"],
                "resourceNames": ["checkout"],
                "verbs": ["get", "patch"],
            }
        ],
    }
    token = _service_account_token(
        cluster, ns, role, _binding("RoleBinding", "one", "Role", "one", ns)
    )

    assert _can_i(cluster, token, "patch", "deployments/checkout", "-n", ns) == "yes"
    assert _can_i(cluster, token, "patch", "deployments/payments", "-n", ns) == "no"
    assert _can_i(cluster, token, "list", "deployments", "-n", ns) == "no"


def test_wildcard_rules(cluster: DevCluster, ns: str) -> None:
    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "all-sentinel"},
        "rules": [{"apiGroups": ["sentinel.example.com"], "resources": ["*"], "verbs": ["*"]}],
    }
    token = _service_account_token(
        cluster, ns, role, _binding("RoleBinding", "all", "Role", "all-sentinel", ns)
    )

    assert _can_i(cluster, token, "delete", "rolloutanalyses", "-n", ns) == "yes"
    assert _can_i(
        cluster, token, "update", "rolloutanalyses", "--subresource=status", "-n", ns
    ) == ("yes")
    assert _can_i(cluster, token, "get", "deployments", "-n", ns) == "no"


def test_can_i_list_shows_the_bound_rules(cluster: DevCluster, ns: str) -> None:
    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [
            {
                "apiGroups": ["sentinel.example.com"],
                "resources": ["rolloutanalyses"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    token = _service_account_token(
        cluster, ns, role, _binding("RoleBinding", "reader", "Role", "reader", ns)
    )

    out = cluster.kubectl("auth", "can-i", "--list", "-n", ns, token=token).stdout

    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert ["rolloutanalyses.sentinel.example.com", "[]", "[]", "[get", "list", "watch]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows


def test_create_token_shorter_than_ten_minutes_is_invalid(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("create", "serviceaccount", "bot", "-n", ns)

    result = cluster.kubectl("create", "token", "bot", "-n", ns, "--duration=1m", check=False)

    assert result.returncode == 1
    assert "spec.expirationSeconds: Invalid value: 60" in result.stderr
    assert "may not specify a duration less than 10 minutes" in result.stderr
