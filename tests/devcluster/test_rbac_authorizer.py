"""devcluster.rbac.authorize: rule matching, bindings, bootstrap grants and aggregation."""

from __future__ import annotations

import pytest

from devcluster.auth import ANONYMOUS, UserInfo
from devcluster.rbac import Attributes, authorize, forbidden, forbidden_message
from tests.devcluster.test_rbac_objects import (
    Objects,
    cluster_role,
    cluster_role_binding,
    group,
    person,
    role,
    role_binding,
    rule,
    sa,
    service_account,
    user,
)

ALICE = person("alice", "devs")


def can(
    source: Objects,
    who: UserInfo,
    verb: str,
    resource: str,
    namespace: str = "",
    api_group: str = "",
    subresource: str = "",
    name: str = "",
) -> bool:
    attrs = Attributes(who, verb, namespace, api_group, resource, subresource, name)
    return authorize(attrs, source)[0]


def can_path(source: Objects, who: UserInfo, verb: str, path: str) -> bool:
    return authorize(Attributes(who, verb, path=path, resource_request=False), source)[0]


def test_system_masters_may_do_anything_without_a_reason() -> None:
    admin = UserInfo("admin", groups=("system:masters", "system:authenticated"))
    attrs = Attributes(admin, "delete", "kube-system", "", "secrets", name="x")
    assert authorize(attrs, Objects()) == (True, "")
    assert can_path(Objects(), admin, "post", "/devcluster/faults")


def test_nothing_is_granted_without_bindings() -> None:
    attrs = Attributes(ALICE, "get", "default", "", "configmaps", name="x")
    assert authorize(attrs, Objects()) == (False, "")


def test_cluster_role_binding_grants_everywhere_and_names_itself() -> None:
    source = Objects(
        cluster_role("reader", rule(["get", "list"], ["configmaps"])),
        cluster_role_binding("alice-reads", "reader", user("alice")),
    )
    allowed, reason = authorize(Attributes(ALICE, "list", "ns1", "", "configmaps"), source)
    assert allowed
    assert reason == (
        'RBAC: allowed by ClusterRoleBinding "alice-reads" of ClusterRole "reader" to User "alice"'
    )
    assert can(source, ALICE, "list", "configmaps")  # across all namespaces
    assert not can(source, ALICE, "delete", "configmaps", "ns1", name="x")
    assert not can(source, person("bob"), "list", "configmaps", "ns1")


def test_role_binding_grants_only_in_its_namespace() -> None:
    source = Objects(
        role("editor", "team-a", rule(["get", "update"], ["configmaps"])),
        role_binding("alice-edits", "team-a", "Role", "editor", user("alice")),
    )
    allowed, reason = authorize(
        Attributes(ALICE, "update", "team-a", "", "configmaps", name="c"), source
    )
    assert allowed
    assert reason == (
        'RBAC: allowed by RoleBinding "alice-edits/team-a" of Role "editor" to User "alice"'
    )
    assert not can(source, ALICE, "update", "configmaps", "team-b", name="c")
    assert not can(source, ALICE, "get", "configmaps", "", name="c")


def test_role_binding_to_a_cluster_role_is_namespace_scoped() -> None:
    source = Objects(
        cluster_role("viewer", rule(["get", "list", "watch"], ["*"], ["*"])),
        role_binding("view", "team-a", "ClusterRole", "viewer", group("devs")),
    )
    assert can(source, ALICE, "watch", "deployments", "team-a", "apps")
    assert not can(source, ALICE, "watch", "deployments", "team-b", "apps")
    assert not can(source, ALICE, "list", "namespaces")


def test_a_role_of_the_same_name_in_another_namespace_does_not_count() -> None:
    source = Objects(
        role("editor", "team-b", rule(["get"], ["configmaps"])),
        role_binding("alice-edits", "team-a", "Role", "editor", user("alice")),
    )
    allowed, reason = authorize(Attributes(ALICE, "get", "team-a", "", "configmaps"), source)
    assert not allowed
    assert reason == 'RBAC: role.rbac.authorization.k8s.io "editor" not found'


