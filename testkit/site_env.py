"""The settings every process the kit starts needs in production mode (docs/operations.md).

With ``SENTINEL_DEBUG`` off, ``manage.py`` refuses to start without ``SENTINEL_SECRET_KEY`` (and
``runoperator`` without ``SENTINEL_TASK_KEY``); the kit's processes (tests, benchmarks) run with
keys that say what they are for, unless the caller's environment names them. They talk plain
HTTP to 127.0.0.1, where Secure cookies are never sent back, so those are off too.
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULTS = {
    "SENTINEL_SECRET_KEY": "kit-only-not-secret-" + "k" * 40,
    # The operator's own task-signing key (docs/security.md): never the web app's key.
    "SENTINEL_TASK_KEY": "kit-only-task-key-" + "t" * 40,
    "SENTINEL_SECURE_COOKIES": "false",
}


def with_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """Return ``env`` with ``DEFAULTS`` filled in where it names none."""
    return {**DEFAULTS, **env}
