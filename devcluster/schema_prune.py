"""Prune the fields a structural schema does not know, as the apiextensions-apiserver does.

``schema.prune`` (re-exported there) is what admission.py calls on every write of a kind with a
schema; the dropped paths become kubectl's "unknown field" warnings. Pure: plain JSON values in,
a pruned copy and the dropped paths out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from devcluster.schema_keys import EMBEDDED_RESOURCE, PRESERVE_UNKNOWN, ROOT_SKIPPED, child_path


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
        preserve = bool(schema.get(PRESERVE_UNKNOWN)) or extra is True
        for key in list(data):
            child = child_path(path, key)
            if keep_meta and key in ROOT_SKIPPED:
                if key == "metadata" and not path:
                    continue
                if key in properties:
                    _prune(properties[key], data[key], child, dropped, keep_meta=False)
                continue
            if key in properties:
                sub = properties[key]
                _prune(sub, data[key], child, dropped, keep_meta=bool(sub.get(EMBEDDED_RESOURCE)))
            elif isinstance(extra, Mapping):
                embedded = bool(extra.get(EMBEDDED_RESOURCE))
                _prune(extra, data[key], child, dropped, keep_meta=embedded)
            elif not preserve:
                del data[key]
                dropped.append(child)
    elif isinstance(data, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            embedded = bool(items.get(EMBEDDED_RESOURCE))
            for index, value in enumerate(data):
                _prune(items, value, f"{path}[{index}]", dropped, keep_meta=embedded)