def test_group_subjects_match_any_member() -> None:
    source = Objects(
        cluster_role("reader", rule(["get"], ["secrets"])),
        cluster_role_binding("devs-read", "reader", group("devs")),
    )
    allowed, reason = authorize(Attributes(ALICE, "get", "x", "", "secrets", name="s"), source)
    assert allowed
    assert reason.endswith('to Group "devs"')
    assert not can(source, person("carol", "ops"), "get", "secrets", "x", name="s")


def test_serviceaccount_subject_namespace_defaults_to_the_role_bindings() -> None:
    source = Objects(
        cluster_role("reader", rule(["get"], ["configmaps"])),
        role_binding("local", "apps", "ClusterRole", "reader", service_account("bot")),
    )
    allowed, reason = authorize(
        Attributes(sa("apps", "bot"), "get", "apps", "", "configmaps"), source
    )
    assert allowed
    assert reason == (
        'RBAC: allowed by RoleBinding "local/apps" of ClusterRole "reader" '
        'to ServiceAccount "bot/apps"'
    )
    assert not can(source, sa("other", "bot"), "get", "configmaps", "apps")


def test_serviceaccount_of_another_namespace_can_be_bound() -> None:
    source = Objects(
        cluster_role("reader", rule(["get"], ["configmaps"])),
        role_binding("cross", "apps", "ClusterRole", "reader", service_account("bot", "ci")),
    )
    assert can(source, sa("ci", "bot"), "get", "configmaps", "apps")
    assert not can(source, sa("apps", "bot"), "get", "configmaps", "apps")
    assert not can(source, sa("ci", "bot"), "get", "configmaps", "ci")


def test_cluster_role_binding_serviceaccount_without_namespace_matches_nobody() -> None:
    source = Objects(
        cluster_role("reader", rule(["get"], ["configmaps"])),
        cluster_role_binding("broken", "reader", service_account("bot")),
    )
    assert not can(source, sa("default", "bot"), "get", "configmaps", "default")


def test_serviceaccounts_group_subjects() -> None:
    source = Objects(
        cluster_role("reader", rule(["list"], ["pods"])),
        cluster_role_binding("all-sa-in-ci", "reader", group("system:serviceaccounts:ci")),
    )
    assert can(source, sa("ci", "anything"), "list", "pods", "x")
    assert not can(source, sa("prod", "anything"), "list", "pods", "x")


@pytest.mark.parametrize(
    ("verb", "name", "allowed"),
    [
        ("get", "config", True),
        ("update", "config", True),
        ("get", "other", False),
        ("get", "", False),
        ("list", "", False),
        ("watch", "", False),
        ("create", "", False),
        ("deletecollection", "", False),
    ],
)
def test_resource_names_only_match_requests_for_a_named_object(
    verb: str, name: str, allowed: bool
) -> None:
    source = Objects(
        cluster_role("one", rule(["*"], ["configmaps"], names=["config"])),
        cluster_role_binding("one", "one", user("alice")),
    )
    assert can(source, ALICE, verb, "configmaps", "ns", name=name) is allowed


@pytest.mark.parametrize(
    ("resources", "resource", "subresource", "allowed"),
    [
        (["deployments"], "deployments", "", True),
        (["deployments"], "deployments", "scale", False),
        (["deployments/scale"], "deployments", "scale", True),
        (["deployments/scale"], "deployments", "", False),
        (["deployments/scale"], "deployments", "status", False),
        (["*/scale"], "deployments", "scale", True),
        (["*/scale"], "statefulsets", "scale", True),
        (["*/scale"], "deployments", "", False),
        (["*/scale"], "deployments", "status", False),
        (["*"], "deployments", "status", True),
        (["deployments/*"], "deployments", "status", False),  # no suffix wildcard in RBAC
    ],
)
def test_subresources(resources: list[str], resource: str, subresource: str, allowed: bool) -> None:
    source = Objects(
        cluster_role("r", rule(["update"], resources, ["apps"])),
        cluster_role_binding("r", "r", user("alice")),
    )
    assert can(source, ALICE, "update", resource, "ns", "apps", subresource, "d") is allowed


