"""The RBAC authorizer of devcluster, with the semantics of kube-apiserver's.

``devcluster.server`` calls :func:`authorize` for every request (and :func:`forbidden` to
build the 403 it answers on denial); rbac_reviews.py answers the SubjectAccessReviews and
SelfSubjectRulesReviews (``kubectl auth can-i``) from :func:`visit_grants` and
:func:`authorize`. The RBAC objects come from the store through the :class:`RbacSource`
protocol.

As on a real cluster, ``system:masters`` may do anything, and the bootstrap roles every
cluster has (``cluster-admin``, ``system:discovery``, ``system:public-info-viewer``,
``system:basic-user`` and their bindings, defined in rbac_bootstrap.py) apply unless the
store holds objects of the same name. ClusterRole ``aggregationRule`` is evaluated on read,
standing in for the controller that fills in aggregated rules on a real cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from devcluster.auth import UserInfo
from devcluster.rbac_bootstrap import (
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
    MASTERS_GROUP,
    RBAC_GROUP,
)
from devcluster.status import ApiError

Rule = Mapping[str, Any]


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do, as the authorizer sees it (authorizer.Attributes)."""

    user: UserInfo
    verb: str
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True


class RbacSource(Protocol):
    """Where the authorizer reads Roles, ClusterRoles and their bindings from."""

    def list_rbac(self, resource: str, namespace: str | None) -> list[Mapping[str, Any]]:
        """Return the objects of ``resource`` in ``namespace`` (None: cluster-scoped)."""
        ...


# -- rule matching (pkg/apis/rbac/v1/evaluation_helpers.go) ---------------------------------


def _verb_matches(rule: Rule, verb: str) -> bool:
    return any(v in ("*", verb) for v in rule.get("verbs") or ())


def _group_matches(rule: Rule, group: str) -> bool:
    return any(g in ("*", group) for g in rule.get("apiGroups") or ())


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for resource in rule.get("resources") or ():
        if resource in ("*", combined):
            return True
        # "*/scale" grants the scale subresource of every resource.
        if subresource and resource == "*/" + subresource:
            return True
    return False


def _name_matches(rule: Rule, name: str) -> bool:
    # A rule restricted to names never matches a request without one (create, list,
    # watch, deletecollection), exactly as in Kubernetes.
    names = rule.get("resourceNames") or ()
    return not names or name in names


