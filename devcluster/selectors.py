"""Parse label and field selectors the way the Kubernetes API server does.

The devcluster list and watch handlers call :func:`label_selector` and :func:`field_selector`
with the ``labelSelector`` / ``fieldSelector`` query parameters and filter objects with the
predicates they return. Malformed expressions raise :class:`SelectorError` carrying the message
of k8s.io/apimachinery ``labels.Parse`` / ``fields.ParseSelector`` (the handler answers 400).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Requirement", "SelectorError", "field_selector", "label_selector", "parse_labels"]


class SelectorError(ValueError):
    """A selector the API server would reject with 400 BadRequest; str() is its message."""


# --------------------------------------------------------------------------------------------
# Label selectors (labels.Parse)
# --------------------------------------------------------------------------------------------

_SPECIAL = "=!(),><"
_OPERATOR_TOKENS = ("==", "!=", "=", "!", "(", ")", ",", ">", "<")
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_END = ""  # the lexer's literal for end of string

_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # what strconv.ParseInt accepts
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@dataclass(frozen=True)
class Requirement:
    """One parsed requirement: ``key``, operator name as in k8s ``selection``, and values."""

    key: str
    operator: str  # "=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Return whether a label set satisfies this requirement."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator in ("=", "==", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if value is None or not _INTEGER.match(value):
            return False
        actual, wanted = int(value), int(self.values[0])
        return actual > wanted if self.operator == "gt" else actual < wanted


def _tokens(expression: str) -> list[tuple[str, str]]:
    """Split into (kind, literal) pairs; kind is "id", "in", "notin" or the operator itself."""
    tokens: list[tuple[str, str]] = []
    at = 0
    while at < len(expression):
        char = expression[at]
        if char.isspace():
            at += 1
            continue
        if char in _SPECIAL:
            symbol = next(op for op in _OPERATOR_TOKENS if expression.startswith(op, at))
            tokens.append((symbol, symbol))
            at += len(symbol)
            continue
        start = at
        while at < len(expression) and not (expression[at].isspace() or expression[at] in _SPECIAL):
            at += 1
        word = expression[start:at]
        tokens.append((word if word in ("in", "notin") else "id", word))
    tokens.append(("end", _END))
    return tokens


class _LabelParser:
    def __init__(self, expression: str) -> None:
        self._tokens = _tokens(expression)
        self._at = 0

    def _peek(self, values: bool = True) -> tuple[str, str]:
        kind, literal = self._tokens[self._at]
        # In a value position the keywords are plain identifiers.
        return ("id" if values and kind in ("in", "notin") else kind), literal

    def _next(self, values: bool = True) -> tuple[str, str]:
        token = self._peek(values)
        self._at += 1
        return token

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self._peek()
            if kind == "end":
                return requirements
            if kind not in ("id", "!"):
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self._requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            kind, literal = self._next()
            if kind == "end":
                return requirements
            if kind != ",":
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self._peek()
            if kind not in ("id", "!"):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        kind, key = self._next()
        negated = kind == "!"
        if negated:
            kind, key = self._next()
        if kind != "id":
            raise SelectorError(f"found '{key}', expected: identifier")
        _validate_key(key)
        if negated:
            # "!a" takes no value; whatever follows is the caller's problem ("!a=b" fails there).
            return Requirement(key, "!")
        if self._peek()[0] in ("end", ","):
            return Requirement(key, "exists")
        kind, literal = self._next(values=False)
        operators = {"in": "in", "notin": "notin", "=": "=", "==": "==", "!=": "!="}
        operators |= {">": "gt", "<": "lt"}
        if kind not in operators:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        operator = operators[kind]
        values = self._set_values() if operator in ("in", "notin") else self._exact_value()
        for index, value in enumerate(values):
            _validate_value(value, index)
        if operator in ("gt", "lt") and not _INTEGER.match(values[0]):
            raise SelectorError(
                f"values[0]: Invalid value: \"{values[0]}\": for 'Gt', 'Lt' operators, "
                "the value must be an integer"
            )
        return Requirement(key, operator, values)

    def _exact_value(self) -> tuple[str, ...]:
        if self._peek()[0] in ("end", ","):
            return ("",)
        kind, literal = self._next()
        if kind != "id":
            raise SelectorError(f"found '{literal}', expected: identifier")
        return (literal,)

    def _set_values(self) -> tuple[str, ...]:
        kind, literal = self._next()
        if kind != "(":
            raise SelectorError(f"found '{literal}' expected: '('")
        kind, literal = self._peek()
        if kind == ")":
            self._next()
            return ("",)
        if kind not in ("id", ","):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values: list[str] = []
        expect_value = True
        while True:
            kind, literal = self._peek()
            if kind == "id" and expect_value:
                values.append(literal)
                self._next()
                expect_value = False
            elif kind == ",":
                if expect_value:
                    values.append("")  # "(a,,b)" and "(,a)" carry an empty value
                self._next()
                expect_value = True
            elif kind == ")":
                if expect_value:
                    values.append("")
                self._next()
                return tuple(sorted(set(values)))
            else:
                raise SelectorError(f"found '{literal}', expected: ',' or ')'")


def _validate_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    problems: list[str] = []
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        problems.append(
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 bytes")
    elif not _NAME.match(name):
        problems.append(_NAME_MESSAGE)
    if problems:
        raise SelectorError(f'key: Invalid value: "{key}": ' + ", ".join(problems))


def _validate_value(value: str, index: int) -> None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        detail = "must be no more than 63 bytes" if len(value) > 63 else _VALUE_MESSAGE
        raise SelectorError(f'values[{index}]: Invalid value: "{value}": {detail}')


def parse_labels(expression: str) -> list[Requirement]:
    """Parse a label selector into its requirements (an empty selector has none)."""
    return _LabelParser(expression).parse()


def label_selector(expression: str) -> Callable[[Mapping[str, str]], bool]:
    """Return a predicate over a label map for a ``labelSelector`` expression."""
    requirements = parse_labels(expression)

    def matches(labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels or {}) for requirement in requirements)

    return matches


# --------------------------------------------------------------------------------------------
# Field selectors (fields.ParseSelector)
# --------------------------------------------------------------------------------------------


def _split_terms(expression: str) -> list[str]:
    """Split on unescaped commas, keeping escapes for the value unescaper."""
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for char in expression:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """Find the first operator outside an escape: "!=", "==" or "="."""
    escaped = False
    for at, char in enumerate(term):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        for operator in ("!=", "==", "="):
            if term.startswith(operator, at):
                return term[:at], operator, term[at + len(operator) :]
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    escaped = False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {char}")
        else:
            out.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def not_supported(name: str) -> str:
    """The refusal of a kind with its own field label conversion (Event, Secret, ...)."""
    return f"field label not supported: {name}"


def not_known(name: str) -> str:
    """The refusal of apimachinery's DefaultMetaV1FieldSelectorConversion (every other kind)."""
    return f'"{name}" is not a known field selector: only "metadata.name", "metadata.namespace"'


