"""The operator's least-privilege RBAC (deploy/base/rbac.yaml) evaluated by devcluster.rbac.

The objects mirror deploy/base/rbac.yaml: a ClusterRole for the analyses, Deployments
and Events bound cluster-wide, and a Role for leader-election leases in the operator's
own namespace. A second, namespaced variant checks that a RoleBinding in one namespace
grants nothing in another.
"""

from __future__ import annotations

import pytest

from devcluster.rbac import Attributes, authorize
from tests.devcluster.test_rbac_objects import (
    Objects,
    cluster_role,
    cluster_role_binding,
    role,
    role_binding,
    rule,
    sa,
    service_account,
)

HOME = "rollout-sentinel"
SENTINEL = "sentinel.example.com"
OPERATOR = sa(HOME, "rollout-sentinel")

OPERATOR_RULES = (
    rule(
        ["get", "list", "watch", "create", "update", "patch", "delete"],
        ["rolloutanalyses"],
        [SENTINEL],
    ),
    rule(["update", "patch"], ["rolloutanalyses/status"], [SENTINEL]),
    rule(["get", "list", "watch", "patch"], ["deployments"], ["apps"]),
    rule(["create", "patch"], ["events"], ["", "events.k8s.io"]),
)
LEASE_RULE = rule(["get", "create", "update"], ["leases"], ["coordination.k8s.io"])


@pytest.fixture
def cluster_wide() -> Objects:
    return Objects(
        cluster_role("rollout-sentinel", *OPERATOR_RULES),
        cluster_role_binding(
            "rollout-sentinel", "rollout-sentinel", service_account("rollout-sentinel", HOME)
        ),
        role("rollout-sentinel-leader-election", HOME, LEASE_RULE),
        role_binding(
            "rollout-sentinel-leader-election",
            HOME,
            "Role",
            "rollout-sentinel-leader-election",
            service_account("rollout-sentinel"),
        ),
    )


@pytest.fixture
def namespaced() -> Objects:
    """The same grants given only in namespace team-a, via a Role and a RoleBinding."""
    return Objects(
        role("rollout-sentinel", "team-a", *OPERATOR_RULES, LEASE_RULE),
        role_binding(
            "rollout-sentinel",
            "team-a",
            "Role",
            "rollout-sentinel",
            service_account("rollout-sentinel", HOME),
        ),
    )


def allowed(
    source: Objects,
    verb: str,
    api_group: str,
    resource: str,
    namespace: str = "shop",
    subresource: str = "",
    name: str = "",
) -> bool:
    attrs = Attributes(OPERATOR, verb, namespace, api_group, resource, subresource, name)
    return authorize(attrs, source)[0]


GRANTED = [
    *[
        ("rolloutanalyses", SENTINEL, "", verb)
        for verb in ("get", "list", "watch", "create", "update", "patch", "delete")
    ],
    ("rolloutanalyses", SENTINEL, "status", "update"),
    ("rolloutanalyses", SENTINEL, "status", "patch"),
    *[("deployments", "apps", "", verb) for verb in ("get", "list", "watch", "patch")],
    ("events", "", "", "create"),
    ("events", "", "", "patch"),
    ("events", "events.k8s.io", "", "create"),
]


@pytest.mark.parametrize(("resource", "api_group", "subresource", "verb"), GRANTED)
def test_operator_may_do_what_it_needs_in_any_namespace(
    cluster_wide: Objects, resource: str, api_group: str, subresource: str, verb: str
) -> None:
    name = "" if verb in ("list", "watch", "create") else "x"
    assert allowed(cluster_wide, verb, api_group, resource, "shop", subresource, name)
    assert allowed(cluster_wide, verb, api_group, resource, "payments", subresource, name)


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_operator_may_watch_across_all_namespaces(cluster_wide: Objects, verb: str) -> None:
    assert allowed(cluster_wide, verb, SENTINEL, "rolloutanalyses", namespace="")
    assert allowed(cluster_wide, verb, "apps", "deployments", namespace="")


@pytest.mark.parametrize(
    ("verb", "api_group", "resource", "subresource"),
    [
        ("delete", "apps", "deployments", ""),
        ("update", "apps", "deployments", ""),
        ("create", "apps", "deployments", ""),
        ("patch", "apps", "deployments", "scale"),
        ("update", "apps", "deployments", "status"),
        ("get", "", "secrets", ""),
        ("list", "", "secrets", ""),
        ("get", "", "configmaps", ""),
        ("get", "", "pods", ""),
        ("deletecollection", SENTINEL, "rolloutanalyses", ""),
        ("get", SENTINEL, "rolloutanalyses", "status"),
        ("get", "", "events", ""),
        ("list", "events.k8s.io", "events", ""),
        ("delete", "", "events", ""),
        ("get", "coordination.k8s.io", "leases", ""),
        ("create", "coordination.k8s.io", "leases", ""),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles", ""),
        ("create", "rbac.authorization.k8s.io", "rolebindings", ""),
        ("create", "", "serviceaccounts", "token"),
    ],
)
def test_operator_is_denied_everything_else(
    cluster_wide: Objects, verb: str, api_group: str, resource: str, subresource: str
) -> None:
    attrs = Attributes(OPERATOR, verb, "shop", api_group, resource, subresource, "x")
    assert authorize(attrs, cluster_wide) == (False, "")


def test_leases_only_in_the_operators_own_namespace(cluster_wide: Objects) -> None:
    for verb in ("get", "create", "update"):
        name = "" if verb == "create" else "rollout-sentinel-leader"
        assert allowed(cluster_wide, verb, "coordination.k8s.io", "leases", HOME, name=name)
        assert not allowed(cluster_wide, verb, "coordination.k8s.io", "leases", "shop", name=name)
    assert not allowed(cluster_wide, "delete", "coordination.k8s.io", "leases", HOME, name="l")
    assert not allowed(cluster_wide, "list", "coordination.k8s.io", "leases", HOME)


def test_cluster_wide_grant_is_attributed_to_the_cluster_role_binding(
    cluster_wide: Objects,
) -> None:
    attrs = Attributes(OPERATOR, "patch", "shop", SENTINEL, "rolloutanalyses", "status", "ra")
    assert authorize(attrs, cluster_wide) == (
        True,
        'RBAC: allowed by ClusterRoleBinding "rollout-sentinel" of ClusterRole '
        '"rollout-sentinel" to ServiceAccount "rollout-sentinel/rollout-sentinel"',
    )


def test_other_serviceaccounts_get_nothing(cluster_wide: Objects) -> None:
    for other in (sa(HOME, "default"), sa("shop", "rollout-sentinel")):
        attrs = Attributes(other, "get", "shop", SENTINEL, "rolloutanalyses", name="ra")
        assert not authorize(attrs, cluster_wide)[0]


def test_role_binding_elsewhere_grants_nothing_here(namespaced: Objects) -> None:
    assert allowed(namespaced, "update", SENTINEL, "rolloutanalyses", "team-a", "status", "r")
    assert allowed(namespaced, "patch", "apps", "deployments", "team-a", name="d")
    assert not allowed(namespaced, "update", SENTINEL, "rolloutanalyses", "team-b", "status", "r")
    assert not allowed(namespaced, "get", SENTINEL, "rolloutanalyses", "team-b", name="r")
    assert not allowed(namespaced, "patch", "apps", "deployments", "team-b", name="d")
    # Nor across all namespaces: a list of every namespace needs a cluster-wide grant.
    assert not allowed(namespaced, "list", SENTINEL, "rolloutanalyses", namespace="")
