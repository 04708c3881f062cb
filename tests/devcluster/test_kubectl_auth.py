"""`kubectl create token` and `kubectl auth can-i` against devcluster's RBAC.

A ServiceAccount token is allowed exactly what its RoleBinding grants; everything else is
denied, as a real RBAC authorizer does.
"""

from __future__ import annotations

import base64
import json

import pytest

from testkit.devcluster import DevCluster
from testkit.manifests import ra_manifest, to_yaml

ROLE_RULES = [
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses/status"],
        "verbs": ["patch"],
    },
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]},
]


def _bound_token(cluster: DevCluster, ns: str) -> str:
    objects = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "reader"},
            "rules": ROLE_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    ]
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(*objects))
    return cluster.kubectl("create", "token", "reader", "-n", ns).stdout.strip()


def _jwt_claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_create_token_issues_a_service_account_jwt(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("create", "serviceaccount", "bot", "-n", ns)

    token = cluster.kubectl("create", "token", "bot", "-n", ns, "--duration=10m").stdout.strip()

    assert token.count(".") == 2
    claims = _jwt_claims(token)
    assert claims["sub"] == f"system:serviceaccount:{ns}:bot"
    assert 590 <= claims["exp"] - claims["iat"] <= 610
    denied = cluster.kubectl("get", "ra", "-n", ns, token=token, check=False)
    assert denied.returncode == 1
    assert f'User "system:serviceaccount:{ns}:bot" cannot list resource' in denied.stderr


def test_create_token_for_missing_service_account_is_not_found(
    cluster: DevCluster, ns: str
) -> None:
    result = cluster.kubectl("create", "token", "ghost", "-n", ns, check=False)

    assert result.returncode == 1
    assert 'serviceaccounts "ghost" not found' in result.stderr


def test_admin_can_do_anything(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("auth", "can-i", "delete", "rolloutanalyses", "-n", ns)

    assert result.stdout == "yes\n"
    assert cluster.kubectl("auth", "can-i", "*", "*", "--all-namespaces").stdout == "yes\n"


@pytest.mark.parametrize(
    "request_args",
    [
        ["get", "rolloutanalyses.sentinel.example.com"],
        ["get", "rolloutanalyses/checkout"],
        ["list", "rolloutanalyses"],
        ["watch", "ra"],
        ["patch", "rolloutanalyses", "--subresource=status"],
        ["patch", "deployments.apps"],
    ],
    ids=" ".join,
)
def test_service_account_can_do_what_is_bound(
    cluster: DevCluster, ns: str, request_args: list[str]
) -> None:
    token = _bound_token(cluster, ns)

    result = cluster.kubectl("auth", "can-i", *request_args, "-n", ns, token=token)

    assert result.stdout == "yes\n"


@pytest.mark.parametrize(
    "request_args",
    [
        ["delete", "rolloutanalyses"],
        ["update", "rolloutanalyses", "--subresource=status"],
        # TYPE/NAME syntax: "status" is an object name here, not the subresource.
        ["patch", "rolloutanalyses/status"],
        ["patch", "rolloutanalyses"],
        ["list", "deployments.apps"],
        ["get", "secrets"],
        ["list", "rolloutanalyses", "--namespace=default"],
        ["list", "rolloutanalyses", "--all-namespaces"],
    ],
    ids=" ".join,
)
def test_service_account_is_denied_what_is_not_bound(
    cluster: DevCluster, ns: str, request_args: list[str]
) -> None:
    token = _bound_token(cluster, ns)
    scope = (
        []
        if any(arg.startswith("--") and "namespace" in arg for arg in request_args)
        else ["-n", ns]
    )

    result = cluster.kubectl("auth", "can-i", *request_args, *scope, token=token, check=False)

    assert result.returncode == 1
    assert result.stdout == "no\n"


def test_service_account_request_outside_binding_is_forbidden(cluster: DevCluster, ns: str) -> None:
    token = _bound_token(cluster, ns)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout")))

    allowed = cluster.kubectl("get", "ra", "-n", ns, "-o", "name", token=token)
    denied = cluster.kubectl("delete", "ra", "checkout", "-n", ns, token=token, check=False)

    assert allowed.stdout == "rolloutanalysis.sentinel.example.com/checkout\n"
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): rolloutanalyses.sentinel.example.com "checkout" is'
        f' forbidden: User "system:serviceaccount:{ns}:reader" cannot delete resource'
        f' "rolloutanalyses" in API group "sentinel.example.com" in the namespace "{ns}"'
    )


def test_bad_token_is_unauthorized(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("get", "ra", "-n", ns, token="not-a-token", check=False)

    assert result.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in result.stderr
