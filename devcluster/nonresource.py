"""Bodies of non-resource paths: discovery, /version, OpenAPI documents.

server.py calls ``body_for`` for every request that does not address a resource;
health endpoints (/healthz, /readyz, /livez) are answered there as plain text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devcluster import discovery
from devcluster.resources import Registry
from devcluster.routing import Route

HEALTH_PATHS = ("/healthz", "/readyz", "/livez")


def is_health(path: str) -> bool:
    """Return whether ``path`` is a health check (answered "ok")."""
    return path.rstrip("/") in HEALTH_PATHS or path.startswith(tuple(f"{p}/" for p in HEALTH_PATHS))


def body_for(route: Route, registry: Registry, address: str) -> Mapping[str, Any] | None:
    """Return the JSON body for a non-resource path, or None when nothing is served there."""
    if route.discovery == "api":
        return discovery.api_versions(address)
    if route.discovery == "apis":
        return discovery.api_group_list(registry)
    if route.discovery == "group":
        return discovery.api_group(registry, route.group)
    if route.discovery == "resources":
        return discovery.resource_list(registry, route.group, route.version)
    if route.path.rstrip("/") == "/version":
        return discovery.VERSION
    if route.path.startswith("/openapi/"):
        return _openapi(route.path.rstrip("/"), registry)
    return None


def _openapi(path: str, registry: Registry) -> Mapping[str, Any] | None:
    try:
        from devcluster import openapi
    except ImportError:  # the schema helper's module is optional at runtime
        return None
    types = registry.types
    if path == "/openapi/v3":
        return openapi.openapi_v3_index(types)
    if path == "/openapi/v2":
        v2 = getattr(openapi, "openapi_v2_document", None)
        return v2(types) if v2 is not None else None
    parts = path.split("/")[3:]
    if parts == ["api", "v1"]:
        group, version = "", "v1"
    elif parts[:1] == ["apis"] and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    selected = [t for t in types if t.group == group and t.version == version]
    if not selected:
        return None
    return openapi.openapi_v3_document(group, version, selected)
