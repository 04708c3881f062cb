"""Parse a request path into what it addresses, the way kube-apiserver's RequestInfo does.

server.py calls ``parse`` for every request; the result drives authorization and dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from devcluster.resources import Registry, ResourceType
from devcluster.status import ApiError

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class Route:
    """What a request addresses. ``rtype`` None means a non-resource path (discovery...)."""

    path: str
    verb: str
    rtype: ResourceType | None = None
    group: str = ""
    version: str = ""
    namespace: str | None = None
    name: str = ""
    subresource: str = ""
    # For discovery: "api", "apis", "group", "resources" (rtype None)
    discovery: str = ""


def not_found() -> ApiError:
    """Return the 404 kube-apiserver sends for a path it does not serve."""
    return ApiError(404, "the server could not find the requested resource")


def _is_true(value: str | None) -> bool:
    return value in ("true", "1", "True")


def parse(method: str, path: str, query: Mapping[str, str], registry: Registry) -> Route:
    """Return the Route for a request, raising 404/405 ApiErrors for unknown targets."""
    parts = [part for part in path.split("/") if part]
    nonresource_verb = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return Route(path=path, verb=nonresource_verb)
    if parts[0] == "api":
        group, rest = "", parts[1:]
        if not rest:
            return Route(path=path, verb=nonresource_verb, discovery="api")
    else:
        if len(parts) == 1:
            return Route(path=path, verb=nonresource_verb, discovery="apis")
        group, rest = parts[1], parts[2:]
        if not rest:
            return Route(path=path, verb=nonresource_verb, group=group, discovery="group")
    version, rest = rest[0], rest[1:]
    if not rest:
        return Route(
            path=path, verb=nonresource_verb, group=group, version=version, discovery="resources"
        )
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace: str | None = None
    if (
        rest
        and rest[0] == "namespaces"
        and len(rest) >= 3
        and (rest[2] not in _NAMESPACE_SUBRESOURCES or len(rest) > 3)
    ):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise not_found()
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    rtype = registry.lookup(group, version, plural)
    if rtype is None:
        raise not_found()
    if namespace is not None and not rtype.namespaced:
        raise not_found()
    if rtype.namespaced and namespace is None and (name or method != "GET"):
        # Namespaced objects are only listed and watched across namespaces.
        raise not_found()
    if subresource and subresource not in rtype.subresources:
        raise not_found()
    verb = _verb(method, name, watch or _is_true(query.get("watch")))
    if verb is None or (verb not in rtype.verbs and not subresource):
        raise ApiError(405, f"{method} is not supported for {plural}", reason="MethodNotAllowed")
    if rtype.plural == "namespaces" and name:
        namespace = name
    return Route(
        path=path,
        verb=verb,
        rtype=rtype,
        group=group,
        version=version,
        namespace=namespace,
        name=name,
        subresource=subresource,
    )


def _verb(method: str, name: str, watch: bool) -> str | None:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if name else "list"
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return _METHOD_VERBS.get(method)
