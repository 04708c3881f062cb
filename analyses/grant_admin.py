"""Admin for namespace grants (``SENTINEL_AUTHZ=django``): who may view, edit, resume where.

``analyses.admin`` imports this module, which registers ``NamespaceGrant`` with the default
site. With ``SENTINEL_AUTHZ=kubernetes`` the grants are ignored (the page says so).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from analyses.grant_models import NamespaceGrant


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
