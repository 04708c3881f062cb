"""Who may use the product: REST API tokens and namespace grants.

``ApiToken``: REST API credentials for tooling, stored only as a hash; issued and checked by
``accounts.tokens``, authenticated by ``analyses.api.authentication``, listed and revoked in
``accounts.admin``. ``NamespaceGrant``: where a user or group may act with
``SENTINEL_AUTHZ=django``; ``accounts.access`` reads it and ``accounts.admin`` edits it. Model
permissions still say *what* a user may do; a grant says *where*.

Both tables were created by the ``analyses`` app and keep their names (``db_table``): the
models changed app without their rows moving (``accounts/migrations/0001_initial.py``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models

# The namespace value that stands for every namespace.
ALL_NAMESPACES = "*"


class ApiToken(models.Model):
    """One token of one user; revoked tokens stay listed so the admin shows who had what."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    # What the token is for ("ci pipeline"), for the admin list; not secret.
    name = models.CharField(max_length=100, blank=True)
    # The first characters of the plaintext, so a leaked token can be matched to its row.
    prefix = models.CharField(max_length=16, editable=False)
    # sha256 hex of the plaintext: a random 256-bit secret needs no salt or slow hash, and an
    # exact-match lookup on the digest needs no constant-time comparison.
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField()
    # Updated at most once a minute (see ``accounts.tokens``), not on every request.
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # After this moment the token no longer authenticates; None means it never expires.
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Once set, never cleared (see save): a leaked token must not come back to life.
    revoked = models.BooleanField(default=False)

    class Meta:
        db_table = "analyses_apitoken"
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save the row, keeping a revoked token revoked whatever the form or caller sent."""
        stored = ApiToken.objects.filter(pk=self.pk, revoked=True)
        if self.pk is not None and not self.revoked and stored.exists():
            self.revoked = True
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        state = " (revoked)" if self.revoked else ""
        label = f" {self.name}" if self.name else ""
        return f"{self.prefix}…{label} of {self.user}{state}"


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
        db_table = "analyses_namespacegrant"
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
