"""Structural-schema validation, defaulting and pruning, as the apiextensions-apiserver does them.

admission.py calls ``prune``, ``apply_defaults`` and ``validate`` for every write of a kind
that has a schema (CRD versions, and the generated schemas of built-in kinds);
crd_validation.py checks CustomResourceDefinition objects themselves with ``field_error`` and
``validate_value``. Everything here is a pure function over plain JSON values (dicts, lists,
str, int, float, bool, None); gofmt.py prints bad values the way Go does.

Messages copy the real server byte for byte where we know them: kube-openapi's
``validate`` package words the detail ("spec.failureLimit in body should be greater than or
equal to 1"), apimachinery's ``field.Error`` adds the prefix ("Invalid value: 0: ") and
``listtype`` reports duplicate list-map keys.

Validation is here; defaulting is in schema_defaults.py and pruning in schema_prune.py, both
importable from here as well.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from devcluster import cel
from devcluster.gofmt import go_quote, go_value, type_name

# apply_defaults and prune are re-exported: admission.py and the tests reach all three walks here.
from devcluster.schema_defaults import apply_defaults as apply_defaults
from devcluster.schema_keys import ROOT_SKIPPED, child_path
from devcluster.schema_prune import prune as prune

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
TYPE_INVALID = "FieldValueTypeInvalid"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
FORBIDDEN = "FieldValueForbidden"

_INT_OR_STRING = "x-kubernetes-int-or-string"
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
_FORMATS = {"date-time": _DATE_TIME, "date": _DATE, "uuid": _UUID, "byte": _BASE64}


@dataclass(frozen=True)
class Cause:
    """One entry of a 422 Status's ``details.causes``."""

    reason: str  # Kubernetes CauseType, e.g. "FieldValueInvalid"
    field: str  # field path as the API server prints it: "spec.metrics[0].name"
    message: str  # field.Error.ErrorBody(): "Invalid value: 0: spec.failureLimit in body ..."

    def __str__(self) -> str:
        """Return the line the API server joins into a Status message ("field: message")."""
        return f"{self.field}: {self.message}"


def field_error(reason: str, field: str, value: Any = None, detail: str = "") -> Cause:
    """Return a Cause worded like apimachinery's field.Error.ErrorBody()."""
    prefix = {
        REQUIRED: "Required value",
        INVALID: "Invalid value",
        TYPE_INVALID: "Invalid value",
        NOT_SUPPORTED: "Unsupported value",
        DUPLICATE: "Duplicate value",
        TOO_LONG: "Too long",
        TOO_MANY: "Too many",
        FORBIDDEN: "Forbidden",
    }[reason]
    body = prefix if reason in (REQUIRED, FORBIDDEN, TOO_LONG) else f"{prefix}: {go_value(value)}"
    if detail:
        body += f": {detail}"
    return Cause(reason, field, body)


# --- validation -------------------------------------------------------------------------------


def validate(schema: Mapping[str, Any], obj: Any) -> list[Cause]:
    """Return the schema and list-type causes for ``obj`` (apiVersion/kind/metadata skipped)."""
    root = _without_root_meta(schema)
    body = {k: v for k, v in obj.items() if k not in ROOT_SKIPPED} if isinstance(obj, dict) else obj
    causes = list(_validate_node(root, body, ""))
    causes += _list_types(root, body, "")
    if not cel.has_rules(root):
        return causes
    if any(c.reason in _CEL_BLOCKING for c in causes):
        return [*causes, _CEL_SKIPPED]
    return causes + [Cause(*found) for found in cel.validate(root, body, "")]


def with_cel_note(schema: Mapping[str, Any], causes: list[Cause]) -> list[Cause]:
    """Return ``causes`` with kube-apiserver's note that the CEL rules were not checked.

    kube-apiserver skips a CRD's CEL rules (x-kubernetes-validations) after these errors and
    says so in a cause without a field, after all the others (it appends it last).
    """
    if any(c.reason in _CEL_BLOCKING for c in causes) and cel.has_rules(schema):
        return [*causes, _CEL_SKIPPED]
    return causes


_CEL_BLOCKING = frozenset({NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID})
_CEL_SKIPPED = Cause(
    INVALID,
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)


def validate_value(schema: Mapping[str, Any], value: Any, path: str) -> list[Cause]:
    """Return the causes for ``value`` at ``path`` (used for CRD defaults)."""
    return [*_validate_node(schema, value, path), *_list_types(schema, value, path)]


def _without_root_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in ROOT_SKIPPED}
    required = [k for k in schema.get("required") or () if k not in ROOT_SKIPPED]
    return {**schema, "properties": props, "required": required}