def test_api_groups_must_match() -> None:
    source = Objects(
        cluster_role(
            "r",
            rule(["get"], ["events"], [""]),
            rule(["list"], ["deployments"], ["*"]),
        ),
        cluster_role_binding("r", "r", user("alice")),
    )
    assert can(source, ALICE, "get", "events", "ns", "")
    assert not can(source, ALICE, "get", "events", "ns", "events.k8s.io")
    assert can(source, ALICE, "list", "deployments", "ns", "apps")
    assert can(source, ALICE, "list", "deployments", "ns", "extensions")


def test_verb_wildcard_matches_every_verb_but_a_requested_wildcard_needs_one() -> None:
    source = Objects(
        cluster_role("all", rule(["*"], ["configmaps"])),
        cluster_role("some", rule(["get"], ["secrets"])),
        cluster_role_binding("all", "all", user("alice")),
        cluster_role_binding("some", "some", user("alice")),
    )
    for verb in ("get", "list", "watch", "create", "escalate", "*"):
        assert can(source, ALICE, verb, "configmaps", "ns")
    assert not can(source, ALICE, "*", "secrets", "ns")


@pytest.mark.parametrize(
    ("urls", "path", "allowed"),
    [
        (["/metrics"], "/metrics", True),
        (["/metrics"], "/metrics/cadvisor", False),
        (["/logs/*"], "/logs/app/x.log", True),
        (["/logs/*"], "/logs/", True),
        (["/logs/*"], "/logs", False),
        (["/lo*"], "/logs", True),
        (["*"], "/anything/at/all", True),
    ],
)
def test_non_resource_urls(urls: list[str], path: str, allowed: bool) -> None:
    source = Objects(
        cluster_role("urls", rule(["get"], urls=urls)),
        cluster_role_binding("urls", "urls", user("alice")),
    )
    assert can_path(source, ALICE, "get", path) is allowed
    assert not can_path(source, ALICE, "post", path)


def test_non_resource_rules_do_not_grant_resources_and_vice_versa() -> None:
    source = Objects(
        cluster_role("mixed", rule(["get"], urls=["*"]), rule(["get"], ["*"], ["*"])),
        role_binding("mixed", "ns", "ClusterRole", "mixed", user("alice")),
    )
    # Non-resource URLs are cluster-wide only: a RoleBinding never grants them.
    assert not can_path(source, ALICE, "get", "/metrics")
    assert can(source, ALICE, "get", "pods", "ns", name="p")


@pytest.mark.parametrize(
    "path",
    [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/version",
        "/healthz",
        "/readyz",
        "/livez",
        "/openapi/v3",
        "/openapi/v3/apis/apps/v1",
        "/openapi",
    ],
)
def test_every_authenticated_user_may_discover(path: str) -> None:
    allowed, reason = authorize(
        Attributes(person("nobody"), "get", path=path, resource_request=False), Objects()
    )
    assert allowed
    assert reason.startswith("RBAC: allowed by ClusterRoleBinding ")
    assert reason.endswith('to Group "system:authenticated"')


def test_discovery_grants_only_get_on_discovery_paths() -> None:
    nobody = person("nobody")
    assert not can_path(Objects(), nobody, "post", "/api")
    assert not can_path(Objects(), nobody, "get", "/metrics")
    assert not can_path(Objects(), nobody, "get", "/devcluster/faults")
    assert not can_path(Objects(), nobody, "get", "/apiv2")


def test_unauthenticated_users_see_only_public_info() -> None:
    assert can_path(Objects(), ANONYMOUS, "get", "/version")
    assert can_path(Objects(), ANONYMOUS, "get", "/healthz")
    assert not can_path(Objects(), ANONYMOUS, "get", "/api")
    assert not can(
        Objects(), ANONYMOUS, "create", "selfsubjectaccessreviews", api_group="authorization.k8s.io"
    )


@pytest.mark.parametrize(
    ("resource", "api_group"),
    [
        ("selfsubjectaccessreviews", "authorization.k8s.io"),
        ("selfsubjectrulesreviews", "authorization.k8s.io"),
        ("selfsubjectreviews", "authentication.k8s.io"),
    ],
)
def test_every_authenticated_user_may_ask_about_itself(resource: str, api_group: str) -> None:
    who = sa("ns", "bot")
    assert can(Objects(), who, "create", resource, api_group=api_group)
    assert not can(Objects(), who, "list", resource, api_group=api_group)
    assert not can(
        Objects(), who, "create", "subjectaccessreviews", api_group="authorization.k8s.io"
    )


