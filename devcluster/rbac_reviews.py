"""The authorization review APIs of devcluster (pkg/registry/authorization), answered by RBAC.

``devcluster.reviews`` calls :func:`access_review` for (Self|Local)SubjectAccessReviews
(``kubectl auth can-i``) and :func:`rules_review` for SelfSubjectRulesReviews
(``kubectl auth can-i --list``); the decisions are rbac.py's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devcluster.auth import UserInfo
from devcluster.rbac import (
    Attributes,
    Policy,
    RbacSource,
    aggregate_errors,
    authorize,
    visit_grants,
)
from devcluster.status import ApiError, invalid


@dataclass(frozen=True)
class _Cause:
    reason: str
    field: str
    message: str


def access_review(
    body: Mapping[str, Any],
    requester: UserInfo,
    source: RbacSource,
    *,
    kind: str | None = None,
    namespace: str = "",
) -> dict[str, Any]:
    """Answer a SelfSubjectAccessReview, SubjectAccessReview or LocalSubjectAccessReview.

    ``kind`` is the kind of the endpoint posted to (the body's own ``kind`` is optional
    for clients); ``namespace`` the URL's namespace for a LocalSubjectAccessReview.
    Return the review object with ``status`` filled in; raise ``ApiError`` (422/400) for
    a review the real API server would reject.
    """
    spec = body.get("spec") or {}
    kind = kind or body.get("kind") or _guess_review_kind(body, spec)
    resource_attrs = spec.get("resourceAttributes")
    non_resource_attrs = spec.get("nonResourceAttributes")
    causes: list[_Cause] = []
    if resource_attrs is not None and non_resource_attrs is not None:
        causes.append(
            _invalid(
                "spec.nonResourceAttributes",
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource_attrs is None and non_resource_attrs is None:
        causes.append(
            _invalid(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if kind == "SelfSubjectAccessReview":
        user = requester
    else:
        user = UserInfo(
            spec.get("user") or "", spec.get("uid") or "", tuple(spec.get("groups") or ())
        )
        if not user.name and not user.groups:
            causes.append(
                _invalid("spec.user", "at least one of user or group must be specified", '""')
            )
    if causes:
        raise invalid(kind, "authorization.k8s.io", "", causes)
    if kind == "LocalSubjectAccessReview":
        namespace = namespace or (body.get("metadata") or {}).get("namespace", "")
        if resource_attrs is None or resource_attrs.get("namespace", "") != namespace:
            raise ApiError(
                400, f"spec.resourceAttributes.namespace must match namespace: {namespace}"
            )
    if resource_attrs is not None:
        attrs = Attributes(
            user=user,
            verb=resource_attrs.get("verb", ""),
            namespace=resource_attrs.get("namespace", ""),
            api_group=resource_attrs.get("group", ""),
            resource=resource_attrs.get("resource", ""),
            subresource=resource_attrs.get("subresource", ""),
            name=resource_attrs.get("name", ""),
        )
    else:
        attrs = Attributes(
            user=user,
            verb=non_resource_attrs.get("verb", ""),
            path=non_resource_attrs.get("path", ""),
            resource_request=False,
        )
    allowed, reason = authorize(attrs, source)
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    answer = copy.deepcopy(dict(body))
    answer.setdefault("apiVersion", "authorization.k8s.io/v1")
    answer["kind"] = kind
    answer.setdefault("metadata", {})
    answer["status"] = status
    return answer


def _guess_review_kind(body: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    if (body.get("metadata") or {}).get("namespace"):
        return "LocalSubjectAccessReview"
    if "user" in spec or "groups" in spec:
        return "SubjectAccessReview"
    return "SelfSubjectAccessReview"


def rules_review(
    body: Mapping[str, Any], requester: UserInfo, source: RbacSource
) -> dict[str, Any]:
    """Answer a SelfSubjectRulesReview: the rules ``requester`` has in spec.namespace."""
    namespace = (body.get("spec") or {}).get("namespace", "")
    if not namespace:
        raise ApiError(400, "no namespace on request")
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    errors: list[LookupError] = []
    for item in visit_grants(Policy(source), requester, namespace):
        if isinstance(item, LookupError):
            errors.append(item)
            continue
        rule = item.rule
        if rule.get("resources"):
            converted = {"verbs": list(rule.get("verbs") or ())}
            for key in ("apiGroups", "resources", "resourceNames"):
                if rule.get(key):
                    converted[key] = list(rule[key])
            resource_rules.append(converted)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append(
                {
                    "verbs": list(rule.get("verbs") or ()),
                    "nonResourceURLs": list(rule["nonResourceURLs"]),
                }
            )
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": False,
    }
    if errors:
        status["evaluationError"] = aggregate_errors(errors)
    return {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": body.get("apiVersion") or "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": {},
        "status": status,
    }


def _invalid(path: str, detail: str, value: str = "null") -> _Cause:
    return _Cause("FieldValueInvalid", path, f"Invalid value: {value}: {detail}")
