"""Go-style durations as the CRD writes them: ``30s``, ``1m30s``, ``1.5h``, ``500ms``.

``spec.parse_spec`` reads ``interval`` and ``baseline.offset`` with ``parse_duration``; the REST
API and the admin check intervals with ``check_interval``. Both are re-exported by ``spec``.
"""

from __future__ import annotations

import re
from fractions import Fraction

MIN_INTERVAL_SECONDS = 5
# Go's time.Duration is an int64 of nanoseconds; longer durations do not parse in Go either.
_MAX_DURATION_SECONDS = Fraction(2**63 - 1, 10**9)
_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 10**3),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}


def parse_duration(text: str) -> float:
    """Return the seconds of a Go-style duration (``30s``, ``1m30s``, ``1.5h``, ``500ms``).

    Accept exactly what the CRD's ``interval`` pattern accepts (no sign, every number with a
    unit); raise ``ValueError`` with a full sentence otherwise.
    """
    if not isinstance(text, str) or not _DURATION.fullmatch(text):
        raise ValueError(
            f"{text!r} is not a duration: use numbers with units ns, us, ms, s, m or h, "
            "such as 30s, 1m30s or 1.5h"
        )
    total = sum(
        (Fraction(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text)),
        start=Fraction(0),
    )
    if total > _MAX_DURATION_SECONDS:
        raise ValueError(f"{text!r} is out of range: the longest duration is about 2562047h")
    return float(total)


def check_interval(seconds: float, text: str) -> None:
    """Raise ``ValueError`` when an interval of ``seconds`` (written ``text``) is too short.

    The CRD's schema cannot say this without CEL; the operator, the REST API and the admin do.
    """
    if seconds < MIN_INTERVAL_SECONDS:
        raise ValueError(f"must be at least {MIN_INTERVAL_SECONDS}s, got {text}")
