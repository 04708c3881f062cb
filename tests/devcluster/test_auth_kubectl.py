"""devcluster's TLS, tokens and RBAC as the real kubectl sees them.

The operator's least-privilege RBAC (deploy/base/rbac.yaml) is applied with kubectl, a token is made
with ``kubectl create token`` and every check goes through kubectl with ``--token``: the
answers of ``auth can-i``, the Forbidden message of a denied request, and 401 for a token
that is bad, forged, for another audience or for a ServiceAccount that was recreated.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devcluster.certs import ensure_tls
from testkit.devcluster import DevCluster
from testkit.manifests import to_yaml

RBAC = "rbac.authorization.k8s.io"
SENTINEL = "sentinel.example.com"
UNAUTHORIZED = "error: You must be logged in to the server (Unauthorized)"


def _operator_rbac(ns: str) -> list[dict[str, object]]:
    """Return the operator's RBAC: a ClusterRole bound cluster-wide, leases in its namespace."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": ns}},
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{ns}-operator"},
            "rules": [
                {
                    "apiGroups": [SENTINEL],
                    "resources": ["rolloutanalyses"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                },
                {
                    "apiGroups": [SENTINEL],
                    "resources": ["rolloutanalyses/status"],
                    "verbs": ["update", "patch"],
                },
                {
                    "apiGroups": ["apps"],
                    "resources": ["deployments"],
                    "verbs": ["get", "list", "watch", "patch"],
                },
                {
                    "apiGroups": ["", "events.k8s.io"],
                    "resources": ["events"],
                    "verbs": ["create", "patch"],
                },
            ],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{ns}-operator"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"{ns}-operator"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": ns}],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": "leader-election", "namespace": ns},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "create", "update"],
                }
            ],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "leader-election", "namespace": ns},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "leader-election"},
            "subjects": [{"kind": "ServiceAccount", "name": "op"}],
        },
    ]


@pytest.fixture
def operator_token(cluster: DevCluster, ns: str) -> str:
    cluster.kubectl("apply", "-f", "-", input=to_yaml(*_operator_rbac(ns)))
    return cluster.kubectl("create", "token", "op", "-n", ns).stdout.strip()


def _can_i(cluster: DevCluster, token: str, *args: str) -> str:
    result = cluster.kubectl("auth", "can-i", *args, token=token, check=False)
    assert result.returncode == (0 if result.stdout == "yes\n" else 1), result.stderr
    return result.stdout.strip()


