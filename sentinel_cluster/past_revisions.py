"""Read a target's past revisions for a backtest: each one's key, creation time and numbers.

``sentinel_operator.backtest`` calls ``read`` once per backtest; ``sentinel_core.backtest``
turns the revisions into rollouts (docs/backtest.md). A Deployment's are its ReplicaSets (key:
``pod-template-hash``; numbers: ``deployment.kubernetes.io/revision`` and the
``revision-history`` a rollback leaves), a StatefulSet's or DaemonSet's its ControllerRevisions
(key: a StatefulSet's revision name, a DaemonSet's ``controller-revision-hash``; number:
``revision``). Only those the workload owns; as many as the cluster keeps
(``revisionHistoryLimit``). RBAC: ``list`` on ``apps/replicasets`` and
``apps/controllerrevisions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentinel_cluster import kube
from sentinel_core.backtest import PastRevision
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.values import integer, parse_time
from sentinel_core.workload_kinds import kind_named

_REVISION = "deployment.kubernetes.io/revision"
_HISTORY = "deployment.kubernetes.io/revision-history"


def read(
    client: kube.KubeClient, kind: str, workload: Mapping[str, Any]
) -> tuple[PastRevision, ...]:
    """Return ``workload``'s revisions that carry a key and a creation time, in no order."""
    namespace = str((workload.get("metadata") or {}).get("namespace", ""))
    if kind == DEPLOYMENT:
        items = client.list_owned(kube.replicasets_path(namespace), workload)
    else:
        items = client.list_owned(kube.controllerrevisions_path(namespace), workload)
    out = []
    for item in items:
        metadata = item.get("metadata") or {}
        created = parse_time(metadata.get("creationTimestamp"))
        key = _key(kind, item)
        if created is None or not key:
            continue
        out.append(PastRevision(key, created, _numbers(kind, item), str(metadata.get("name", ""))))
    return tuple(out)


def _key(kind: str, item: Mapping[str, Any]) -> str:
    return kind_named(kind).revision_key(item)


def _numbers(kind: str, item: Mapping[str, Any]) -> tuple[int, ...]:
    if kind != DEPLOYMENT:
        number = integer(item.get("revision"))
        return (number,) if number is not None else ()
    annotations = (item.get("metadata") or {}).get("annotations") or {}
    texts = [str(annotations.get(_REVISION, "")), *str(annotations.get(_HISTORY, "")).split(",")]
    return tuple(sorted({int(t) for t in (t.strip() for t in texts) if t.isdigit()}))
