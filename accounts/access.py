"""Who may do what, where: the web app's one policy module (docs/security.md#who-can-do-what).

Model permissions (view / add / change / delete on ``Analysis``) say *what* a user may do and
are checked by the API's permission class and the admin as before; this module says *where*.
The REST API views, the admin and its overview ask it two questions:

- ``visible(user, queryset)``: the analyses ``user`` may see, inside ``SENTINEL_NAMESPACES``;
- ``allows(user, verb, namespace)``: whether ``user`` may do ``verb`` in ``namespace``;
- ``may_write_cluster_templates(user, verb)``: whether ``user`` may change the cluster-scoped
  templates, which guard every namespace that names them.

``SENTINEL_AUTHZ=django`` answers from ``NamespaceGrant`` rows (superusers everywhere);
``SENTINEL_AUTHZ=kubernetes`` asks the API server with a SubjectAccessReview for the user's
username and Django groups against ``rolloutanalyses``, and reuses each answer for
``SENTINEL_AUTHZ_CACHE_SECONDS``. A review the cluster cannot answer is a denial (and logged):
the web app fails closed. Names under ``system:`` are Kubernetes' own (``system:masters`` is
allowed everything): a Django group so named is left out of the review, and a Django user so
named is denied without one, since Django names are whatever an admin or an SSO proxy made them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import Model, Q, QuerySet

from accounts import scope
from accounts.models import ALL_NAMESPACES, NamespaceGrant
from sentinel_cluster import clients, kube

log = logging.getLogger(__name__)

# A queryset of rows with a ``namespace`` column: analyses, deliveries.
_Rows = TypeVar("_Rows", bound=Model)

_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
# The cluster-scoped template kind's resource, reviewed for writes of cluster templates.
CLUSTER_TEMPLATES = "clusterrolloutanalysistemplates"
# Answers kept at most; past this the cache starts again (a handful of users is the norm).
_CACHE_LIMIT = 10_000


class Verb(StrEnum):
    """What a user asks to do with analyses (the Kubernetes verbs, plus resume)."""

    GET = "get"
    LIST = "list"
    CREATE = "create"
    UPDATE = "update"
    PATCH = "patch"
    DELETE = "delete"
    # Resume and "evaluate now": an update of rolloutanalyses/status.
    RESUME = "resume"


# The grant column that allows each verb with SENTINEL_AUTHZ=django.
_GRANT_COLUMN = {
    Verb.GET: "view",
    Verb.LIST: "view",
    Verb.CREATE: "edit",
    Verb.UPDATE: "edit",
    Verb.PATCH: "edit",
    Verb.DELETE: "edit",
    Verb.RESUME: "resume",
}


def allows(user: Any, verb: Verb, namespace: str) -> bool:
    """Return whether ``user`` may ``verb`` analyses in ``namespace`` (scope included)."""
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if not scope.in_scope(namespace):
        return False
    if _mode() == "kubernetes":
        return _reviewed(user, verb, namespace)
    if user.is_superuser:
        return True
    return _grants(user, verb).filter(namespace__in=[namespace, ALL_NAMESPACES]).exists()


def may_write_cluster_templates(user: Any, verb: Verb) -> bool:
    """Return whether ``user`` may ``verb`` (create, update, delete) cluster templates.

    With ``SENTINEL_AUTHZ=django`` only superusers may: a grant names a namespace, and a
    cluster template is every namespace's. With ``kubernetes`` the API server decides, as it
    does for analyses: a SubjectAccessReview on ``clusterrolloutanalysistemplates`` (cluster
    scope), so the platform team's ClusterRole is what lets a person write them here too.
    """
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if _mode() == "kubernetes":
        return _reviewed(user, verb, "", resource=CLUSTER_TEMPLATES)
    return bool(user.is_superuser)


def visible(user: Any, queryset: QuerySet[_Rows]) -> QuerySet[_Rows]:
    """Return the analyses of ``queryset`` that ``user`` may see (list), inside the scope."""
    queryset = scope.scoped(queryset)
    if not user or not user.is_authenticated or not user.is_active:
        return queryset.none()
    if _mode() == "kubernetes":
        # One review for all namespaces first: a cluster-wide reader needs no more.
        if _reviewed(user, Verb.LIST, ""):
            return queryset
        names = queryset.order_by().values_list("namespace", flat=True).distinct()
        return queryset.filter(namespace__in=[ns for ns in names if _reviewed(user, Verb.LIST, ns)])
    if user.is_superuser:
        return queryset
    granted = set(_grants(user, Verb.LIST).values_list("namespace", flat=True))
    if ALL_NAMESPACES in granted:
        return queryset
    return queryset.filter(namespace__in=granted)


def _mode() -> str:
    return getattr(settings, "SENTINEL_AUTHZ", "django")


def _grants(user: Any, verb: Verb) -> QuerySet[NamespaceGrant]:
    column = _GRANT_COLUMN[verb]
    rights = Q(**{f"can_{column}": True})
    if column == "view":
        # Edit and resume include view.
        rights |= Q(can_edit=True) | Q(can_resume=True)
    return NamespaceGrant.objects.filter(rights, Q(user=user) | Q(group__in=user.groups.all()))


# -- SENTINEL_AUTHZ=kubernetes ----------------------------------------------------------------


class _ReviewCache:
    """SubjectAccessReview answers by (user, groups, verb, namespace) for a few seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._answers: dict[tuple[Any, ...], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> bool | None:
        with self._lock:
            entry = self._answers.get(key)
        if entry is None or entry[0] < self._clock():
            return None
        return entry[1]

    def put(self, key: tuple[Any, ...], allowed: bool, ttl: float) -> None:
        with self._lock:
            if len(self._answers) >= _CACHE_LIMIT:
                self._answers.clear()
            self._answers[key] = (self._clock() + ttl, allowed)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()


_cache = _ReviewCache()


def clear_cache() -> None:
    """Forget every cached SubjectAccessReview answer (after an RBAC change, and in tests)."""
    _cache.clear()


# Kubernetes reserves this prefix for its own users and groups (docs/security.md).
_RESERVED = "system:"


def _reviewed(user: Any, verb: Verb, namespace: str, *, resource: str = kube.PLURAL) -> bool:
    if user.get_username().startswith(_RESERVED):
        log.warning("user %s has a Kubernetes system name; denying", user.get_username())
        return False
    names = user.groups.values_list("name", flat=True)
    groups = tuple(sorted(name for name in names if not name.startswith(_RESERVED)))
    key = (user.get_username(), groups, verb, namespace, resource)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    allowed = _review(user.get_username(), groups, verb, namespace, resource)
    _cache.put(key, allowed, float(getattr(settings, "SENTINEL_AUTHZ_CACHE_SECONDS", 5.0)))
    return allowed


def _review(
    username: str, groups: tuple[str, ...], verb: Verb, namespace: str, resource: str
) -> bool:
    attributes: dict[str, str] = {
        "group": kube.GROUP,
        "resource": resource,
        "verb": "update" if verb is Verb.RESUME else verb.value,
        "namespace": namespace,
    }
    if verb is Verb.RESUME:
        attributes["subresource"] = "status"
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": username, "groups": list(groups), "resourceAttributes": attributes},
    }
    try:
        client = clients.for_kubeconfig(getattr(settings, "SENTINEL_KUBECONFIG", None) or None)
        answer = client.request("POST", _REVIEWS, body=body)
    except kube.KubeError as exc:
        log.warning("SubjectAccessReview for %s failed; denying: %s", username, exc)
        return False
    return bool((answer.get("status") or {}).get("allowed"))
