"""The key the operator seals its status with (sentinel_core.status_seal).

Derived from ``SENTINEL_TASK_KEY``, which only the operator's Pod holds (docs/security.md), so
neither the web app nor a person who may write ``rolloutanalyses/status`` can make a seal the
operator accepts. Without a task key (allowed only with ``SENTINEL_DEBUG`` on: the demo and a
development checkout) it is derived from ``SENTINEL_SECRET_KEY``, which the web app holds too:
fine on a laptop, and the reason ``runoperator`` requires the task key in production.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings

# Derived, not the task key itself: the same key never signs tasks and statuses alike.
_PURPOSE = b"rollout-sentinel status seal v1"


def seal_key() -> bytes:
    """Return the key the operator seals and checks ``status.seal`` with."""
    base = settings.SENTINEL.task_key or settings.SENTINEL.secret_key
    return hmac.new(base.encode(), _PURPOSE, hashlib.sha256).digest()
