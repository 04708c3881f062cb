"""Admin for who may use the product: REST API tokens and namespace grants.

Tokens: list, revoke (tick "revoked") or delete; never show the secret. They are created with
``manage.py create_api_token``, so the admin cannot add them. Namespace grants
(``SENTINEL_AUTHZ=django``): who may view, edit, resume where; with
``SENTINEL_AUTHZ=kubernetes`` the grants are ignored (the page says so).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from accounts.models import ApiToken, NamespaceGrant


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "expires_at", "last_used_at", "revoked"]
    list_filter = ["revoked"]
    search_fields = ["prefix", "name", "user__username"]
    fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A token made here could never be shown; `manage.py create_api_token` prints it.
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        fixed = ["user", "prefix", "created_at", "expires_at", "last_used_at"]
        # Revoking is for good: the box is no longer a box once ticked and saved.
        return [*fixed, "revoked"] if obj is not None and obj.revoked else fixed

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.update(revoked=True)
        self.message_user(request, f"Revoked {count} token(s).")


@admin.register(NamespaceGrant)
class NamespaceGrantAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user", "group", "namespace", "can_view", "can_edit", "can_resume"]
    list_filter = ["namespace", "can_edit", "can_resume"]
    search_fields = ["namespace", "user__username", "group__name"]
    fields = ["user", "group", "namespace", "can_view", "can_edit", "can_resume"]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if getattr(settings, "SENTINEL_AUTHZ", "django") != "django":
            self.message_user(
                request,
                "SENTINEL_AUTHZ is kubernetes: Kubernetes RBAC decides and these grants are "
                "not used.",
                level="warning",
            )
        return super().changelist_view(request, extra_context)
