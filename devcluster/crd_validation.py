"""Check CustomResourceDefinition objects as apiextensions' ValidateCustomResourceDefinition does.

admission.py calls :func:`crd_causes` for every write of a CustomResourceDefinition; it covers a
subset of the real checks: names, scope, versions, the structural-schema rules
(:func:`structural_causes`) and printer columns, worded like the real server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from devcluster.gofmt import go_quote
from devcluster.schema import (
    FORBIDDEN,
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    Cause,
    apply_defaults,
    field_error,
    prune,
    validate_value,
)

__all__ = ["crd_causes", "structural_causes"]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
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
