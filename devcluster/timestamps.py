"""Normalise built-in timestamps the way the API server's Go types re-encode them.

metav1.Time is printed with whole seconds ("2026-11-29T10:00:30Z"); metav1.MicroTime
with six fractional digits ("2026-11-29T10:00:30.500000Z"), whatever the client sent
(the Python client sends "+00:00" offsets). Custom resources keep their strings.
Called by handlers.py for built-in kinds before storing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# Field paths (dotted, list indexes dropped) whose Go type is MicroTime.
_MICRO_TIME = frozenset(
    {
        "spec.acquireTime",
        "spec.renewTime",
        "eventTime",
        "series.lastObservedTime",
    }
)


def _parse(value: str) -> datetime | None:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(value: str, *, micro: bool) -> str:
    """Return ``value`` re-encoded as Time (micro False) or MicroTime; unparsable stays."""
    moment = _parse(value)
    if moment is None:
        return value
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize(schema: Mapping[str, Any] | None, obj: Any, path: str = "") -> Any:
    """Return ``obj`` with every ``format: date-time`` string in ``schema`` re-encoded."""
    if schema is None:
        return obj
    if isinstance(obj, str) and schema.get("format") == "date-time":
        return format_time(obj, micro=path in _MICRO_TIME)
    if isinstance(obj, dict):
        properties = schema.get("properties") or {}
        return {
            key: normalize(properties.get(key), value, f"{path}.{key}" if path else key)
            if key in properties
            else value
            for key, value in obj.items()
        }
    if isinstance(obj, list) and isinstance(schema.get("items"), Mapping):
        return [normalize(schema["items"], item, path) for item in obj]
    return obj