def _types(schema: Mapping[str, Any]) -> list[str]:
    if schema.get(_INT_OR_STRING):
        return ["integer", "string"]
    declared = schema.get("type")
    if isinstance(declared, list):
        return declared
    return [declared] if declared else []


def _validate_node(schema: Mapping[str, Any], data: Any, path: str) -> Iterator[Cause]:
    # The order mirrors kube-openapi's SchemaValidator: type, string, format, number,
    # slice, enum, object; each applies by the kind of the data, not the declared type.
    where = path or "."
    types = _types(schema)
    if data is None:
        if types and "null" not in types and not schema.get("nullable"):
            yield _type_error(path, types, "null")
        if schema.get("enum"):
            yield _enum_error(path, None, schema["enum"])
        return
    kind = type_name(data)
    if types:
        yield from _check_type(schema, types, data, kind, path)
    if kind == "string":
        yield from _check_string(schema, data, path, where)
    elif kind in ("integer", "number"):
        yield from _check_number(schema, data, path, where)
    elif kind == "array":
        yield from _check_array(schema, data, path, where)
    if schema.get("enum") and not _in_enum(data, schema["enum"]):
        yield _enum_error(path, data, schema["enum"])
    if kind == "object":
        yield from _check_object(schema, data, path, where)


def _type_error(path: str, types: list[str], actual: str) -> Cause:
    detail = f"{path or '.'} in body must be of type {','.join(types)}: {go_quote(actual)}"
    return field_error(TYPE_INVALID, path, actual, detail)


def _check_type(
    schema: Mapping[str, Any], types: list[str], data: Any, kind: str, path: str
) -> Iterator[Cause]:
    allowed = set(types)
    if schema.get("format") == "quantity":
        allowed.add("number")
    if "number" in allowed:
        allowed.add("integer")
    if "integer" in allowed and kind == "number" and float(data).is_integer():
        return
    if kind not in allowed:
        yield _type_error(path, types, kind)


def _check_string(schema: Mapping[str, Any], data: str, path: str, where: str) -> Iterator[Cause]:
    # kube-openapi's stringValidator stops at the first failure: maxLength, minLength, pattern.
    length = len(data)
    if schema.get("maxLength") is not None and length > schema["maxLength"]:
        yield field_error(TOO_LONG, path, detail=_too_long(schema["maxLength"]))
    elif schema.get("minLength") is not None and length < schema["minLength"]:
        detail = f"{where} in body should be at least {schema['minLength']} chars long"
        yield field_error(INVALID, path, data, detail)
    elif schema.get("pattern"):
        pattern = schema["pattern"]
        try:
            matched = _pattern(pattern).search(data) is not None
        except re.error as exc:  # RE2 syntax Python lacks: report it as kube-openapi does
            matched, pattern = False, f"{pattern}, but pattern is invalid: {exc}"
        if not matched:
            detail = f"{where} in body should match '{pattern}'"
            yield field_error(INVALID, path, data, detail)
    checker = _FORMATS.get(schema.get("format") or "")
    if checker is not None and not checker.match(data):
        detail = f"{where} in body must be of type {schema['format']}: {go_quote(data)}"
        yield field_error(TYPE_INVALID, path, data, detail)


def _too_long(limit: int) -> str:
    return f"may not be more than {limit} {'byte' if limit == 1 else 'bytes'}"


_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(pattern: str) -> re.Pattern[str]:
    return _compiled.get(pattern) or _compiled.setdefault(pattern, re.compile(pattern))


def _check_number(schema: Mapping[str, Any], data: float, path: str, where: str) -> Iterator[Cause]:
    multiple = schema.get("multipleOf")
    if multiple and (data / multiple) != int(data / multiple):
        detail = f"{where} in body should be a multiple of {go_value(multiple)}"
        yield field_error(INVALID, path, data, detail)
    for key, exclusive_key, word in (
        ("minimum", "exclusiveMinimum", "greater"),
        ("maximum", "exclusiveMaximum", "less"),
    ):
        bound = schema.get(key)
        if bound is None:
            continue
        exclusive = bool(schema.get(exclusive_key))
        # kube-openapi compares integers against int64(bound): 1.5 becomes 1.
        shown = int(bound) if isinstance(data, int) else float(bound)
        below = data < shown or (exclusive and data == shown)
        above = data > shown or (exclusive and data == shown)
        if (word == "greater" and below) or (word == "less" and above):
            relation = f"{word} than" if exclusive else f"{word} than or equal to"
            detail = f"{where} in body should be {relation} {go_value(shown)}"
            yield field_error(INVALID, path, data, detail)