def test_cluster_admin_role_exists_for_bindings() -> None:
    source = Objects(cluster_role_binding("root", "cluster-admin", user("alice")))
    assert can(source, ALICE, "delete", "nodes", name="n1")
    assert can_path(source, ALICE, "post", "/anything")


def test_default_user_roles_nest_view_in_edit_in_admin() -> None:
    viewer, editor, owner = sa("ns", "viewer"), sa("ns", "editor"), sa("ns", "owner")
    source = Objects(
        role_binding("v", "ns", "ClusterRole", "view", service_account("viewer")),
        role_binding("e", "ns", "ClusterRole", "edit", service_account("editor")),
        role_binding("a", "ns", "ClusterRole", "admin", service_account("owner")),
    )
    for who in (viewer, editor, owner):
        assert can(source, who, "watch", "deployments", "ns", "apps")
        assert can(source, who, "get", "configmaps", "ns", name="c")
        assert not can(source, who, "get", "configmaps", "other", name="c")
    assert not can(source, viewer, "get", "secrets", "ns", name="s")
    assert not can(source, viewer, "patch", "deployments", "ns", "apps", name="d")
    for who in (editor, owner):
        assert can(source, who, "get", "secrets", "ns", name="s")
        assert can(source, who, "patch", "deployments", "ns", "apps", name="d")
        assert can(source, who, "create", "serviceaccounts", "ns", subresource="token", name="x")
    assert not can(source, editor, "create", "rolebindings", "ns", "rbac.authorization.k8s.io")
    assert can(source, owner, "create", "rolebindings", "ns", "rbac.authorization.k8s.io")
    # A CRD's aggregate-to-view role extends view, and through it edit and admin.
    assert not can(source, owner, "list", "rolloutanalyses", "ns", "sentinel.example.com")
    source.add(
        cluster_role(
            "rolloutanalyses-view",
            rule(["get", "list", "watch"], ["rolloutanalyses"], ["sentinel.example.com"]),
            labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"},
        )
    )
    for who in (viewer, editor, owner):
        assert can(source, who, "list", "rolloutanalyses", "ns", "sentinel.example.com")


def test_stored_objects_override_bootstrap_defaults() -> None:
    source = Objects(
        cluster_role("cluster-admin", rule(["get"], ["configmaps"])),
        cluster_role_binding("root", "cluster-admin", user("alice")),
        cluster_role("system:discovery"),
    )
    assert can(source, ALICE, "get", "configmaps", "ns", name="c")
    assert not can(source, ALICE, "delete", "configmaps", "ns", name="c")
    assert not can_path(source, ALICE, "get", "/apis")
    assert can_path(source, ALICE, "get", "/version")  # still public-info-viewer


def test_missing_roles_are_reported_in_the_denial_reason() -> None:
    source = Objects(
        cluster_role_binding("a", "gone", user("alice")),
        role_binding("b", "ns", "Role", "absent", group("devs")),
    )
    allowed, reason = authorize(Attributes(ALICE, "get", "ns", "", "pods", name="p"), source)
    assert not allowed
    assert reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
        'role.rbac.authorization.k8s.io "absent" not found]'
    )
    allowed, reason = authorize(Attributes(ALICE, "get", "", "", "nodes", name="n"), source)
    assert reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'


def test_a_missing_role_does_not_hide_a_working_grant() -> None:
    source = Objects(
        cluster_role_binding("a", "gone", user("alice")),
        cluster_role("reader", rule(["get"], ["pods"])),
        cluster_role_binding("b", "reader", user("alice")),
    )
    assert can(source, ALICE, "get", "pods", "ns", name="p")