def test_can_i_answers_exactly_what_the_operator_rbac_grants(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    granted = [
        ("get", "rolloutanalyses", "-n", "default"),
        ("watch", "rolloutanalyses.sentinel.example.com", "--all-namespaces"),
        ("delete", "ra", "-n", ns),
        ("patch", "rolloutanalyses", "--subresource=status", "-n", "default"),
        ("update", "ra", "--subresource=status", "-n", ns),
        ("get", "rolloutanalyses/status", "-n", ns),  # TYPE/NAME: the object named "status"
        ("list", "deployments.apps", "--all-namespaces"),
        ("patch", "deployments", "-n", "default"),
        ("create", "events", "-n", "default"),
        ("create", "events.events.k8s.io", "-n", ns),
        ("update", "leases.coordination.k8s.io", "-n", ns),
        ("create", "selfsubjectaccessreviews.authorization.k8s.io"),
    ]
    denied = [
        ("delete", "deployments", "-n", ns),
        ("update", "deployments.apps", "-n", "default"),
        ("patch", "deployments", "--subresource=scale", "-n", ns),
        ("get", "secrets", "-n", ns),
        ("list", "configmaps", "-n", ns),
        ("get", "rolloutanalyses", "--subresource=status", "-n", ns),
        ("deletecollection", "rolloutanalyses", "-n", ns),
        ("update", "leases.coordination.k8s.io", "-n", "default"),
        ("create", "rolebindings.rbac.authorization.k8s.io", "-n", ns),
        ("*", "*", "-n", ns),
    ]
    assert [_can_i(cluster, operator_token, *check) for check in granted] == ["yes"] * len(granted)
    assert [_can_i(cluster, operator_token, *check) for check in denied] == ["no"] * len(denied)


def test_can_i_list_shows_the_rules_in_a_namespace(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    here = cluster.kubectl("auth", "can-i", "--list", "-n", ns, token=operator_token).stdout
    rows = {line.split()[0]: line for line in here.splitlines()[1:] if line.strip()}
    assert "[get list watch create update patch delete]" in rows[f"rolloutanalyses.{SENTINEL}"]
    assert "[update patch]" in rows[f"rolloutanalyses.{SENTINEL}/status"]
    assert "[get list watch patch]" in rows["deployments.apps"]
    assert "[get create update]" in rows["leases.coordination.k8s.io"]
    assert "secrets" not in rows
    elsewhere = cluster.kubectl(
        "auth", "can-i", "--list", "-n", "default", token=operator_token
    ).stdout
    assert "leases.coordination.k8s.io" not in elsewhere
    assert "deployments.apps" in elsewhere


def test_denied_requests_get_the_real_forbidden_message(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    user = f"system:serviceaccount:{ns}:op"
    listing = cluster.kubectl("get", "secrets", "-n", ns, token=operator_token, check=False)
    assert listing.returncode == 1
    assert listing.stderr.strip() == (
        f'Error from server (Forbidden): secrets is forbidden: User "{user}" cannot list '
        f'resource "secrets" in API group "" in the namespace "{ns}"'
    )
    named = cluster.kubectl(
        "get", "configmap", "settings", "-n", ns, token=operator_token, check=False
    )
    assert named.stderr.strip() == (
        f'Error from server (Forbidden): configmaps "settings" is forbidden: User "{user}" '
        f'cannot get resource "configmaps" in API group "" in the namespace "{ns}"'
    )
    cluster_scoped = cluster.kubectl("get", "namespaces", token=operator_token, check=False)
    assert cluster_scoped.stderr.strip() == (
        f'Error from server (Forbidden): namespaces is forbidden: User "{user}" cannot list '
        'resource "namespaces" in API group "" at the cluster scope'
    )


def test_allowed_requests_go_through(cluster: DevCluster, ns: str, operator_token: str) -> None:
    result = cluster.kubectl("get", "deployments", "-n", ns, token=operator_token)
    assert result.stderr.strip() == f"No resources found in {ns} namespace."


def test_whoami_reports_the_serviceaccount(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    out = cluster.kubectl(
        "auth", "whoami", "-o", "jsonpath={.status.userInfo}", token=operator_token
    )
    assert f'"username":"system:serviceaccount:{ns}:op"' in out.stdout
    assert f'"system:serviceaccounts:{ns}"' in out.stdout


@pytest.mark.parametrize("token", ["not-a-token", "a.b.c", ""])
def test_bad_tokens_are_unauthorized(cluster: DevCluster, token: str) -> None:
    # An empty --token would fall back to the kubeconfig's admin token; use a blank one.
    result = cluster.kubectl("auth", "can-i", "get", "pods", token=token or " ", check=False)
    assert result.returncode == 1
    assert UNAUTHORIZED in result.stderr


def test_forged_and_foreign_audience_tokens_are_unauthorized(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    head, payload, signature = operator_token.split(".")
    forged = f"{head}.{payload}.{signature[::-1]}"
    result = cluster.kubectl("get", "deployments", "-n", ns, token=forged, check=False)
    assert UNAUTHORIZED in result.stderr
    vault = cluster.kubectl("create", "token", "op", "-n", ns, "--audience=vault").stdout.strip()
    result = cluster.kubectl("get", "deployments", "-n", ns, token=vault, check=False)
    assert UNAUTHORIZED in result.stderr


def test_recreating_the_serviceaccount_revokes_its_tokens(
    cluster: DevCluster, ns: str, operator_token: str
) -> None:
    assert _can_i(cluster, operator_token, "list", "deployments", "-n", ns) == "yes"
    cluster.kubectl("delete", "serviceaccount", "op", "-n", ns)
    result = cluster.kubectl("get", "deployments", "-n", ns, token=operator_token, check=False)
    assert UNAUTHORIZED in result.stderr
    cluster.kubectl("create", "serviceaccount", "op", "-n", ns)
    result = cluster.kubectl("get", "deployments", "-n", ns, token=operator_token, check=False)
    assert UNAUTHORIZED in result.stderr
    fresh = cluster.kubectl("create", "token", "op", "-n", ns).stdout.strip()
    assert _can_i(cluster, fresh, "list", "deployments", "-n", ns) == "yes"


def test_kubectl_verifies_the_serving_certificate(cluster: DevCluster, tmp_path: Path) -> None:
    port = re.search(r":(\d+)$", cluster.url)
    assert port is not None
    by_name = cluster.kubectl("get", "--raw", "/version", f"--server=https://localhost:{port[1]}")
    assert '"major"' in by_name.stdout
    stranger = ensure_tls(tmp_path / "other-ca")
    result = cluster.kubectl(
        "get", "--raw", "/version", f"--certificate-authority={stranger.ca_file}", check=False
    )
    assert result.returncode == 1
    assert "x509: certificate signed by unknown authority" in result.stderr


def test_role_binding_in_one_namespace_grants_nothing_in_another(
    cluster: DevCluster, ns: str
) -> None:
    cluster.kubectl("create", "serviceaccount", "writer", "-n", ns)
    cluster.kubectl(
        "create",
        "role",
        "status-writer",
        "-n",
        ns,
        "--verb=update,patch",
        f"--resource=rolloutanalyses.{SENTINEL}/status",
    )
    cluster.kubectl(
        "create",
        "rolebinding",
        "status-writer",
        "-n",
        ns,
        "--role=status-writer",
        f"--serviceaccount={ns}:writer",
    )
    token = cluster.kubectl("create", "token", "writer", "-n", ns).stdout.strip()
    status = ("rolloutanalyses", "--subresource=status")
    assert _can_i(cluster, token, "update", *status, "-n", ns) == "yes"
    assert _can_i(cluster, token, "update", *status, "-n", "default") == "no"
    assert _can_i(cluster, token, "update", *status, "--all-namespaces") == "no"
    assert _can_i(cluster, token, "update", "rolloutanalyses", "-n", ns) == "no"


def test_a_binding_to_a_missing_role_is_named_in_the_denial(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("create", "serviceaccount", "orphan", "-n", ns)
    cluster.kubectl(
        "create",
        "rolebinding",
        "dangling",
        "-n",
        ns,
        "--role=ghost",
        f"--serviceaccount={ns}:orphan",
    )
    token = cluster.kubectl("create", "token", "orphan", "-n", ns).stdout.strip()
    missing = 'RBAC: role.rbac.authorization.k8s.io "ghost" not found'
    assert _can_i(cluster, token, "get", "configmaps", "-n", ns) == f"no - {missing}"
    denied = cluster.kubectl("get", "configmaps", "-n", ns, token=token, check=False)
    assert denied.stderr.strip() == (
        f"Error from server (Forbidden): configmaps is forbidden: User "
        f'"system:serviceaccount:{ns}:orphan" cannot list resource "configmaps" in API group '
        f'"" in the namespace "{ns}": {missing}'
    )
