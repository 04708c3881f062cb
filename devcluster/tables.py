"""``meta.k8s.io/v1`` Table responses (what ``kubectl get`` asks for).

CRD kinds use their additionalPrinterColumns (Age alone when they declare none) evaluated
with jsonpath.py; the built-ins devcluster serves get the columns, descriptions and cells
kube-apiserver v1.37 prints (table_docs.py); anything else gets Name and Age.
Called by server.py when the Accept header asks for ``as=Table``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from devcluster import jsonpath
from devcluster import table_docs as docs
from devcluster.durations import human_duration
from devcluster.resources import ResourceType


def _column(
    name: str, kind: str = "string", description: str = "", priority: int = 0, fmt: str = ""
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _column("Name", description=docs.NAME, fmt="name")
_AGE = _column("Age", description=docs.CREATION_TIMESTAMP)
_CREATED_AT = _column("Created At", "date", docs.CREATION_TIMESTAMP)


def _age(timestamp: Any, now: datetime) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return human_duration((now - moment).total_seconds())


Cells = Callable[[Mapping[str, Any], datetime], list[Any]]


def _get(obj: Mapping[str, Any], *path: str, default: Any = None) -> Any:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return default if value is None else value


def _name(obj: Mapping[str, Any]) -> str:
    return str(_get(obj, "metadata", "name", default=""))


def _created(obj: Mapping[str, Any], now: datetime) -> str:
    return _age(_get(obj, "metadata", "creationTimestamp"), now)


def _deployment_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    replicas = _get(obj, "spec", "replicas", default=1)
    containers = _get(obj, "spec", "template", "spec", "containers", default=[])
    selector = _get(obj, "spec", "selector", default={})
    labels = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return [
        _name(obj),
        f"{_get(obj, 'status', 'readyReplicas', default=0)}/{replicas}",
        _get(obj, "status", "updatedReplicas", default=0),
        _get(obj, "status", "availableReplicas", default=0),
        _created(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        labels,
    ]


def _stateful_set_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    replicas = _get(obj, "spec", "replicas", default=1)
    containers = _get(obj, "spec", "template", "spec", "containers", default=[])
    return [
        _name(obj),
        f"{_get(obj, 'status', 'readyReplicas', default=0)}/{replicas}",
        _created(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    ]


def _daemon_set_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    containers = _get(obj, "spec", "template", "spec", "containers", default=[])
    node_selector = _get(obj, "spec", "template", "spec", "nodeSelector", default={})
    selector = _get(obj, "spec", "selector", default={})
    labels = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return [
        _name(obj),
        _get(obj, "status", "desiredNumberScheduled", default=0),
        _get(obj, "status", "currentNumberScheduled", default=0),
        _get(obj, "status", "numberReady", default=0),
        _get(obj, "status", "updatedNumberScheduled", default=0),
        _get(obj, "status", "numberAvailable", default=0),
        ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
        _created(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        labels,
    ]


_CONTAINERS = _column(
    "Containers", description="Names of each container in the template.", priority=1
)
_IMAGES = _column(
    "Images", description="Images referenced by each container in the template.", priority=1
)


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
        _name(obj),
        f"{role.get('kind', '')}/{role.get('name', '')}",
        _created(obj, now),
        names("User"),
        names("Group"),
        names("ServiceAccount"),
    ]


def _binding_columns(role_ref: str, kind: str) -> list[dict[str, Any]]:
    return [
        _NAME,
        _column("Role", description=role_ref),
        _AGE,
        _column("Users", description=f"Users in the {kind}", priority=1),
        _column("Groups", description=f"Groups in the {kind}", priority=1),
        _column("ServiceAccounts", description=f"ServiceAccounts in the {kind}", priority=1),
    ]


def _crd_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    spec = _get(obj, "spec", default={})
    versions = sorted(
        str(v.get("name")) + ("(storage)" if v.get("storage") else "")
        for v in spec.get("versions") or []
        if v.get("served")
    )
    conditions = _get(obj, "status", "conditions", default=[])
    return [
        _name(obj),
        spec.get("scope", ""),
        ",".join(versions),
        _get(obj, "metadata", "creationTimestamp"),
        spec.get("group", ""),
        _get(spec, "names", "kind", default=""),
        ",".join(_get(spec, "names", "shortNames", default=[])),
        any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions),
    ]


def _event_cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
    # pkg/printers/internalversion printEvent, as the server prints it (always wide).
    involved = _get(obj, "involvedObject", default=None) or _get(obj, "regarding", default={})
    first = _get(obj, "firstTimestamp") or _get(obj, "eventTime")
    first_seen = _age(first, now)
    last = _get(obj, "lastTimestamp")
    last_seen = _age(last, now) if last else first_seen
    count = _get(obj, "count") or 1
    series = _get(obj, "series")
    if isinstance(series, Mapping):
        last_seen = _age(series.get("lastObservedTime"), now)
        count = series.get("count") or count
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    component = _get(obj, "source", "component") or _get(obj, "reportingController", default="")
    host = _get(obj, "source", "host") or _get(obj, "reportingInstance", default="")
    message = _get(obj, "message", default=None) or _get(obj, "note", default="")
    return [
        last_seen,
        _get(obj, "type", default=""),
        _get(obj, "reason", default=""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        str(message).strip(),
        first_seen,
        int(count),
        _name(obj),
    ]


_EVENT_COLUMNS = [
    _column("Last Seen", description=docs.EVENT_LAST_TIMESTAMP),
    _column("Type", description=docs.EVENT_TYPE),
    _column("Reason", description=docs.EVENT_REASON),
    _column("Object", description=docs.EVENT_INVOLVED_OBJECT),
    _column("Subobject", description=docs.EVENT_FIELD_PATH, priority=1),
    _column("Source", description=docs.EVENT_SOURCE, priority=1),
    _column("Message", description=docs.EVENT_MESSAGE),
    _column("First Seen", description=docs.EVENT_FIRST_TIMESTAMP, priority=1),
    _column("Count", description=docs.EVENT_COUNT, priority=1),
    {**_NAME, "priority": 1},
]

# (group, kind) -> (every column, the cells of one object), as pkg/printers/internalversion
# (and apiextensions' CRD table convertor) define them for kube-apiserver v1.37.
_BUILTIN: dict[tuple[str, str], tuple[list[dict[str, Any]], Cells]] = {
    ("apps", "Deployment"): (
        [
            _NAME,
            _column("Ready", description="Number of the pod with ready state"),
            _column("Up-to-date", description=docs.UPDATED_REPLICAS),
            _column("Available", description=docs.AVAILABLE_REPLICAS),
            _AGE,
            _column(
                "Containers", description="Names of each container in the template.", priority=1
            ),
            _column(
                "Images",
                description="Images referenced by each container in the template.",
                priority=1,
            ),
            _column("Selector", description=docs.DEPLOYMENT_SELECTOR, priority=1),
        ],
        _deployment_cells,
    ),
    ("apps", "StatefulSet"): (
        [
            _NAME,
            _column("Ready", description="Number of the pod with ready state"),
            _AGE,
            _CONTAINERS,
            _IMAGES,
        ],
        _stateful_set_cells,
    ),
    ("apps", "DaemonSet"): (
        [
            _NAME,
            _column("Desired", "integer", docs.DESIRED_NUMBER_SCHEDULED),
            _column("Current", "integer", docs.CURRENT_NUMBER_SCHEDULED),
            _column("Ready", "integer", docs.NUMBER_READY),
            _column("Up-to-date", "integer", docs.UPDATED_NUMBER_SCHEDULED),
            _column("Available", "integer", docs.NUMBER_AVAILABLE),
            _column("Node Selector", description=docs.NODE_SELECTOR),
            _AGE,
            _CONTAINERS,
            _IMAGES,
            _column("Selector", description=docs.DAEMON_SET_SELECTOR, priority=1),
        ],
        _daemon_set_cells,
    ),
    ("coordination.k8s.io", "Lease"): (
        [_NAME, _column("Holder", description=docs.HOLDER_IDENTITY), _AGE],
        lambda o, n: [_name(o), _get(o, "spec", "holderIdentity", default=""), _created(o, n)],
    ),
    ("rbac.authorization.k8s.io", "Role"): (
        [_NAME, _CREATED_AT],
        lambda o, n: [_name(o), _get(o, "metadata", "creationTimestamp")],
    ),
    ("rbac.authorization.k8s.io", "ClusterRole"): (
        [_NAME, _CREATED_AT],
        lambda o, n: [_name(o), _get(o, "metadata", "creationTimestamp")],
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): (
        _binding_columns(docs.ROLE_BINDING_ROLE_REF, "roleBinding"),
        _binding_cells,
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (
        _binding_columns(docs.CLUSTER_ROLE_BINDING_ROLE_REF, "clusterRoleBinding"),
        _binding_cells,
    ),
    ("", "Namespace"): (
        [_NAME, _column("Status", description="The status of the namespace"), _AGE],
        lambda o, n: [_name(o), _get(o, "status", "phase", default=""), _created(o, n)],
    ),
    ("", "ConfigMap"): (
        [_NAME, _column("Data", description=docs.CONFIGMAP_DATA), _AGE],
        lambda o, n: [
            _name(o),
            len(_get(o, "data", default={})) + len(_get(o, "binaryData", default={})),
            _created(o, n),
        ],
    ),
    ("", "Secret"): (
        [
            _NAME,
            _column("Type", description=docs.SECRET_TYPE),
            _column("Data", description=docs.SECRET_DATA),
            _AGE,
        ],
        lambda o, n: [
            _name(o),
            _get(o, "type", default=""),
            len(_get(o, "data", default={})),
            _created(o, n),
        ],
    ),
    ("", "ServiceAccount"): ([_NAME, _AGE], lambda o, n: [_name(o), _created(o, n)]),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        [
            _NAME,
            _column("Scope", description="Cluster/Namespaced"),
            _column("Versions", description="Served versions"),
            _CREATED_AT,
            _column("Group", description="API group", priority=1),
            _column("Kind", description="CustomResource kind", priority=1),
            _column("ShortNames", description="Short names", priority=1),
            _column("Established", "boolean", "Established status", priority=1),
        ],
        _crd_cells,
    ),
    ("", "Event"): (_EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _event_cells),
}

# A CRD version without additionalPrinterColumns is served with this one.
_DEFAULT_CRD_COLUMNS = (
    {
        "name": "Age",
        "type": "date",
        "description": docs.CREATION_TIMESTAMP,
        "jsonPath": ".metadata.creationTimestamp",
    },
)


def _crd_columns(rtype: ResourceType) -> tuple[list[dict[str, Any]], Cells]:
    """A custom resource's columns (apiextensions-apiserver's table convertor)."""
    defined = [c for c in rtype.printer_columns if c.get("name")] or list(_DEFAULT_CRD_COLUMNS)
    columns = [_NAME]
    for column in defined:
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {column.get('jsonPath')}"
        )
        columns.append(
            _column(
                column["name"],
                column.get("type", "string"),
                description,
                column.get("priority", 0),
                column.get("format", ""),
            )
        )

    def cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
        row: list[Any] = [_name(obj)]
        for column in defined:
            try:
                value = jsonpath.cell(
                    str(column.get("jsonPath", "")), obj, column.get("type", "string"), now=now
                )
            except jsonpath.JSONPathError:
                value = None
            row.append(value)
        return row

    return columns, cells


def _row_object(obj: Mapping[str, Any], include: str) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    metadata = dict(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    # A DaemonSet's template generation is a field of the internal object that apps/v1 shows
    # as an annotation; the metadata of a Table row is the internal object's, without it.
    if annotations.pop("deprecated.daemonset.template.generation", None) is not None:
        if annotations:
            metadata["annotations"] = annotations
        else:
            metadata.pop("annotations", None)
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}


def table(
    rtype: ResourceType,
    objects: Sequence[Mapping[str, Any]],
    *,
    list_metadata: Mapping[str, Any] | None,
    include_object: str,
    now: datetime,
) -> dict[str, Any]:
    """Return a Table for ``objects`` (list_metadata None for a single GET)."""
    if rtype.custom:
        columns, cells = _crd_columns(rtype)
    else:
        columns, cells = _BUILTIN.get(
            (rtype.group, rtype.kind), ([_NAME, _AGE], lambda o, n: [_name(o), _created(o, n)])
        )
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(obj, now)}
        embedded = _row_object(obj, include_object)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": [dict(column) for column in columns],
        "rows": rows,
    }
