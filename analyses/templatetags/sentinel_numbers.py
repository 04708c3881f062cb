"""The admin templates' ``number`` filter: ``{% load sentinel_numbers %}{{ value|number }}``.

Renders ``analyses.numbers.number_html``: the value to six significant digits, the exact
value on hover.
"""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from analyses.numbers import number_html

register = template.Library()


@register.filter
def number(value: float | int | str | None) -> SafeString:
    """Return ``value`` as the admin shows numbers (see ``analyses.numbers``)."""
    return number_html(value)
