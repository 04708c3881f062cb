"""Admin for REST API tokens: list, revoke (tick "revoked") or delete; never show the secret.

``analyses.admin`` imports this module, which registers ``ApiToken`` with the default site.
Tokens are created with ``manage.py create_api_token``, so the admin cannot add them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from analyses.token_models import ApiToken


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
