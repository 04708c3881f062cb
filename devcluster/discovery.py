"""Discovery documents: /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version}, /version.

Served in the legacy (unaggregated) format; clients asking for aggregated discovery
fall back to it because the response's Content-Type is plain application/json.
Called by server.py.
"""

from __future__ import annotations

import hashlib
from typing import Any

from devcluster.resources import Registry, ResourceType

VERSION = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": "v1.37.0-devcluster",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_VERBS = ("get", "patch", "update")
# Subresources whose kind differs from their parent: (group, version, kind, verbs).
_SPECIAL = {
    "scale": ("autoscaling", "v1", "Scale", _SUBRESOURCE_VERBS),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
}


def _hash(rtype: ResourceType) -> str:
    digest = hashlib.sha256(f"{rtype.group}/{rtype.version}/{rtype.kind}".encode()).digest()
    import base64

    return base64.b64encode(digest[:8]).decode()


def _resources(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    if rtype.persisted:
        main["storageVersionHash"] = _hash(rtype)
    result = [main]
    for sub in sorted(rtype.subresources):
        entry: dict[str, Any] = {
            "name": f"{rtype.plural}/{sub}",
            "singularName": "",
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(_SUBRESOURCE_VERBS),
        }
        if sub in _SPECIAL:
            group, version, kind, verbs = _SPECIAL[sub]
            entry.update(group=group, version=version, kind=kind, verbs=list(verbs))
        result.append(entry)
    return result


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """Return the APIResourceList of one group version, or None if it is not served."""
    types = [t for t in registry.types if t.group == group and t.version == version]
    if not types:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": types[0].group_version,
        "resources": [entry for rtype in types for entry in _resources(rtype)],
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """Return the body of GET /api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{version}", "version": version} for version in versions]
    return {
        "name": name,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    """Return the body of GET /apis."""
    groups = [
        _group(name, versions) for name, versions in registry.group_versions().items() if name
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> dict[str, Any] | None:
    """Return the body of GET /apis/{group}, or None."""
    versions = registry.group_versions().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}
