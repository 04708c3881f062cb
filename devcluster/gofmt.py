"""Print decoded JSON values the way Go's fmt and strconv do, for byte-identical error texts.

schema.py (field.Error messages) and crd_validation.py call these: apimachinery's field.Error
prints bad values with %v for numbers and bools, %q for strings and %#v for maps and slices
decoded from JSON, and kube-openapi names JSON types in its messages.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

__all__ = ["go_float", "go_quote", "go_value", "type_name"]


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
    """Return a bad value as field.Error.ErrorBody prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return _go_sharp(value)


def _go_sharp(value: Any) -> str:
    """Return ``value`` as Go's %#v prints an interface{} holding decoded JSON."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, dict):
        entries = ", ".join(f"{go_quote(k)}:{_go_sharp(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + entries + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp(v) for v in value) + "}"
    return go_value(value)
