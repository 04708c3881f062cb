"""List responses: label/field selectors, ``limit`` and ``continue`` tokens.

Called by handlers.py for lists and by watch.py to filter events.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from devcluster import selectors
from devcluster.resources import ResourceType
from devcluster.status import ApiError, bad_request

_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)


def _dig(obj: Mapping[str, Any], dotted: str) -> str:
    value: Any = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def object_fields(rtype: ResourceType) -> Callable[[Mapping[str, Any]], Mapping[str, str]]:
    """Return the field-selector fields function for objects of ``rtype``."""

    def fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
        metadata = obj.get("metadata") or {}
        result = {
            "metadata.name": metadata.get("name", ""),
            "metadata.namespace": metadata.get("namespace", ""),
        }
        if rtype.kind == "Event":
            core = obj if obj.get("apiVersion", "v1") == "v1" else None
            for name in _EVENT_FIELDS:
                if core is not None:
                    result[name] = _dig(core, name)
            if core is not None:
                result["source"] = _dig(core, "source.component")
            else:
                for suffix in ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath"):
                    result[f"regarding.{suffix}"] = _dig(obj, f"regarding.{suffix}")
                result["reason"] = _dig(obj, "reason")
                result["type"] = _dig(obj, "type")
                result["reportingController"] = _dig(obj, "reportingController")
        elif rtype.kind == "Secret":
            result["type"] = str(obj.get("type", ""))
        elif rtype.kind == "Namespace":
            result["status.phase"] = _dig(obj, "status.phase")
        return result

    return fields


def object_filter(
    rtype: ResourceType, query: Mapping[str, str]
) -> Callable[[Mapping[str, Any]], bool]:
    """Return a predicate for the labelSelector and fieldSelector in ``query``."""
    try:
        by_labels = (
            selectors.label_selector(query["labelSelector"]) if query.get("labelSelector") else None
        )
        # Kinds with a field label conversion of their own word an unknown field one way,
        # the rest (ConfigMap, Deployment, Lease, RBAC, ...) apimachinery's default way.
        own = rtype.custom or rtype.kind in ("Event", "Namespace", "Secret")
        by_fields = (
            selectors.field_selector(
                query["fieldSelector"],
                object_fields(rtype),
                refusal=selectors.not_supported if own else selectors.not_known,
            )
            if query.get("fieldSelector")
            else None
        )
    except selectors.SelectorError as exc:
        raise bad_request(str(exc)) from exc

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if by_labels is not None and not by_labels(labels):
            return False
        return by_fields is None or by_fields(obj)

    return matches


def _encode_continue(rv: int, after: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": after}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc


def _key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def list_body(
    rtype: ResourceType, items: list[dict[str, Any]], rv: int, query: Mapping[str, str]
) -> dict[str, Any]:
    """Return the List object for ``items`` (already sorted by namespace/name)."""
    matches = object_filter(rtype, query)
    items = [item for item in items if matches(item)]
    list_rv = rv
    if query.get("continue"):
        list_rv, after = _decode_continue(query["continue"])
        items = [item for item in items if _key(item) > after]
    metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
    limit_text = query.get("limit") or ""
    if limit_text:
        try:
            limit = int(limit_text)
        except ValueError as exc:
            raise ApiError(400, f"invalid limit {limit_text!r}") from exc
        if 0 < limit < len(items):
            metadata["continue"] = _encode_continue(list_rv, _key(items[limit - 1]))
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
    return {
        "kind": f"{rtype.kind}List",
        "apiVersion": rtype.group_version,
        "metadata": metadata,
        "items": items,
    }
