"""Evaluate the Kubernetes JSONPath subset on JSON-like objects, and format printer cells.

The devcluster Table renderer calls :func:`cell` for each CRD ``additionalPrinterColumns``
entry, and anything needing ``kubectl get -o jsonpath`` style lookups calls :func:`evaluate`.
Supported: ``.a.b``, ``['a.b']``, ``[0]``, ``[-1]``, ``[1:3]``, ``[*]``, ``.*``, unions
``[0,1]``, recursive descent ``..name`` and filters ``[?(@.type=="Ready")]`` with ``==``, ``!=``,
``<``, ``>``, ``<=``, ``>=`` or bare existence ``[?(@.x)]``. Missing keys match nothing, as
with the ``AllowMissingKeys(true)`` the API server's table convertor sets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from devcluster.durations import human_duration

__all__ = ["JSONPathError", "cell", "evaluate"]


class JSONPathError(ValueError):
    """An expression the Kubernetes JSONPath parser rejects."""


_Step = Callable[[list[Any]], list[Any]]
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_FILTER = re.compile(r"^\s*(@[^=!<>]*?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


def evaluate(expression: str, obj: Any) -> list[Any]:
    """Return every value ``expression`` selects in ``obj`` (an empty list when none)."""
    nodes = [obj]
    for step in _compile(_strip_braces(expression)):
        nodes = step(nodes)
    return nodes


def _strip_braces(expression: str) -> str:
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    return text


def _compile(path: str) -> list[_Step]:
    steps: list[_Step] = []
    at = 0
    while at < len(path):
        char = path[at]
        if path.startswith("..", at):
            steps.append(_descendants)
            at += 2
            if at < len(path) and path[at] not in ".[":
                at = _field(path, at, steps)
        elif char == ".":
            at += 1
            if at < len(path) and path[at] not in ".[":
                at = _field(path, at, steps)
        elif char == "[":
            end = _closing_bracket(path, at)
            steps.append(_bracket(path[at + 1 : end].strip()))
            at = end + 1
        elif char == "@":
            at += 1  # "@" is the current node inside filters
        else:
            at = _field(path, at, steps)
    return steps


def _field(path: str, at: int, steps: list[_Step]) -> int:
    end = at
    while end < len(path) and path[end] not in ".[":
        end += 2 if path[end] == "\\" else 1  # "\." keeps a dot inside a key
    name = path[at:end].replace("\\.", ".")
    steps.append(_children if name == "*" else _key(name))
    return end


def _closing_bracket(path: str, start: int) -> int:
    depth, quote = 0, ""
    for at in range(start, len(path)):
        char = path[at]
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return at
    raise JSONPathError(f"unclosed array expect ]: {path[start:]}")


def _key(name: str) -> _Step:
    def step(nodes: list[Any]) -> list[Any]:
        return [node[name] for node in nodes if isinstance(node, dict) and name in node]

    return step


def _children(nodes: list[Any]) -> list[Any]:
    # Go's jsonpath walks map keys in sorted order.
    out: list[Any] = []
    for node in nodes:
        if isinstance(node, dict):
            out.extend(node[key] for key in sorted(node))
        elif isinstance(node, list):
            out.extend(node)
    return out


def _descendants(nodes: list[Any]) -> list[Any]:
    out: list[Any] = []

    def walk(node: Any) -> None:
        out.append(node)
        for child in _children([node]):
            walk(child)

    for node in nodes:
        walk(node)
    return out


def _bracket(content: str) -> _Step:
    if content.startswith("?"):
        return _filter(content[1:].strip())
    if content == "*":
        return _children
    parts = _split_union(content)
    if all(p[:1] in "'\"" and p[-1:] == p[:1] and len(p) >= 2 for p in parts):
        names = [p[1:-1].replace("\\.", ".") for p in parts]
        return lambda nodes: [n[k] for n in nodes if isinstance(n, dict) for k in names if k in n]
    if len(parts) == 1 and ":" in parts[0]:
        return _slice(parts[0])
    try:
        indices = [int(p) for p in parts]
    except ValueError:
        raise JSONPathError(f"invalid array index {content}") from None

    def step(nodes: list[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list):
                out.extend(node[i] for i in indices if -len(node) <= i < len(node))
        return out

    return step


def _split_union(content: str) -> list[str]:
    parts, current, quote = [], "", ""
    for char in content:
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current += char
        elif char == ",":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def _slice(content: str) -> _Step:
    try:
        bounds = [int(b) if b.strip() else None for b in content.split(":")]
    except ValueError:
        raise JSONPathError(f"invalid array index {content}") from None
    if len(bounds) > 3:
        raise JSONPathError(f"invalid array index {content}")
    start, stop, stride = ([*bounds, None, None])[:3]

    def step(nodes: list[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list):
                out.extend(node[slice(start, stop, stride)])
        return out

    return step


def _filter(content: str) -> _Step:
    if not (content.startswith("(") and content.endswith(")")):
        raise JSONPathError(f"unclosed filter expression: {content}")
    inner = content[1:-1].strip()
    match = _FILTER.match(inner)
    if match is None and any(op in inner for op in ("=", "<", ">")):
        raise JSONPathError(f"unrecognized filter expression: {inner}")
    if match is None:
        left_steps = _compile(inner)

        def exists(element: Any) -> bool:
            found = [element]
            for step in left_steps:
                found = step(found)
            return bool(found)

        return _filter_step(exists)
    left, operator, right = match.groups()
    left_steps = _compile(left)
    literal = _literal(right)

    def compare(element: Any) -> bool:
        found = [element]
        for step in left_steps:
            found = step(found)
        return any(_compare(value, operator, literal) for value in found)

    return _filter_step(compare)


def _filter_step(keep: Callable[[Any], bool]) -> _Step:
    def step(nodes: list[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list):
                out.extend(element for element in node if keep(element))
        return out

    return step


def _literal(text: str) -> Any:
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if _NUMBER.match(text):
        return float(text) if any(c in text for c in ".eE") else int(text)
    raise JSONPathError(f"unrecognized filter value {text}")


def _compare(value: Any, operator: str, literal: Any) -> bool:
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, literal))
    if operator == "==":
        return value == literal if numeric else type(value) is type(literal) and value == literal
    if operator == "!=":
        return not _compare(value, "==", literal)
    if not numeric and not (isinstance(value, str) and isinstance(literal, str)):
        return False
    if operator == "<":
        return value < literal
    if operator == ">":
        return value > literal
    if operator == "<=":
        return value <= literal
    return value >= literal


def _text(value: Any) -> str:
    """Print a value as the jsonpath printer does: JSON for maps and lists, Go %v otherwise."""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def cell(expression: str, obj: Any, column_type: str, *, now: datetime | None = None) -> Any:
    """Return a printer-column cell for ``obj`` as the API server's table convertor does.

    The first match is used; a missing value is None. ``integer`` columns hold ints,
    ``number`` floats, ``boolean`` bools and ``string`` the printed value. A ``date`` column
    keeps the RFC 3339 string unless ``now`` is given, in which case it becomes the age the
    real server sends ("5m", "3d4h").
    """
    matches = evaluate(expression, obj)
    if not matches or matches[0] is None:
        return None
    value = matches[0]
    if column_type == "string":
        return _text(value)
    if column_type == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return int(value)
    if column_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        if now is None:
            return value
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "<invalid>"
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        # HumanDuration truncates to whole seconds before it tells a clock skew from "0s".
        return human_duration(int((now - stamp).total_seconds()))
    return None