def test_aggregated_cluster_role_collects_labelled_rules() -> None:
    source = Objects(
        cluster_role(
            "monitoring",
            aggregate=[{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}],
        ),
        cluster_role(
            "monitoring-pods",
            rule(["get", "list"], ["pods"]),
            labels={"example.com/aggregate-to-monitoring": "true"},
        ),
        cluster_role(
            "monitoring-ra",
            rule(["watch"], ["rolloutanalyses"], ["sentinel.example.com"]),
            labels={"example.com/aggregate-to-monitoring": "true"},
        ),
        cluster_role(
            "unrelated",
            rule(["delete"], ["pods"]),
            labels={"example.com/aggregate-to-monitoring": "false"},
        ),
        cluster_role_binding("mon", "monitoring", user("alice")),
    )
    assert can(source, ALICE, "list", "pods", "x")
    assert can(source, ALICE, "watch", "rolloutanalyses", "x", "sentinel.example.com")
    assert not can(source, ALICE, "delete", "pods", "x", name="p")
    # Aggregation follows newly created roles without any controller step.
    source.add(
        cluster_role(
            "monitoring-cm",
            rule(["get"], ["configmaps"]),
            labels={"example.com/aggregate-to-monitoring": "true"},
        )
    )
    assert can(source, ALICE, "get", "configmaps", "x", name="c")


def test_aggregation_is_transitive_and_supports_match_expressions() -> None:
    source = Objects(
        cluster_role("top", aggregate=[{"matchLabels": {"tier": "middle"}}]),
        cluster_role(
            "middle",
            labels={"tier": "middle"},
            aggregate=[
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["leaf"]}]}
            ],
        ),
        cluster_role("leaf", rule(["get"], ["secrets"]), labels={"tier": "leaf"}),
        cluster_role_binding("top", "top", user("alice")),
    )
    assert can(source, ALICE, "get", "secrets", "x", name="s")


def test_aggregation_cycles_terminate() -> None:
    source = Objects(
        cluster_role(
            "a", rule(["get"], ["pods"]), labels={"x": "1"}, aggregate=[{"matchLabels": {"x": "2"}}]
        ),
        cluster_role(
            "b",
            rule(["list"], ["pods"]),
            labels={"x": "2"},
            aggregate=[{"matchLabels": {"x": "1"}}],
        ),
        cluster_role_binding("a", "a", user("alice")),
    )
    # "a" aggregates "b", which aggregates "a" again; its own rules are replaced.
    assert not can(source, ALICE, "get", "pods", "x", name="p")
    assert not can(source, ALICE, "list", "pods", "x")


def test_forbidden_messages_match_kube_apiserver() -> None:
    who = sa("team-a", "operator")
    attrs = Attributes(who, "delete", "team-a", "apps", "deployments", name="checkout")
    assert forbidden_message(attrs) == (
        'deployments.apps "checkout" is forbidden: User '
        '"system:serviceaccount:team-a:operator" cannot delete resource "deployments" '
        'in API group "apps" in the namespace "team-a"'
    )
    attrs = Attributes(who, "list", "", "", "secrets")
    assert forbidden_message(attrs) == (
        'secrets is forbidden: User "system:serviceaccount:team-a:operator" cannot list '
        'resource "secrets" in API group "" at the cluster scope'
    )
    attrs = Attributes(who, "patch", "ns", "sentinel.example.com", "rolloutanalyses", "status", "r")
    assert forbidden_message(attrs, 'RBAC: role.rbac.authorization.k8s.io "x" not found') == (
        'rolloutanalyses.sentinel.example.com "r" is forbidden: User '
        '"system:serviceaccount:team-a:operator" cannot patch resource '
        '"rolloutanalyses/status" in API group "sentinel.example.com" in the namespace "ns": '
        'RBAC: role.rbac.authorization.k8s.io "x" not found'
    )
    attrs = Attributes(who, "get", path="/metrics", resource_request=False)
    assert forbidden_message(attrs) == (
        'forbidden: User "system:serviceaccount:team-a:operator" cannot get path "/metrics"'
    )


def test_forbidden_is_a_403_status_with_details() -> None:
    attrs = Attributes(person("bob"), "get", "ns", "", "secrets", name="token")
    body = forbidden(attrs).body()
    assert body["code"] == 403
    assert body["reason"] == "Forbidden"
    assert body["status"] == "Failure"
    assert body["details"] == {"name": "token", "kind": "secrets"}
    assert body["message"].startswith('secrets "token" is forbidden: User "bob" cannot get')
