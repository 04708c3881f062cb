"""Print decoded JSON values the way Go's fmt and strconv do, for byte-identical error texts.

schema.py (field.Error messages) and crd_validation.py call these: apimachinery's field.Error
prints bad values with %v for numbers and bools, %q for strings and json.Marshal for maps,
slices and null, and kube-openapi names JSON types in its messages.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

__all__ = ["go_float", "go_json", "go_quote", "go_value", "type_name"]


def type_name(value: Any) -> str:
    """Return the JSON schema type of a decoded JSON value ("null" for None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def go_quote(text: str) -> str:
    """Return ``text`` quoted like Go's strconv.Quote."""
    escapes = {
        '"': '\\"',
        "\\": "\\\\",
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
    }
    out = []
    for char in text:
        code = ord(char)
        if char in escapes:
            out.append(escapes[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def go_float(number: float) -> str:
    """Return ``number`` as Go's %v prints a float64 (strconv 'g', shortest: 1e+06)."""
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # position of the decimal point in the digits
    exp = point - 1
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def go_value(value: Any) -> str:
    """Return a bad value as field.Error.ErrorBody prints it (apimachinery v0.37).

    Numbers and bools with %v, strings with %q, anything else (maps, lists, null) as
    encoding/json marshals it: ``{"name":"p99"}``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


def go_json(value: Any) -> str:
    """Return ``value`` as Go's json.Marshal encodes decoded JSON: map keys sorted, no spaces,
    ``<``, ``>`` and ``&`` escaped for HTML, floats without a needless ``.0``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escaped in _HTML_ESCAPES.items():
            text = text.replace(char, escaped)
        return text
    if isinstance(value, dict):
        entries = (f"{go_json(str(key))}:{go_json(value[key])}" for key in sorted(value))
        return "{" + ",".join(entries) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    return go_json(str(value))


_HTML_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _json_float(number: float) -> str:
    """encoding/json's float64: 'f' format between 1e-6 and 1e21, 'e' format (e-07 → e-7)
    outside it."""
    if number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    magnitude = abs(number)
    if 1e-6 <= magnitude < 1e21:
        return format(Decimal(repr(number)), "f")
    text = go_float(number)
    mantissa, _, exponent = text.partition("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
    return f"{mantissa}e{sign}{digits}"
