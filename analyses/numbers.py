"""Numbers as the admin shows them: a few significant digits to read, the exact value on hover.

A value computed in floating point (``0.1 + 0.2``) prints as ``0.30000000000000004``; Prometheus
and the status keep that text, and the REST API hands it on unchanged. The admin's pages show
``0.3`` instead, with the exact text in the element's ``title``. The templates use the
``number`` filter (``analyses/templatetags/sentinel_numbers.py``); the admin's Python code
(``analyses.admin.views``, ``notifications.admin``) calls ``readable`` and ``number_html``.
Locale-independent: a dot for the decimals, no grouping, as in the queries next to them.
"""

from __future__ import annotations

import math

from django.utils.html import format_html
from django.utils.safestring import SafeString

from sentinel_core.values import format_value

# Enough to tell 0.251 from 0.25, and far from the 15th digit where float noise starts.
SIGNIFICANT_DIGITS = 6
# Outside these magnitudes a number is shown with an exponent (1.5e-07, 2.5e+18).
_SMALLEST_PLAIN = 1e-4
_LARGEST_PLAIN = 1e15


def readable(value: float | int | str | None) -> str:
    """Return ``value`` rounded to ``SIGNIFICANT_DIGITS`` significant digits, no trailing zeros.

    Whole digits are never rounded away (``123456789`` stays so). A string is read as
    Prometheus writes a sample (``"0.41"``, ``"NaN"``, ``"+Inf"``); one that is not a number
    comes back unchanged, and None as "".
    """
    number = _as_float(value)
    if number is None:
        return "" if value is None else str(value)
    if not math.isfinite(number):
        return format_value(number)
    if number == 0:
        return "0"
    size = abs(number)
    if size < _SMALLEST_PLAIN or size >= _LARGEST_PLAIN:
        mantissa, exponent = f"{number:.{SIGNIFICANT_DIGITS - 1}e}".split("e")
        return f"{_trim(mantissa)}e{exponent}"
    decimals = max(0, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(size)))
    return _trim(f"{number:.{decimals}f}")


def exact(value: float | int | str | None) -> str:
    """Return ``value`` to full precision: Prometheus's text (shortest round trip)."""
    number = _as_float(value)
    if number is None:
        return "" if value is None else str(value)
    return format_value(number)


def number_html(value: float | int | str | None) -> SafeString:
    """Return ``value`` readable, in a ``<span>`` whose ``title`` holds the exact value."""
    return format_html(
        '<span class="sentinel-number" title="{}">{}</span>', exact(value), readable(value)
    )


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _trim(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
