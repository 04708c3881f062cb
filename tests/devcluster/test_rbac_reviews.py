"""devcluster.rbac review APIs: what ``kubectl auth can-i`` (and ``--list``) posts."""

from __future__ import annotations

from typing import Any

import pytest

from devcluster.auth import UserInfo
from devcluster.rbac_reviews import access_review, rules_review
from devcluster.status import ApiError
from tests.devcluster.test_rbac_objects import (
    Objects,
    cluster_role,
    cluster_role_binding,
    group,
    role,
    role_binding,
    rule,
    sa,
    service_account,
    user,
)

BOT = sa("team-a", "bot")
ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))


@pytest.fixture
def source() -> Objects:
    return Objects(
        role("edit-cm", "team-a", rule(["get", "update"], ["configmaps"])),
        role_binding("bot-cm", "team-a", "Role", "edit-cm", service_account("bot")),
        cluster_role("read-deploy", rule(["list"], ["deployments"], ["apps"])),
        cluster_role_binding("bot-deploy", "read-deploy", service_account("bot", "team-a")),
        cluster_role("metrics", rule(["get"], urls=["/metrics"])),
        cluster_role_binding("metrics", "metrics", group("monitoring")),
    )


def _ssar(**resource_attributes: str) -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {"creationTimestamp": None},
        "spec": {"resourceAttributes": resource_attributes},
    }


def test_self_review_allowed_names_the_binding(source: Objects) -> None:
    body = _ssar(namespace="team-a", verb="update", resource="configmaps", name="c")
    answer = access_review(body, BOT, source)
    assert answer["kind"] == "SelfSubjectAccessReview"
    assert answer["apiVersion"] == "authorization.k8s.io/v1"
    assert answer["spec"] == body["spec"]
    assert answer["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "bot-cm/team-a" of Role "edit-cm" '
        'to ServiceAccount "bot/team-a"',
    }
    assert "status" not in body  # the request body is left alone


def test_self_review_denied_has_no_reason(source: Objects) -> None:
    body = _ssar(namespace="team-b", verb="update", resource="configmaps", name="c")
    assert access_review(body, BOT, source)["status"] == {"allowed": False}


def test_self_review_uses_group_version_and_subresource(source: Objects) -> None:
    listing = _ssar(namespace="x", verb="list", group="apps", version="v1", resource="deployments")
    assert access_review(listing, BOT, source)["status"]["allowed"]
    scale = _ssar(
        namespace="x", verb="list", group="apps", resource="deployments", subresource="scale"
    )
    assert not access_review(scale, BOT, source)["status"]["allowed"]
    wrong_group = _ssar(namespace="x", verb="list", resource="deployments")
    assert not access_review(wrong_group, BOT, source)["status"]["allowed"]


def test_self_review_of_a_non_resource_url(source: Objects) -> None:
    body = {
        "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}},
    }
    watcher = UserInfo("prom", groups=("monitoring", "system:authenticated"))
    assert access_review(body, watcher, source)["status"]["allowed"]
    assert not access_review(body, BOT, source)["status"]["allowed"]


def test_masters_are_allowed_with_an_empty_reason(source: Objects) -> None:
    answer = access_review(_ssar(verb="delete", resource="nodes", name="n"), ADMIN, source)
    assert answer["status"] == {"allowed": True}


def test_missing_role_shows_up_as_the_denial_reason() -> None:
    source = Objects(role_binding("b", "ns", "ClusterRole", "gone", user("u")))
    body = _ssar(namespace="ns", verb="get", resource="pods")
    answer = access_review(body, UserInfo("u", groups=("system:authenticated",)), source)
    assert answer["status"] == {
        "allowed": False,
        "reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found',
    }


def test_subject_access_review_evaluates_the_named_subject(source: Objects) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:team-a:bot",
            "groups": ["system:serviceaccounts"],
            "resourceAttributes": {"namespace": "team-a", "verb": "get", "resource": "configmaps"},
        },
    }
    # The requester (admin) could do it; the answer is about the subject.
    assert access_review(body, ADMIN, source)["status"]["allowed"]
    body["spec"]["resourceAttributes"]["namespace"] = "team-b"
    assert not access_review(body, ADMIN, source)["status"]["allowed"]


def test_subject_access_review_groups_are_taken_literally(source: Objects) -> None:
    body = {
        "kind": "SubjectAccessReview",
        "spec": {"user": "carol", "nonResourceAttributes": {"verb": "get", "path": "/api"}},
    }
    # Without system:authenticated in spec.groups, discovery is not implied.
    assert not access_review(body, ADMIN, source)["status"]["allowed"]
    body["spec"]["groups"] = ["system:authenticated"]
    assert access_review(body, ADMIN, source)["status"]["allowed"]


