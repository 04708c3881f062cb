"""Replace a template string's placeholders with values that cannot change a query's shape.

A placeholder is ``{{ args.NAME }}``, ``{{ namespace }}``, ``{{ target.kind }}`` or
``{{ target.name }}`` (spaces inside the braces optional). Where it stands decides how its value
is written (docs/templates.md#placeholders):

- inside a PromQL string literal, ``"…"`` or ``'…'``, the value is escaped as PromQL reads
  escapes (backslash, the quote, control characters), so it stays one string whatever it holds;
- inside a raw string ``` `…` ```, which has no escapes, a value holding a backtick is refused;
- anywhere else (a range such as ``[{{ args.window }}]``, a metric name's part, a number) the
  value must be a plain token: letters, digits, ``_``, ``:`` and ``.``.

The scanner follows PromQL's lexer only as far as strings and comments go: that is all it
takes to know whether a position is inside a literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
TOKEN = re.compile(r"[A-Za-z0-9_:.]+")

# What each quote's escape turns into; any other control character is written as \xHH.
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class PlaceholderError(ValueError):
    """A placeholder could not be replaced; ``unknown`` is the name it used, if that was why."""

    def __init__(self, message: str, unknown: str | None = None) -> None:
        super().__init__(message)
        self.unknown = unknown


def escape_in_string(value: str, quote: str) -> str:
    """Return ``value`` written inside a PromQL string literal delimited by ``quote``."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char == quote:
            out.append("\\" + quote)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return "".join(out)


def _contexts(text: str) -> list[str]:
    """Return, for each position of ``text``, the quote it is inside (``""`` outside any)."""
    contexts = []
    quote = ""
    escaped = comment = False
    for char in text:
        contexts.append(quote)
        if comment:
            comment = char != "\n"
        elif quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote != "`":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char == "#":
            comment = True
    return contexts


def substitute(text: str, lookup: Callable[[str], str], where: str) -> str:
    """Return ``text`` with each placeholder replaced by ``lookup(name)``, written for its place.

    ``lookup`` raises ``PlaceholderError`` for a name it does not know or a value it lacks;
    ``where`` names the field in messages.
    """
    if "{{" not in text:
        return text
    contexts = _contexts(text)
    out = []
    last = 0
    pieces = []
    for match in PLACEHOLDER.finditer(text):
        pieces.append(text[last : match.start()])
        out.append(pieces[-1])
        last = match.end()
        name = match.group(1)
        value = lookup(name)
        quote = contexts[match.start()]
        if quote == "`":
            if "`" in value:
                raise PlaceholderError(
                    f"{where}: the value of {{{{ {name} }}}} holds a backtick and cannot be "
                    "written inside the raw string `…` it stands in"
                )
            out.append(value)
        elif quote:
            out.append(escape_in_string(value, quote))
        elif TOKEN.fullmatch(value):
            out.append(value)
        else:
            raise PlaceholderError(
                f"{where}: {{{{ {name} }}}} stands outside a string literal, where its value "
                f"{value[:64]!r} must be letters, digits, _, : and . only"
            )
    rest = text[last:]
    if any("{{" in piece for piece in (*pieces, rest)):
        raise PlaceholderError(f"{where}: a '{{{{' opens no placeholder closed by '}}}}'")
    out.append(rest)
    return "".join(out)


def names_in(text: str) -> set[str]:
    """Return the placeholder names ``text`` uses."""
    return {match.group(1) for match in PLACEHOLDER.finditer(text)}


def lookup_in(values: Mapping[str, str]) -> Callable[[str], str]:
    """Return a ``lookup`` over ``values`` that refuses any other name."""

    def lookup(name: str) -> str:
        if name not in values:
            raise PlaceholderError(f"unknown placeholder {{{{ {name} }}}}", unknown=name)
        return values[name]

    return lookup
