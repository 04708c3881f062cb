"""Read a target's past revisions for a backtest: each one's key, creation time and numbers.

``sentinel_operator.backtest`` calls ``read`` once per backtest; ``sentinel_core.backtest``
turns the revisions into rollouts (docs/backtest.md). A Deployment's are its ReplicaSets (key:
``pod-template-hash``; numbers: ``deployment.kubernetes.io/revision`` and the
``revision-history`` a rollback leaves), a StatefulSet's or DaemonSet's its ControllerRevisions
(key: a StatefulSet's revision name, a DaemonSet's ``controller-revision-hash``; number:
``revision``): the kind says which (``WorkloadKind.revision_plural``, ``revision_key``,
``revision_numbers``). Only those the workload owns; as many as the cluster keeps
(``revisionHistoryLimit``). RBAC: ``list`` on ``apps/replicasets`` and
``apps/controllerrevisions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentinel_cluster import kube
from sentinel_core.backtest import PastRevision
from sentinel_core.values import parse_time
from sentinel_core.workload_kinds import kind_named


def read(
    client: kube.KubeClient, kind: str, workload: Mapping[str, Any]
) -> tuple[PastRevision, ...]:
    """Return ``workload``'s revisions that carry a key and a creation time, in no order."""
    target = kind_named(kind)
    namespace = str((workload.get("metadata") or {}).get("namespace", ""))
    items = client.list_owned(kube.apps_path(target.revision_plural, namespace), workload)
    out = []
    for item in items:
        metadata = item.get("metadata") or {}
        created = parse_time(metadata.get("creationTimestamp"))
        key = target.revision_key(item)
        if created is None or not key:
            continue
        numbers = target.revision_numbers(item)
        out.append(PastRevision(key, created, numbers, str(metadata.get("name", ""))))
    return tuple(out)