def test_subject_access_review_needs_a_subject(source: Objects) -> None:
    body = {
        "kind": "SubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    with pytest.raises(ApiError) as caught:
        access_review(body, ADMIN, source)
    assert caught.value.code == 422
    assert caught.value.message == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
        "at least one of user or group must be specified"
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.resourceAttributes"),
        (
            {
                "resourceAttributes": {"verb": "get", "resource": "pods"},
                "nonResourceAttributes": {"verb": "get", "path": "/api"},
            },
            "spec.nonResourceAttributes",
        ),
    ],
)
def test_exactly_one_kind_of_attributes(source: Objects, spec: dict[str, Any], field: str) -> None:
    body = {"kind": "SelfSubjectAccessReview", "spec": spec}
    with pytest.raises(ApiError) as caught:
        access_review(body, BOT, source)
    assert caught.value.code == 422
    assert caught.value.details is not None
    assert [c["field"] for c in caught.value.details["causes"]] == [field]


def test_local_subject_access_review_must_stay_in_its_namespace(source: Objects) -> None:
    body = {
        "kind": "LocalSubjectAccessReview",
        "metadata": {"namespace": "team-a"},
        "spec": {
            "user": "system:serviceaccount:team-a:bot",
            "resourceAttributes": {"namespace": "team-a", "verb": "get", "resource": "configmaps"},
        },
    }
    assert access_review(body, ADMIN, source)["status"]["allowed"]
    body["spec"]["resourceAttributes"]["namespace"] = "team-b"
    with pytest.raises(ApiError) as caught:
        access_review(body, ADMIN, source)
    assert caught.value.code == 400


def test_the_endpoint_kind_wins_over_a_missing_or_wrong_body_kind(source: Objects) -> None:
    body = {
        "spec": {
            "user": "system:serviceaccount:team-a:bot",
            "resourceAttributes": {"namespace": "team-b", "verb": "get", "resource": "configmaps"},
        }
    }
    # Evaluated for the named subject, not for the (admin) requester.
    answer = access_review(body, ADMIN, source, kind="SubjectAccessReview")
    assert answer["kind"] == "SubjectAccessReview"
    assert answer["status"] == {"allowed": False}
    assert access_review(body, ADMIN, source)["status"] == {"allowed": False}
    self_body = {**body, "kind": "SubjectAccessReview", "spec": {"resourceAttributes": {}}}
    answer = access_review(self_body, BOT, source, kind="SelfSubjectAccessReview")
    assert answer["kind"] == "SelfSubjectAccessReview"


def test_local_review_takes_the_namespace_of_the_url(source: Objects) -> None:
    body = {
        "spec": {
            "user": "system:serviceaccount:team-a:bot",
            "resourceAttributes": {"namespace": "team-a", "verb": "get", "resource": "configmaps"},
        }
    }
    answer = access_review(body, ADMIN, source, kind="LocalSubjectAccessReview", namespace="team-a")
    assert answer["status"]["allowed"]
    with pytest.raises(ApiError):
        access_review(body, ADMIN, source, kind="LocalSubjectAccessReview", namespace="team-b")


def _rules(answer: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return answer["status"]["resourceRules"], answer["status"]["nonResourceRules"]


def test_rules_review_lists_rules_applicable_in_the_namespace(source: Objects) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "team-a"},
    }
    answer = rules_review(body, BOT, source)
    assert answer["kind"] == "SelfSubjectRulesReview"
    assert answer["status"]["incomplete"] is False
    assert "evaluationError" not in answer["status"]
    resource_rules, non_resource_rules = _rules(answer)
    assert {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"]} in (
        resource_rules
    )
    assert {"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]} in (
        resource_rules
    )
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in resource_rules
    assert any("/apis/*" in r["nonResourceURLs"] for r in non_resource_rules)
    assert all("/metrics" not in r["nonResourceURLs"] for r in non_resource_rules)


def test_rules_review_in_another_namespace_drops_role_bindings(source: Objects) -> None:
    body = {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "team-b"}}
    resource_rules, _ = _rules(rules_review(body, BOT, source))
    assert all(r["resources"] != ["configmaps"] for r in resource_rules)
    assert {"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]} in (
        resource_rules
    )


def test_rules_review_keeps_resource_names_and_reports_errors() -> None:
    source = Objects(
        role("named", "ns", rule(["get"], ["secrets"], names=["token"])),
        role_binding("named", "ns", "Role", "named", user("u")),
        role_binding("broken", "ns", "Role", "gone", user("u")),
    )
    body = {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "ns"}}
    answer = rules_review(body, UserInfo("u", groups=("system:authenticated",)), source)
    assert {
        "verbs": ["get"],
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["token"],
    } in answer["status"]["resourceRules"]
    assert answer["status"]["evaluationError"] == (
        'role.rbac.authorization.k8s.io "gone" not found'
    )


def test_rules_review_of_an_admin_lists_everything(source: Objects) -> None:
    body = {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}}
    resource_rules, non_resource_rules = _rules(rules_review(body, ADMIN, source))
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in resource_rules
    assert {"verbs": ["*"], "nonResourceURLs": ["*"]} in non_resource_rules


def test_rules_review_needs_a_namespace(source: Objects) -> None:
    with pytest.raises(ApiError) as caught:
        rules_review({"kind": "SelfSubjectRulesReview", "spec": {}}, BOT, source)
    assert caught.value.code == 400
    assert caught.value.message == "no namespace on request"
