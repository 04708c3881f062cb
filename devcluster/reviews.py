"""The create-only review kinds: access reviews, rules reviews and SelfSubjectReview.

server.py calls ``review`` for POSTs to authorization.k8s.io and
authentication.k8s.io review resources; decisions come from rbac.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from devcluster import rbac, rbac_reviews
from devcluster.auth import UserInfo
from devcluster.resources import ResourceType
from devcluster.results import Result, timestamp
from devcluster.status import ApiError


def is_review(rtype: ResourceType) -> bool:
    """Return whether ``rtype`` is a review kind answered without storing anything."""
    return not rtype.persisted and rtype.group in ("authorization.k8s.io", "authentication.k8s.io")


def review(
    rtype: ResourceType, namespace: str, body: Any, user: UserInfo, source: rbac.RbacSource
) -> Result:
    """Answer a review POST for ``user``."""
    if not isinstance(body, dict):
        raise ApiError(400, "the body of the request was in an unknown format")
    if rtype.kind == "SelfSubjectReview":
        info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
        if user.uid:
            info["uid"] = user.uid
        if user.extra:
            info["extra"] = {key: list(values) for key, values in user.extra}
        return Result(
            201,
            {
                "kind": rtype.kind,
                "apiVersion": rtype.group_version,
                "metadata": {"creationTimestamp": timestamp(datetime.now(UTC))},
                "status": {"userInfo": info},
            },
        )
    if rtype.kind == "SelfSubjectRulesReview":
        answer = rbac_reviews.rules_review(body, user, source)
    else:
        if rtype.kind == "LocalSubjectAccessReview":
            attributes = (body.setdefault("spec", {}) or {}).get("resourceAttributes")
            if isinstance(attributes, dict):
                attributes.setdefault("namespace", namespace)
        answer = rbac_reviews.access_review(body, user, source)
    return Result(201, {**answer, "apiVersion": rtype.group_version, "kind": rtype.kind})