def _check_array(
    schema: Mapping[str, Any], data: list[Any], path: str, where: str
) -> Iterator[Cause]:
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(data):
            yield from _validate_node(items, item, f"{path}[{index}]")
    size = len(data)
    if schema.get("minItems") is not None and size < schema["minItems"]:
        detail = f"{where} in body should have at least {schema['minItems']} items"
        yield field_error(INVALID, path, size, detail)
    if schema.get("maxItems") is not None and size > schema["maxItems"]:
        most = schema["maxItems"]
        yield field_error(TOO_MANY, path, size, f"must have at most {most} {_items(most)}")
    if schema.get("uniqueItems") and _has_duplicates(data):
        detail = f"{where} in body shouldn't contain duplicates"
        yield field_error(INVALID, path, "", detail)


def _items(count: int) -> str:
    return "item" if count == 1 else "items"


def _has_duplicates(data: list[Any]) -> bool:
    return any(_same(data[i], data[j]) for i in range(len(data)) for j in range(i))


def _same(left: Any, right: Any) -> bool:
    return type_name(left) == type_name(right) and left == right


def _in_enum(data: Any, enum: list[Any]) -> bool:
    kind = type_name(data)
    numeric = {"integer", "number"}
    for allowed in enum:
        other = type_name(allowed)
        if (other == kind or (kind in numeric and other in numeric)) and allowed == data:
            return True
    return False


def _enum_error(path: str, data: Any, enum: list[Any]) -> Cause:
    values = ", ".join(go_quote(v if isinstance(v, str) else _json(v)) for v in enum)
    return field_error(NOT_SUPPORTED, path, data, f"supported values: {values}")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _check_object(
    schema: Mapping[str, Any], data: dict[str, Any], path: str, where: str
) -> Iterator[Cause]:
    count = len(data)
    if schema.get("minProperties") is not None and count < schema["minProperties"]:
        detail = f"{where} in body should have at least {schema['minProperties']} properties"
        yield field_error(INVALID, path, count, detail)
        return
    if schema.get("maxProperties") is not None and count > schema["maxProperties"]:
        most = schema["maxProperties"]
        yield field_error(TOO_MANY, path, count, f"must have at most {most} {_items(most)}")
        return
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        for key, value in data.items():
            if key not in properties:
                yield from _validate_node(extra, value, child_path(path, key))
    elif extra is False:
        for key in data:
            if key not in properties:
                detail = f"{where}.{key} in body is a forbidden property"
                yield field_error(INVALID, path, key, detail)
    for key, sub in properties.items():
        if key in data:
            yield from _validate_node(sub, data[key], child_path(path, key))
    for key in schema.get("required") or ():
        if key not in data:
            yield field_error(REQUIRED, child_path(path, key))


def _list_types(schema: Mapping[str, Any], data: Any, path: str) -> list[Cause]:
    """Return FieldValueDuplicate causes for x-kubernetes-list-type set/map (listtype pkg)."""
    causes: list[Cause] = []
    if isinstance(data, dict):
        extra = schema.get("additionalProperties")
        properties = schema.get("properties") or {}
        for key, value in data.items():
            if key in properties:
                causes += _list_types(properties[key], value, child_path(path, key))
            elif isinstance(extra, Mapping):
                causes += _list_types(extra, value, f"{path}[{key}]")
    elif isinstance(data, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            causes += [field_error(DUPLICATE, f"{path}[{i}]", data[i]) for i in _repeats(data)]
        elif list_type == "map":
            causes += _list_map_duplicates(schema, data, path)
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(data):
                causes += _list_types(items, item, f"{path}[{index}]")
    return causes


def _list_map_duplicates(schema: Mapping[str, Any], data: list[Any], path: str) -> list[Cause]:
    for index, item in enumerate(data):
        if item is not None and not isinstance(item, dict):
            detail = "must be an object for an array of list-type map"
            return [field_error(INVALID, f"{path}[{index}]", item, detail)]
    key_fields = list(schema.get("x-kubernetes-list-map-keys") or ())
    keys = [
        {k: item[k] for k in key_fields if k in item} if isinstance(item, dict) else {}
        for item in data
    ]
    return [field_error(DUPLICATE, f"{path}[{i}]", keys[i]) for i in _repeats(keys)]


def _repeats(values: list[Any]) -> list[int]:
    """Return the index of the second appearance of each repeated value (listtype semantics)."""
    seen: dict[str, int] = {}
    result = []
    for index, value in enumerate(values):
        marker = f"{type_name(value)}:{_json(value)}"
        seen[marker] = seen.get(marker, 0) + 1
        if seen[marker] == 2:
            result.append(index)
    return result
