"""Apply a structural schema's defaults to an object, as the apiextensions-apiserver does.

``schema.apply_defaults`` (re-exported there) is what admission.py calls on every write of a kind
with a schema. Pure: plain JSON values in, a defaulted copy out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from devcluster.schema_keys import ROOT_SKIPPED


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
            if root and key in ROOT_SKIPPED:
                continue
            if key in data and data[key] is None and not prop.get("nullable"):
                del data[key]
            if key not in data and "default" in prop:
                data[key] = copy.deepcopy(prop["default"])
        extra = schema.get("additionalProperties")
        for key, value in list(data.items()):
            if root and key in ROOT_SKIPPED:
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
