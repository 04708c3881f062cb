"""Reading and writing the scalar values of a resource: numbers, integers, times.

JSON hands over ``3.0`` for ``3`` and Python calls ``True`` an integer; a hand-edited status
can hold anything. These helpers are the one place that decides what counts as a number, an
integer or a time, for the spec parser, the status reader and the resource reader alike.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal


def number(value: object) -> float | None:
    """Return ``value`` as a finite float, or None when it is not a JSON number (or a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) else None


def integer(value: object) -> int | None:
    """Return ``value`` as an int when it is a JSON integer (``3`` or ``3.0``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def non_negative_integer(value: object) -> int | None:
    """Return ``integer(value)`` when it is 0 or more, else None."""
    result = integer(value)
    return result if result is not None and result >= 0 else None


def format_time(moment: datetime) -> str:
    """Return ``moment`` as metav1.Time does: RFC 3339 in UTC, whole seconds, ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """Return the UTC datetime of an RFC 3339 string, or None when it is not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC)


def utc_seconds(moment: datetime) -> datetime:
    """Return ``moment`` in UTC truncated to whole seconds, the precision status keeps.

    Raise ``ValueError`` for a naive datetime: a clock without a zone is a programming error.
    """
    if moment.tzinfo is None:
        raise ValueError("A naive datetime was passed as the clock; pass an aware UTC datetime.")
    return moment.astimezone(UTC).replace(microsecond=0)


def format_value(value: float) -> str:
    """Return ``value`` as Prometheus prints a sample: shortest round-trip, no exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text
