"""Structural-schema validation, defaulting and pruning, as the apiextensions-apiserver does them.

admission.py calls ``prune``, ``apply_defaults`` and ``validate`` for every write of a kind
that has a schema (CRD versions, and the generated schemas of built-in kinds), and
``crd_causes`` for CustomResourceDefinition objects themselves. Everything here is a pure
function over plain JSON values (dicts, lists, str, int, float, bool, None).

Messages copy the real server byte for byte where we know them: kube-openapi's
``validate`` package words the detail ("spec.failureLimit in body should be greater than or
equal to 1"), apimachinery's ``field.Error`` adds the prefix ("Invalid value: 0: ") and
``listtype`` reports duplicate list-map keys.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
TYPE_INVALID = "FieldValueTypeInvalid"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
FORBIDDEN = "FieldValueForbidden"

_ROOT_SKIPPED = ("apiVersion", "kind", "metadata")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_EMBEDDED = "x-kubernetes-embedded-resource"
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
_FORMATS = {"date-time": _DATE_TIME, "date": _DATE, "uuid": _UUID, "byte": _BASE64}


# --- Go formatting ----------------------------------------------------------------------------
# field.Error prints bad values with Go's fmt: %v for numbers and bools, %q for strings and
# %#v for maps and slices decoded from JSON; these helpers reproduce that output.


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
    body = (
        {k: v for k, v in obj.items() if k not in _ROOT_SKIPPED} if isinstance(obj, dict) else obj
    )
    causes = list(_validate_node(root, body, ""))
    causes += _list_types(root, body, "")
    return causes


def validate_value(schema: Mapping[str, Any], value: Any, path: str) -> list[Cause]:
    """Return the causes for ``value`` at ``path`` (used for CRD defaults)."""
    return [*_validate_node(schema, value, path), *_list_types(schema, value, path)]


def _without_root_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in _ROOT_SKIPPED}
    required = [k for k in schema.get("required") or () if k not in _ROOT_SKIPPED]
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
                yield from _validate_node(extra, value, _child(path, key))
    elif extra is False:
        for key in data:
            if key not in properties:
                detail = f"{where}.{key} in body is a forbidden property"
                yield field_error(INVALID, path, key, detail)
    for key, sub in properties.items():
        if key in data:
            yield from _validate_node(sub, data[key], _child(path, key))
    for key in schema.get("required") or ():
        if key not in data:
            yield field_error(REQUIRED, _child(path, key))


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _list_types(schema: Mapping[str, Any], data: Any, path: str) -> list[Cause]:
    """Return FieldValueDuplicate causes for x-kubernetes-list-type set/map (listtype pkg)."""
    causes: list[Cause] = []
    if isinstance(data, dict):
        extra = schema.get("additionalProperties")
        properties = schema.get("properties") or {}
        for key, value in data.items():
            if key in properties:
                causes += _list_types(properties[key], value, _child(path, key))
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


# --- defaulting -------------------------------------------------------------------------------


def apply_defaults(schema: Mapping[str, Any], obj: Any) -> Any:
    """Return a copy of ``obj`` with schema defaults applied (structuraldefaulting.Default).

    Like the API server, a null in a non-nullable field is first dropped, so a default
    then fills it; nulls in nullable fields are kept and never defaulted.
    """
    result = copy.deepcopy(obj)
    _default(schema, result, root=True)
    return result


def _default(schema: Mapping[str, Any] | None, data: Any, *, root: bool = False) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        for key, prop in properties.items():
            if root and key in _ROOT_SKIPPED:
                continue
            if key in data and data[key] is None and not prop.get("nullable"):
                del data[key]
            if key not in data and "default" in prop:
                data[key] = copy.deepcopy(prop["default"])
        extra = schema.get("additionalProperties")
        for key, value in list(data.items()):
            if root and key in _ROOT_SKIPPED:
                continue
            if key in properties:
                _default(properties[key], value)
            elif isinstance(extra, Mapping):
                if value is None and not extra.get("nullable") and "default" in extra:
                    data[key] = value = copy.deepcopy(extra["default"])
                _default(extra, value)
    elif isinstance(data, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return
        for index, value in enumerate(data):
            if value is None and not items.get("nullable") and "default" in items:
                data[index] = value = copy.deepcopy(items["default"])
            _default(items, value)


# --- pruning ----------------------------------------------------------------------------------


def prune(schema: Mapping[str, Any], obj: Any) -> tuple[Any, list[str]]:
    """Return a copy of ``obj`` without fields the schema does not know, and their paths.

    Paths read like the API server's "unknown field" warnings: "spec.foo",
    "spec.metrics[0].bar". apiVersion, kind and metadata are kept at the root and in
    x-kubernetes-embedded-resource objects; x-kubernetes-preserve-unknown-fields keeps
    unknown fields of that object (its known fields are still pruned inside).
    """
    result = copy.deepcopy(obj)
    dropped: list[str] = []
    _prune(schema, result, "", dropped, keep_meta=True)
    return result, dropped


def _prune(
    schema: Mapping[str, Any] | None, data: Any, path: str, dropped: list[str], *, keep_meta: bool
) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get(_PRESERVE)) or extra is True
        for key in list(data):
            child = _child(path, key)
            if keep_meta and key in _ROOT_SKIPPED:
                if key == "metadata" and not path:
                    continue
                if key in properties:
                    _prune(properties[key], data[key], child, dropped, keep_meta=False)
                continue
            if key in properties:
                sub = properties[key]
                _prune(sub, data[key], child, dropped, keep_meta=bool(sub.get(_EMBEDDED)))
            elif isinstance(extra, Mapping):
                embedded = bool(extra.get(_EMBEDDED))
                _prune(extra, data[key], child, dropped, keep_meta=embedded)
            elif not preserve:
                del data[key]
                dropped.append(child)
    elif isinstance(data, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            embedded = bool(items.get(_EMBEDDED))
            for index, value in enumerate(data):
                _prune(items, value, f"{path}[{index}]", dropped, keep_meta=embedded)


# --- CustomResourceDefinition objects ---------------------------------------------------------
# A subset of apiextensions' ValidateCustomResourceDefinition: names, scope, versions, the
# structural-schema rules and printer columns, worded like the real server.

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_STORAGE_MESSAGE = "must have exactly one version marked as storage version"


def crd_causes(crd: Mapping[str, Any]) -> list[Cause]:
    """Return the causes a CustomResourceDefinition object is refused for (a subset)."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), Mapping) else {}
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    causes = _crd_names(crd, spec, names)
    scope = spec.get("scope")
    if not scope:
        causes.append(field_error(REQUIRED, "spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        detail = 'supported values: "Cluster", "Namespaced"'
        causes.append(field_error(NOT_SUPPORTED, "spec.scope", scope, detail))
    causes += _crd_versions(spec.get("versions"))
    return causes


def _crd_names(
    crd: Mapping[str, Any], spec: Mapping[str, Any], names: Mapping[str, Any]
) -> list[Cause]:
    causes: list[Cause] = []
    group, plural = spec.get("group") or "", names.get("plural") or ""
    name = (crd.get("metadata") or {}).get("name", "")
    if group and plural and name != f"{plural}.{group}":
        detail = 'must be spec.names.plural+"."+spec.group'
        causes.append(field_error(INVALID, "metadata.name", name, detail))
    if not group:
        causes.append(field_error(REQUIRED, "spec.group"))
    elif "." not in group:
        detail = "should be a domain with at least one dot"
        causes.append(field_error(INVALID, "spec.group", group, detail))
    for key in ("plural", "singular"):
        value = names.get(key)
        if key == "plural" and not value:
            causes.append(field_error(REQUIRED, "spec.names.plural"))
        elif value and not _DNS1123.match(value):
            causes.append(field_error(INVALID, f"spec.names.{key}", value, _DNS1123_MESSAGE))
    if not names.get("kind"):
        causes.append(field_error(REQUIRED, "spec.names.kind"))
    return causes


def _crd_versions(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [field_error(INVALID, "spec.versions", versions or [], _STORAGE_MESSAGE)]
    causes: list[Cause] = []
    if sum(1 for v in versions if isinstance(v, Mapping) and v.get("storage") is True) != 1:
        causes.append(field_error(INVALID, "spec.versions", versions, _STORAGE_MESSAGE))
    version_names = [v.get("name") for v in versions if isinstance(v, Mapping)]
    if len(set(version_names)) != len(version_names):
        detail = "must contain unique version names"
        causes.append(field_error(INVALID, "spec.versions", versions, detail))
    for index, version in enumerate(versions):
        base = f"spec.versions[{index}]"
        if not isinstance(version, Mapping):
            continue
        name = version.get("name")
        if not name:
            causes.append(field_error(REQUIRED, f"{base}.name"))
        elif not _DNS1035.match(name):
            causes.append(field_error(INVALID, f"{base}.name", name, _DNS1035_MESSAGE))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, Mapping):
            detail = "schemas are required"
            causes.append(field_error(REQUIRED, f"{base}.schema.openAPIV3Schema", detail=detail))
        else:
            causes += structural_causes(schema, f"{base}.schema.openAPIV3Schema")
        for col_index, column in enumerate(version.get("additionalPrinterColumns") or ()):
            causes += _printer_column(column, f"{base}.additionalPrinterColumns[{col_index}]")
    return causes


def _printer_column(column: Mapping[str, Any], path: str) -> list[Cause]:
    causes = [
        field_error(REQUIRED, f"{path}.{key}")
        for key in ("name", "type", "jsonPath")
        if not column.get(key)
    ]
    column_type, column_format = column.get("type"), column.get("format")
    if column_type and column_type not in _COLUMN_TYPES:
        detail = "supported values: " + ", ".join(go_quote(t) for t in _COLUMN_TYPES)
        causes.append(field_error(NOT_SUPPORTED, f"{path}.type", column_type, detail))
    if column_format and column_format not in _COLUMN_FORMATS:
        detail = "supported values: " + ", ".join(go_quote(f) for f in _COLUMN_FORMATS)
        causes.append(field_error(NOT_SUPPORTED, f"{path}.format", column_format, detail))
    return causes


def structural_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """Return why ``schema`` (an openAPIV3Schema at ``path``) is not a structural schema."""
    causes: list[Cause] = []
    root_type = schema.get("type")
    if not root_type and not schema.get(_PRESERVE):
        detail = "must not be empty at the root"
        causes.append(field_error(REQUIRED, f"{path}.type", detail=detail))
    elif root_type and root_type != "object":
        causes.append(field_error(INVALID, f"{path}.type", root_type, "must be object at the root"))
    causes += _structural_node(schema, path, "", under_preserve=False)
    return causes


def _structural_node(
    schema: Mapping[str, Any], path: str, role: str, *, under_preserve: bool
) -> list[Cause]:
    causes: list[Cause] = []
    node_type = schema.get("type")
    untyped_ok = under_preserve or schema.get(_PRESERVE) or schema.get(_INT_OR_STRING)
    if role and not node_type and not untyped_ok:
        detail = f"must not be empty for specified {role}"
        causes.append(field_error(REQUIRED, f"{path}.type", detail=detail))
    if node_type and node_type not in _TYPES:
        detail = "supported values: " + ", ".join(go_quote(t) for t in _TYPES)
        causes.append(field_error(NOT_SUPPORTED, f"{path}.type", node_type, detail))
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if properties and extra not in (None, False):
        detail = "additionalProperties and properties are mutual exclusive"
        causes.append(field_error(FORBIDDEN, f"{path}.additionalProperties", detail=detail))
    if node_type == "array" and not isinstance(schema.get("items"), Mapping):
        causes.append(field_error(REQUIRED, f"{path}.items", detail="must be specified"))
    if schema.get("pattern"):
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            detail = f"must be a valid regular expression, but isn't: {exc}"
            causes.append(field_error(INVALID, f"{path}.pattern", schema["pattern"], detail))
    causes += _list_map_rules(schema, path)
    if "default" in schema:
        causes += _default_causes(schema, path)
    preserve = under_preserve or bool(schema.get(_PRESERVE))
    for key, sub in properties.items():
        if isinstance(sub, Mapping):
            sub_path = f"{path}.properties[{key}]"
            causes += _structural_node(sub, sub_path, "object fields", under_preserve=preserve)
    if isinstance(extra, Mapping):
        sub_path = f"{path}.additionalProperties"
        causes += _structural_node(extra, sub_path, "object fields", under_preserve=preserve)
    if isinstance(schema.get("items"), Mapping):
        sub_path = f"{path}.items"
        causes += _structural_node(
            schema["items"], sub_path, "array items", under_preserve=preserve
        )
    return causes


def _list_map_rules(schema: Mapping[str, Any], path: str) -> list[Cause]:
    list_type = schema.get("x-kubernetes-list-type")
    keys = list(schema.get("x-kubernetes-list-map-keys") or ())
    if list_type == "map" and not keys:
        detail = "must not be empty if x-kubernetes-list-type is map"
        return [field_error(REQUIRED, f"{path}.x-kubernetes-list-map-keys", detail=detail)]
    if keys and list_type != "map":
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        return [field_error(INVALID, f"{path}.x-kubernetes-list-type", list_type or "", detail)]
    if list_type not in (None, "atomic", "set", "map"):
        detail = 'supported values: "atomic", "set", "map"'
        return [field_error(NOT_SUPPORTED, f"{path}.x-kubernetes-list-type", list_type, detail)]
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    item_props = items.get("properties") or {}
    causes = []
    for index, key in enumerate(keys):
        if key not in item_props:
            detail = "entries must all be names of item properties"
            causes.append(
                field_error(INVALID, f"{path}.x-kubernetes-list-map-keys[{index}]", key, detail)
            )
        elif key not in (items.get("required") or ()) and "default" not in item_props[key]:
            detail = "all map keys must be required or have a default value"
            causes.append(field_error(REQUIRED, f"{path}.items.required", detail=detail))
    return causes


def _default_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    where = f"{path}.default"
    node = {k: v for k, v in schema.items() if k != "default"}
    pruned, _ = prune(node, schema["default"])
    found = validate_value(node, apply_defaults(node, pruned), where)
    return [Cause(c.reason, c.field or where, c.message) for c in found]
