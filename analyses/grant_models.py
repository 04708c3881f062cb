"""The ``NamespaceGrant`` model: where a user or group may act with ``SENTINEL_AUTHZ=django``.

``analyses.models`` imports this module so Django registers it; ``analyses.access`` reads it
and ``analyses.grant_admin`` edits it. Model permissions still say *what* a user may do; a grant
says *where*.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models

# The namespace value that stands for every namespace.
ALL_NAMESPACES = "*"


class NamespaceGrant(models.Model):
    """User or group → namespace (or ``*``) → view / edit / resume."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="namespace_grants",
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="namespace_grants"
    )
    namespace = models.CharField(max_length=63, help_text="A namespace, or * for every one.")
    # Edit and resume include view: acting on what one cannot see makes no sense.
    can_view = models.BooleanField("view", default=True)
    can_edit = models.BooleanField("edit", default=False, help_text="Create, change, delete.")
    can_resume = models.BooleanField("resume", default=False, help_text="Resume, evaluate now.")

    class Meta:
        app_label = "analyses"
        ordering = ["namespace", "id"]
        verbose_name = "namespace grant"
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(user__isnull=False, group__isnull=True)
                    | models.Q(user__isnull=True, group__isnull=False)
                ),
                name="grant_user_xor_group",
            )
        ]

    def __str__(self) -> str:
        rights = [
            right
            for right, on in (
                ("view", self.can_view or self.can_edit or self.can_resume),
                ("edit", self.can_edit),
                ("resume", self.can_resume),
            )
            if on
        ]
        who = f"user {self.user}" if self.user_id else f"group {self.group}"
        return f"{who}: {'/'.join(rights) or 'nothing'} in {self.namespace}"

    def clean(self) -> None:
        if (self.user_id is None) == (self.group_id is None):
            raise ValidationError("Choose either a user or a group.")
