"""Grant a user rights in a namespace both ways the web app can be told.

``SENTINEL_AUTHZ=django`` reads ``NamespaceGrant`` rows; ``SENTINEL_AUTHZ=kubernetes`` asks the
cluster, so there the same rights are a Role and a RoleBinding in devcluster, whose RBAC
authorizer answers the web app's SubjectAccessReviews. Shared by tests/api/test_authz.py and
tests/ui/test_admin_authz.py.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User

from accounts import access
from accounts.models import NamespaceGrant
from sentinel_cluster import kube

MODES = ("django", "kubernetes")
_RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/{kind}"
_READ = ["get", "list", "watch"]
_WRITE = ["create", "update", "patch", "delete"]


def use_mode(settings: Any, mode: str) -> None:
    """Switch the web app to ``mode`` and forget cached review answers."""
    settings.SENTINEL_AUTHZ = mode
    access.clear_cache()


def grant(
    client: kube.KubeClient,
    namespace: str,
    *,
    user: User | None = None,
    group: Group | None = None,
    edit: bool = False,
    resume: bool = False,
) -> None:
    """Let ``user`` or ``group`` view (and optionally edit, resume) analyses in ``namespace``.

    Writes both forms, a NamespaceGrant and RBAC, so that the mode alone decides which counts.
    """
    NamespaceGrant.objects.create(
        user=user, group=group, namespace=namespace, can_edit=edit, can_resume=resume
    )
    rules = [{"apiGroups": [kube.GROUP], "resources": [kube.PLURAL], "verbs": list(_READ)}]
    if edit:
        rules[0]["verbs"] += _WRITE
    if resume:
        rules.append(
            {"apiGroups": [kube.GROUP], "resources": [f"{kube.PLURAL}/status"], "verbs": ["update"]}
        )
    who = user.get_username() if user is not None else group.name  # type: ignore[union-attr]
    name = f"sentinel-{who}".lower()
    client.request(
        "POST",
        _RBAC.format(namespace=namespace, kind="roles"),
        body={"metadata": {"name": name}, "rules": rules},
    )
    subject = {
        "kind": "User" if user is not None else "Group",
        "name": who,
        "apiGroup": "rbac.authorization.k8s.io",
    }
    client.request(
        "POST",
        _RBAC.format(namespace=namespace, kind="rolebindings"),
        body={
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [subject],
        },
    )
