"""How a spec's problems are reported: ``FieldError`` per field, ``InvalidSpecError`` for them all.

Also the two reporting helpers every part of the spec parser shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sentinel_core.spec._types import SpecSummary


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, named by its path (``spec.metrics[1].name``)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class InvalidSpecError(ValueError):
    """A spec broke one or more rules; ``errors`` lists every one of them, in field order.

    ``summary`` holds what could be read of it all the same, for the mirror and the UI.
    """

    def __init__(
        self,
        errors: list[FieldError] | tuple[FieldError, ...],
        summary: SpecSummary | None = None,
    ) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        self.summary = summary or SpecSummary()
        super().__init__("; ".join(str(error) for error in self.errors) or "invalid spec")

    def by_field(self) -> dict[str, list[str]]:
        """Return the messages grouped by field path, the shape DRF uses for field errors."""
        grouped: dict[str, list[str]] = {}
        for error in self.errors:
            grouped.setdefault(error.field, []).append(error.message)
        return grouped


def shown_value(value: object) -> str:
    """Return a short text of a wrong value; a big or nested one must not bloat the message."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 64 else repr(value[:64]) + "…"
    return f"a {type(value).__name__}" if isinstance(value, list | dict) else repr(value)[:64]


def report_unknown_fields(
    raw: Mapping[Any, Any], known: frozenset[str], path: str, errors: list[FieldError]
) -> None:
    """Add an "unknown field" error for each key of ``raw`` not in ``known``."""
    for key in raw:
        if key not in known:
            errors.append(FieldError(f"{path}.{key}", "unknown field"))
