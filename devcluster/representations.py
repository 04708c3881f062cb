"""Answer in the representation a client's Accept header asks for: a Table or object metadata.

Clients ask for ``as=Table`` (kubectl's printed columns) and ``as=PartialObjectMetadata``
(metadata-only clients); ``devcluster.server`` passes every get, list and watch event through here
before it writes the JSON. Any other Accept gets the objects unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from devcluster import tables
from devcluster.resources import ResourceType
from devcluster.routing import Route

# Watch events that carry an object; BOOKMARK and ERROR are sent as they are.
_OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")


def wants_table(accept: str) -> bool:
    """Return whether the Accept header asks for a Table."""
    return "as=Table" in accept


def wants_metadata(accept: str) -> bool:
    """Return whether the Accept header asks for PartialObjectMetadata."""
    return "as=PartialObjectMetadata" in accept


def partial(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``obj`` as a PartialObjectMetadata: its metadata only."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def response_body(
    route: Route, body: Mapping[str, Any], query: Mapping[str, str], accept: str
) -> Mapping[str, Any]:
    """Return the body of a get or list answer in the representation ``accept`` asks for."""
    rtype = route.rtype
    assert rtype is not None
    if wants_metadata(accept) and route.verb in ("get", "list") and not route.subresource:
        if route.verb == "list":
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": body["metadata"],
                "items": [partial(item) for item in body["items"]],
            }
        else:
            body = partial(body)
    elif wants_table(accept) and route.verb in ("get", "list") and not route.subresource:
        include = query.get("includeObject") or "Metadata"
        now = datetime.now(UTC)
        if route.verb == "list":
            body = tables.table(
                rtype,
                body["items"],
                list_metadata=body["metadata"],
                include_object=include,
                now=now,
            )
        else:
            meta = {"resourceVersion": body.get("metadata", {}).get("resourceVersion", "")}
            body = tables.table(rtype, [body], list_metadata=meta, include_object=include, now=now)
    return body


def watch_event(
    rtype: ResourceType,
    event: Mapping[str, Any],
    query: Mapping[str, str],
    *,
    as_table: bool,
    as_metadata: bool,
) -> Mapping[str, Any]:
    """Return a watch event with its object in the representation the watch asked for."""
    if as_metadata and event["type"] in _OBJECT_EVENTS:
        event = {**event, "object": partial(event["object"])}
    elif as_table and event["type"] in _OBJECT_EVENTS:
        include = query.get("includeObject") or "Metadata"
        obj = event["object"]
        meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
        event = {
            **event,
            "object": tables.table(
                rtype,
                [obj],
                list_metadata=meta,
                include_object=include,
                now=datetime.now(UTC),
            ),
        }
    return event
