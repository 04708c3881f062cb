"""``SENTINEL_NAMESPACES`` as the web app's boundary (docs/security.md#who-can-do-what).

The API serializer, the admin form and ``analyses.services`` ask ``in_scope`` before a write;
``accounts.access`` filters every queryset the API, the admin and the overview show through
``scoped``. An analysis outside the scope may sit in the database (created with kubectl, or
left from an earlier configuration); to the web app it does not exist.
"""

from __future__ import annotations

from typing import TypeVar

from django.conf import settings
from django.db.models import Model, QuerySet

# A queryset of rows with a ``namespace`` column.
_Rows = TypeVar("_Rows", bound=Model)


def namespaces() -> tuple[str, ...]:
    """Return the configured namespaces; an empty tuple means every namespace."""
    return tuple(getattr(settings, "SENTINEL_NAMESPACES", ()) or ())


def in_scope(namespace: str) -> bool:
    """Return whether the web app may show or write analyses in ``namespace``."""
    allowed = namespaces()
    return not allowed or namespace in allowed


def outside_message(namespace: str) -> str:
    """Return the stable message for a namespace outside the scope."""
    return (
        f"namespace {namespace!r} is outside SENTINEL_NAMESPACES "
        f"({', '.join(namespaces())}); Rollout Sentinel does not manage analyses there"
    )


def scoped(queryset: QuerySet[_Rows]) -> QuerySet[_Rows]:
    """Return ``queryset`` without the analyses outside the scope."""
    allowed = namespaces()
    return queryset.filter(namespace__in=allowed) if allowed else queryset
