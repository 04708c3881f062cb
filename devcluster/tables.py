"""``meta.k8s.io/v1`` Table responses (what ``kubectl get`` asks for).

CRD kinds use their additionalPrinterColumns evaluated with jsonpath.py; a few built-ins
get the columns a real server prints; everything else gets Name and Age.
Called by server.py when the Accept header asks for ``as=Table``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from devcluster import jsonpath
from devcluster.durations import human_duration
from devcluster.resources import ResourceType

_NAME = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
_AGE = {
    "name": "Age",
    "type": "string",
    "format": "",
    "description": "CreationTimestamp is a timestamp representing the server time when this "
    "object was created.",
    "priority": 0,
}


def _age(timestamp: Any, now: datetime) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def _column(
    name: str, kind: str = "string", description: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "",
        "description": description,
        "priority": priority,
    }


Cells = Callable[[Mapping[str, Any], datetime], list[Any]]


def _get(obj: Mapping[str, Any], *path: str, default: Any = None) -> Any:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return default if value is None else value


def _created(obj: Mapping[str, Any], now: datetime) -> str:
    return _age(_get(obj, "metadata", "creationTimestamp"), now)


def _deployment_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    replicas = _get(obj, "spec", "replicas", default=1)
    containers = _get(obj, "spec", "template", "spec", "containers", default=[])
    selector = _get(obj, "spec", "selector", default={})
    labels = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return [
        f"{_get(obj, 'status', 'readyReplicas', default=0)}/{replicas}",
        _get(obj, "status", "updatedReplicas", default=0),
        _get(obj, "status", "availableReplicas", default=0),
        _created(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        labels,
    ]


def _binding_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    subjects = _get(obj, "subjects", default=[])

    def names(kind: str) -> str:
        return ", ".join(
            (f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount" else s["name"])
            for s in subjects
            if s.get("kind") == kind and s.get("name")
        )

    role = _get(obj, "roleRef", default={})
    return [
        f"{role.get('kind', '')}/{role.get('name', '')}",
        _created(obj, now),
        names("User"),
        names("Group"),
        names("ServiceAccount"),
    ]


_BINDING_COLUMNS = [
    _column("Role"),
    dict(_AGE),
    _column("Users", priority=1),
    _column("Groups", priority=1),
    _column("ServiceAccounts", priority=1),
]
_CREATED_AT = (
    [_column("Created At", "date")],
    lambda o, n: [_get(o, "metadata", "creationTimestamp")],
    None,
)


def _event_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    involved = _get(obj, "involvedObject", default=None) or _get(obj, "regarding", default={})
    last = (
        _get(obj, "lastTimestamp")
        or _get(obj, "eventTime")
        or _get(obj, "metadata", "creationTimestamp")
    )
    return [
        _age(str(last)[:19] + "Z" if last else "", now),
        _get(obj, "type", default=""),
        _get(obj, "reason", default=""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        _get(obj, "message", default=None) or _get(obj, "note", default=""),
    ]


_BUILTIN_COLUMNS: dict[tuple[str, str], tuple[list[dict[str, Any]], Cells, bool | None]] = {
    # (group, kind): (columns, cells, True: replace Name / False: append Age / None: as is)
    ("apps", "Deployment"): (
        [
            _column("Ready"),
            _column("Up-to-date", "integer"),
            _column("Available", "integer"),
            dict(_AGE),
            _column("Containers", priority=1),
            _column("Images", priority=1),
            _column("Selector", priority=1),
        ],
        _deployment_cells,
        None,
    ),
    ("coordination.k8s.io", "Lease"): (
        [_column("Holder"), dict(_AGE)],
        lambda o, n: [_get(o, "spec", "holderIdentity", default=""), _created(o, n)],
        None,
    ),
    ("rbac.authorization.k8s.io", "Role"): _CREATED_AT,
    ("rbac.authorization.k8s.io", "ClusterRole"): _CREATED_AT,
    ("rbac.authorization.k8s.io", "RoleBinding"): (_BINDING_COLUMNS, _binding_cells, None),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (_BINDING_COLUMNS, _binding_cells, None),
    ("", "Namespace"): ([_column("Status")], lambda o, n: [_get(o, "status", "phase")], False),
    ("", "ConfigMap"): (
        [_column("Data", "integer")],
        lambda o, n: [len(_get(o, "data", default={})) + len(_get(o, "binaryData", default={}))],
        False,
    ),
    ("", "Secret"): (
        [_column("Type"), _column("Data", "integer")],
        lambda o, n: [_get(o, "type", default="Opaque"), len(_get(o, "data", default={}))],
        False,
    ),
    ("", "ServiceAccount"): (
        [_column("Secrets", "integer")],
        lambda o, n: [len(_get(o, "secrets", default=[]))],
        False,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _CREATED_AT,
    ("", "Event"): (
        [
            _column("Last Seen"),
            _column("Type"),
            _column("Reason"),
            _column("Object"),
            _column("Message"),
        ],
        _event_cells,
        True,
    ),
}


def _crd_cell(column: Mapping[str, Any], obj: Mapping[str, Any], now: datetime) -> Any:
    try:
        values = jsonpath.evaluate(str(column.get("jsonPath", "")), obj)
    except Exception:
        return None
    if not values:
        return None
    if column.get("type") == "date":
        return _age(values[0], now)
    if len(values) == 1:
        return values[0]
    return ",".join(str(value) for value in values)


def _row_object(obj: Mapping[str, Any], include: str) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def table(
    rtype: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    *,
    list_metadata: Mapping[str, Any] | None,
    include_object: str,
    now: datetime,
) -> dict[str, Any]:
    """Return a Table for ``objects`` (list_metadata None for a single GET)."""
    columns: list[dict[str, Any]] = [dict(_NAME)]
    cells: Callable[[Mapping[str, Any]], list[Any]]
    if rtype.printer_columns:
        defined = [c for c in rtype.printer_columns if c.get("name")]
        has_age = any(c.get("name") == "Age" for c in defined)
        for column in defined:
            columns.append(
                {
                    "name": column["name"],
                    "type": "string"
                    if column.get("type") == "date"
                    else column.get("type", "string"),
                    "format": column.get("format", ""),
                    "description": column.get("description", ""),
                    "priority": column.get("priority", 0),
                }
            )
        if not has_age:
            columns.append(dict(_AGE))

        def cells(obj: Mapping[str, Any]) -> list[Any]:
            row = [_crd_cell(column, obj, now) for column in defined]
            if not has_age:
                row.append(_age(_get(obj, "metadata", "creationTimestamp"), now))
            return row

    elif (rtype.group, rtype.kind) in _BUILTIN_COLUMNS:
        extra, builtin_cells, replaces_name = _BUILTIN_COLUMNS[(rtype.group, rtype.kind)]
        if replaces_name is None:
            # The kind's columns include its own Age or "Created At" column.
            columns += extra

            def cells(obj: Mapping[str, Any]) -> list[Any]:
                return builtin_cells(obj, now)

        elif replaces_name:
            columns = list(extra)

            def cells(obj: Mapping[str, Any]) -> list[Any]:
                return builtin_cells(obj, now)

        else:
            columns += [*extra, dict(_AGE)]

            def cells(obj: Mapping[str, Any]) -> list[Any]:
                return [
                    *builtin_cells(obj, now),
                    _age(_get(obj, "metadata", "creationTimestamp"), now),
                ]
    else:
        columns.append(dict(_AGE))

        def cells(obj: Mapping[str, Any]) -> list[Any]:
            return [_age(_get(obj, "metadata", "creationTimestamp"), now)]

    name_first = columns[0]["name"] == "Name"
    rows = []
    for obj in objects:
        row_cells = cells(obj)
        if name_first:
            row_cells = [_get(obj, "metadata", "name", default=""), *row_cells]
        row: dict[str, Any] = {"cells": row_cells}
        embedded = _row_object(obj, include_object)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    body: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": columns,
        "rows": rows,
    }
    return body