def field_selector(
    expression: str,
    fields: Callable[[Mapping[str, Any]], Mapping[str, str]],
    *,
    supported: Iterable[str] | None = None,
    refusal: Callable[[str], str] = not_supported,
) -> Callable[[Mapping[str, Any]], bool]:
    """Return a predicate over objects for a ``fieldSelector`` expression.

    ``fields`` maps an object to its selectable fields (``metadata.name``, ...), like the server's
    per-resource field label functions. Fields outside ``supported`` (by default the keys
    ``fields`` returns for an empty object) raise a SelectorError worded by ``refusal``.
    """
    known = set(supported) if supported is not None else set(fields({}))
    terms: list[tuple[str, str, str]] = []
    for term in sorted(_split_terms(expression)):
        if term == "":
            continue
        split = _split_term(term)
        if split is None:
            raise SelectorError(f"invalid selector: '{expression}'; can't understand '{term}'")
        name, operator, raw = split
        value = _unescape(raw)
        if name not in known:
            raise SelectorError(refusal(name))
        terms.append((name, operator, value))

    def matches(obj: Mapping[str, Any]) -> bool:
        values = fields(obj)
        for name, operator, wanted in terms:
            actual = values.get(name, "")
            if (actual == wanted) != (operator != "!="):
                return False
        return True

    return matches
