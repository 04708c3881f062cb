"""The chart's SVG vocabulary: its colours, its text element, how it writes numbers and moments.

Shared by ``_render``, ``_rates``, ``_compare`` and ``_layers`` so that every label looks and
reads the same. A number a person reads (a label, the description) is ``readable``: six
significant digits, as the page's tables show it (analyses/numbers.py); a tooltip or a
``data-`` attribute keeps Prometheus's exact text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

# Re-exported: the layers write every number through this module.
from analyses.numbers import readable as readable

# Text in these colours (max and pause labels, ticks) is at least 4.5:1 on the white card and on
# the shaded zone (WCAG AA; tests/ui/test_accessibility.py checks it).
VALUE = "#2563eb"
BREACH = "#b91c1c"
PAUSE = "#b45309"
GRID = "#e5e7eb"
LABEL = "#4b5563"
NO_DATA = "#9ca3af"
# At least 3:1 against the white plot (graphics), 4.5:1 for their labels.
BASELINE = "#6d28d9"
ROLLOUT = "#0f766e"


def svg_text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    fill: str = LABEL,
    css: str = "",
    size: int = 11,
    weight: str = "400",
) -> str:
    """Return a ``<text>`` label at (``x``, ``y``) in the chart's font, ``content`` escaped."""
    css_attribute = f' class="{css}"' if css else ""
    return (
        f'<text{css_attribute} x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" '
        f'font-size="{size}" font-weight="{weight}" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">'
        f"{escape(content)}</text>"
    )


def stamp(moment: datetime, long_span: bool) -> str:
    """Return a time-axis label: the date as well when the chart spans over a day."""
    return moment.astimezone(UTC).strftime("%m-%d %H:%M" if long_span else "%H:%M:%S")


def clock(moment: datetime) -> str:
    """Return ``moment`` in UTC to the second, as tooltips and the description write it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
