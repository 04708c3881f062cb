"""Django model permissions on ``Analysis`` for every endpoint (docs/api.md)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request

_VIEW = "%(app_label)s.view_%(model_name)s"
_CHANGE = "%(app_label)s.change_%(model_name)s"


class AnalysisPermissions(DjangoModelPermissions):
    """view / add / change / delete on ``Analysis``; resume and evaluate need change."""

    # DRF's default lets any authenticated user read; reading needs view here.
    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": [_VIEW],
        "HEAD": [_VIEW],
        "OPTIONS": [_VIEW],
    }
    # POST actions that act on an existing analysis rather than add one.
    change_actions = frozenset({"resume", "evaluate"})

    def has_permission(self, request: Request, view: Any) -> bool:
        if getattr(view, "action", None) not in self.change_actions:
            return super().has_permission(request, view)
        user = request.user
        if not user or not user.is_authenticated:
            return False
        model = view.get_queryset().model
        meta = {"app_label": model._meta.app_label, "model_name": model._meta.model_name}
        return user.has_perm(_CHANGE % meta)