def _url_matches(rule: Rule, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    """Return whether one PolicyRule grants the request."""
    if not attrs.resource_request:
        return _verb_matches(rule, attrs.verb) and _url_matches(rule, attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    return (
        _verb_matches(rule, attrs.verb)
        and _group_matches(rule, attrs.api_group)
        and _resource_matches(rule, combined, attrs.subresource)
        and _name_matches(rule, attrs.name)
    )


# -- which rules apply to a user (pkg/registry/rbac/validation/rule.go) ---------------------


@dataclass(frozen=True)
class _Grant:
    """A rule together with the binding that grants it, for reason texts."""

    rule: Rule
    source: str


class Policy:
    """The RBAC objects of one decision, with the bootstrap defaults merged in."""

    def __init__(self, source: RbacSource) -> None:
        self.source = source
        self._cluster_roles = _merged(
            BOOTSTRAP_CLUSTER_ROLES, source.list_rbac("clusterroles", None)
        )

    def cluster_role_bindings(self) -> list[Mapping[str, Any]]:
        stored = self.source.list_rbac("clusterrolebindings", None)
        return list(_merged(BOOTSTRAP_CLUSTER_ROLE_BINDINGS, stored).values())

    def role_rules(self, role_ref: Mapping[str, Any], namespace: str) -> list[Rule]:
        kind, name = role_ref.get("kind"), role_ref.get("name", "")
        if kind == "ClusterRole":
            role = self._cluster_roles.get(name)
            if role is None:
                raise LookupError(f'clusterrole.{RBAC_GROUP} "{name}" not found')
            return aggregated_rules(role, self._cluster_roles.values())
        if kind == "Role":
            for role in self.source.list_rbac("roles", namespace) if namespace else ():
                if role.get("metadata", {}).get("name") == name:
                    return list(role.get("rules") or ())
            raise LookupError(f'role.{RBAC_GROUP} "{name}" not found')
        raise LookupError(f'unsupported role reference kind: "{kind}"')


def _merged(
    defaults: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    merged = {obj["metadata"]["name"]: obj for obj in stored}
    for obj in defaults:
        merged.setdefault(obj["metadata"]["name"], obj)
    return merged


def visit_grants(policy: Policy, user: UserInfo, namespace: str) -> Iterator[_Grant | LookupError]:
    """Yield every rule that applies to ``user`` in ``namespace``, or the lookup error."""
    for binding in policy.cluster_role_bindings():
        subject = _subject_for(user, binding.get("subjects") or (), "")
        if subject is None:
            continue
        try:
            rules = policy.role_rules(binding.get("roleRef") or {}, "")
        except LookupError as exc:
            yield exc
            continue
        ref = binding["roleRef"]
        source = (
            f'ClusterRoleBinding "{binding["metadata"]["name"]}" of {ref["kind"]} '
            f'"{ref["name"]}" to {_describe(subject, "")}'
        )
        yield from (_Grant(rule, source) for rule in rules)
    if not namespace:
        return
    for binding in policy.source.list_rbac("rolebindings", namespace):
        subject = _subject_for(user, binding.get("subjects") or (), namespace)
        if subject is None:
            continue
        try:
            rules = policy.role_rules(binding.get("roleRef") or {}, namespace)
        except LookupError as exc:
            yield exc
            continue
        ref = binding["roleRef"]
        source = (
            f'RoleBinding "{binding["metadata"]["name"]}/{namespace}" of {ref["kind"]} '
            f'"{ref["name"]}" to {_describe(subject, namespace)}'
        )
        yield from (_Grant(rule, source) for rule in rules)


def _subject_for(
    user: UserInfo, subjects: Sequence[Mapping[str, Any]], namespace: str
) -> Mapping[str, Any] | None:
    for subject in subjects:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User" and user.name == name:
            return subject
        if kind == "Group" and name in user.groups:
            return subject
        if kind == "ServiceAccount":
            # A RoleBinding may leave out the namespace of a ServiceAccount in its own.
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace and user.name == f"system:serviceaccount:{sa_namespace}:{name}":
                return subject
    return None


def _describe(subject: Mapping[str, Any], binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{subject.get("name", "")}/{namespace}"'
    return f'{subject.get("kind")} "{subject.get("name", "")}"'


def aggregate_errors(errors: Sequence[LookupError]) -> str:
    """Return the errors as apimachinery's NewAggregate prints them: one alone, else a list."""
    messages = [str(e) for e in errors]
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


# -- aggregation (pkg/controller/clusterroleaggregation) ------------------------------------


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[Rule]:
    """Return a ClusterRole's effective rules, resolving ``aggregationRule`` recursively."""
    by_name = {r["metadata"]["name"]: r for r in cluster_roles}
    return _aggregated(role, by_name, frozenset())


def _aggregated(
    role: Mapping[str, Any], by_name: Mapping[str, Mapping[str, Any]], seen: frozenset[str]
) -> list[Rule]:
    aggregation = role.get("aggregationRule")
    if not aggregation:
        return list(role.get("rules") or ())
    name = role["metadata"]["name"]
    seen = seen | {name}
    rules: list[Rule] = []
    for other_name in sorted(by_name):
        other = by_name[other_name]
        if other_name in seen:
            continue
        labels = other.get("metadata", {}).get("labels") or {}
        if any(_selects(sel, labels) for sel in aggregation.get("clusterRoleSelectors") or ()):
            for rule in _aggregated(other, by_name, seen):
                if rule not in rules:
                    rules.append(rule)
    return rules


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return False  # the aggregation controller ignores empty selectors
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression_holds(e, labels) for e in selector.get("matchExpressions") or ())


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator")
    values = expression.get("values") or ()
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


# -- decisions ------------------------------------------------------------------------------


def authorize(attrs: Attributes, source: RbacSource) -> tuple[bool, str]:
    """Return (allowed, reason) for a request, as kube-apiserver's authorizer chain would.

    The reason names the granting binding ("RBAC: allowed by ClusterRoleBinding ...");
    on denial it is empty unless a binding points at a missing role.
    """
    if MASTERS_GROUP in attrs.user.groups:
        return True, ""
    errors: list[LookupError] = []
    for item in visit_grants(Policy(source), attrs.user, attrs.namespace):
        if isinstance(item, LookupError):
            errors.append(item)
        elif rule_allows(attrs, item.rule):
            return True, f"RBAC: allowed by {item.source}"
    return False, f"RBAC: {aggregate_errors(errors)}" if errors else ""


def forbidden_message(attrs: Attributes, reason: str = "") -> str:
    """Return the message of the 403 Status kube-apiserver answers for a denial."""
    user = attrs.user.name
    if not attrs.resource_request:
        text = f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        scope = (
            f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        )
        text = (
            f'User "{user}" cannot {attrs.verb} resource "{resource}" '
            f'in API group "{attrs.api_group}" {scope}'
        )
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        return f"forbidden: {text}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {text}'
    return f"{qualified} is forbidden: {text}"


def forbidden(attrs: Attributes, reason: str = "") -> ApiError:
    """Return the 403 error kube-apiserver answers when ``authorize`` denies."""
    details: dict[str, Any] = {}
    if attrs.resource_request and attrs.resource:
        details = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
        details = {k: v for k, v in details.items() if v}
    return ApiError(403, forbidden_message(attrs, reason), details=details or None)
