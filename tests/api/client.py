"""The REST API as the API tests call it: ``Api`` sessions over HTTP and users to own them.

``tests/api/conftest.py`` builds ``make_api`` and ``api`` on these; tests import ``Api``,
``MakeApi`` and ``make_user`` from here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import requests
from django.contrib.auth.models import Permission, User

from accounts.models import NamespaceGrant

_users = itertools.count(1)

ALL_PERMISSIONS = ("view_analysis", "add_analysis", "change_analysis", "delete_analysis")


class Api:
    """Requests to ``/api/v1/`` of the live server, as one user."""

    def __init__(self, base: str, headers: Mapping[str, str] | None = None) -> None:
        self.base = base
        # A fresh connection per request, announced as such: the live server answers a
        # kept-alive connection ~40 ms late (Nagle's algorithm meets delayed ACKs), and does
        # not echo "Connection: close", so a pooled connection would be reused after it closed.
        self.headers = {"Connection": "close", **(headers or {})}

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Send ``method`` to ``path`` (relative to ``/api/v1/``, or an absolute link)."""
        kwargs.setdefault("timeout", 30)
        kwargs["headers"] = {**self.headers, **kwargs.get("headers", {})}
        url = path if path.startswith("http") else self.base + path
        return requests.request(method, url, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, **kwargs)


MakeApi = Callable[..., Api]


def make_user(
    *codenames: str, is_superuser: bool = False, namespaces: tuple[str, ...] = ("*",)
) -> User:
    """Create a user holding the ``analyses`` permissions ``codenames`` (e.g. view_analysis).

    The user may view, edit and resume in ``namespaces`` (a NamespaceGrant each; ``*`` is
    every namespace), so that model permissions alone decide unless a test narrows them.
    """
    user = User.objects.create_user(
        f"user{next(_users)}", password="pw-for-tests", is_superuser=is_superuser
    )
    if codenames:
        permissions = Permission.objects.filter(
            content_type__app_label="analyses", codename__in=codenames
        )
        assert permissions.count() == len(codenames), codenames
        user.user_permissions.add(*permissions)
    for namespace in namespaces:
        NamespaceGrant.objects.create(
            user=user, namespace=namespace, can_view=True, can_edit=True, can_resume=True
        )
    return user
