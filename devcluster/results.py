"""Small shared pieces of the verb handlers: the ``Result`` value and request helpers.

Used by handlers.py, deletion.py and server.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Result:
    """What to answer: HTTP code, JSON body and Warning texts."""

    code: int
    body: Mapping[str, Any]
    warnings: tuple[str, ...] = field(default=())


def timestamp(moment: datetime) -> str:
    """Return ``moment`` the way the API server prints times (RFC 3339, seconds, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dry_run(query: Mapping[str, str], body: Any = None) -> bool:
    """Return whether the request asks for dryRun=All (query or DeleteOptions body)."""
    if query.get("dryRun") == "All":
        return True
    return isinstance(body, dict) and "All" in (body.get("dryRun") or [])
