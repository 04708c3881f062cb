"""``Impersonate-User`` / ``Impersonate-Group`` headers (kubectl ``--as`` / ``--as-group``).

server.py calls ``impersonate`` after authentication; the caller needs the RBAC
``impersonate`` verb on users/groups/serviceaccounts, as on a real API server.
"""

from __future__ import annotations

from collections.abc import Sequence

from devcluster import rbac
from devcluster.auth import UserInfo


def impersonate(
    user: UserInfo,
    target: str,
    groups: Sequence[str],
    uid: str,
    source: rbac.RbacSource,
) -> UserInfo:
    """Return the impersonated user, or raise the 403 ApiError when not allowed."""
    wanted_groups = tuple(groups)
    checks: list[rbac.Attributes] = []
    parts = target.split(":")
    if target.startswith("system:serviceaccount:") and len(parts) == 4:
        checks.append(
            rbac.Attributes(
                user=user,
                verb="impersonate",
                namespace=parts[2],
                resource="serviceaccounts",
                name=parts[3],
            )
        )
        wanted_groups = wanted_groups or (
            "system:serviceaccounts",
            f"system:serviceaccounts:{parts[2]}",
        )
    else:
        checks.append(rbac.Attributes(user=user, verb="impersonate", resource="users", name=target))
    checks += [
        rbac.Attributes(user=user, verb="impersonate", resource="groups", name=group)
        for group in groups
    ]
    for attrs in checks:
        allowed, reason = rbac.authorize(attrs, source)
        if not allowed:
            raise rbac.forbidden(attrs, reason)
    if target != "system:anonymous" and "system:authenticated" not in wanted_groups:
        wanted_groups = (*wanted_groups, "system:authenticated")
    return UserInfo(target, uid=uid, groups=wanted_groups)
