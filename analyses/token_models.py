"""The ``ApiToken`` model: REST API credentials for tooling, stored only as a hash.

``analyses.models`` imports this module so Django registers the model with the app; the token
logic (issuing, checking) lives in ``analyses.tokens``, the DRF authentication class in
``analyses.api.authentication``, and the admin registration in ``analyses.token_admin``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


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
    # Updated at most once a minute (see ``analyses.tokens``), not on every request.
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # After this moment the token no longer authenticates; None means it never expires.
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Once set, never cleared (see save): a leaked token must not come back to life.
    revoked = models.BooleanField(default=False)

    class Meta:
        app_label = "analyses"
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
