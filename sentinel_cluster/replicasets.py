"""Read a Deployment's ReplicaSets: when its rollout began, and which pods are new and old.

The reconciler calls ``newest_replicaset_created`` only when the target's pod template changed
(docs/resource.md, ``beforeRollout``), and ``compared_hashes`` once per evaluation of an analysis
with a ``compare`` metric (docs/analysis.md). Each is one list of the namespace's ReplicaSets by the
Deployment's label selector, kept to those the Deployment owns. RBAC: ``list`` on
``apps/replicasets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube
from sentinel_core.values import parse_time
from sentinel_core.workload_kinds import template_hash

# The label the Deployment controller adds to each ReplicaSet's copy of the pod template.
_POD_TEMPLATE_HASH = "pod-template-hash"
# The Deployment controller's revision of each ReplicaSet: the newest has the highest.
_REVISION = "deployment.kubernetes.io/revision"
# status.metricResults[].comparison.oldHashes holds at most this many (the CRD's maxItems).
MAX_OLD_HASHES = 20
# Where a cached object keeps the hash of the pod template it no longer holds
# (``sentinel_cluster.informer``); never a field of an object the API server sends.
TEMPLATE_HASH = "sentinel.example.com/templateHash"


def compared_hashes(
    client: kube.OwnedReader, deployment: Mapping[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """Return the new pods' ``pod-template-hash`` and the old ones' (docs/analysis.md).

    New is the owned ReplicaSet with the highest revision annotation (creation time breaks a
    tie, and decides alone where no revision is set); old are the others with
    ``spec.replicas > 0``, in descending revision. ``(None, ())`` when there is none (also on a
    cluster that serves no ReplicaSets).
    """
    owned = [item for item in _owned(client, deployment) if _hash(item)]
    if not owned:
        return None, ()
    ranked = sorted(owned, key=_rank, reverse=True)
    old = [_hash(item) for item in ranked[1:] if _replicas(item) > 0]
    return _hash(ranked[0]), tuple(old[:MAX_OLD_HASHES])


def newest_replicaset_created(
    client: kube.OwnedReader, deployment: Mapping[str, Any], current_hash: str
) -> datetime | None:
    """Return the newest owned ReplicaSet's ``creationTimestamp`` if it runs the current template.

    None when there is none, or when the newest one carries another template: the controller
    has not created the new ReplicaSet yet, or a rollback went back to an old one (whose
    creation time is not when this rollout began); the caller then takes "now".

    A cluster that serves no ReplicaSets answers 404: that is "none", not an error. Any other
    API error is raised as the ``KubeError`` it is.
    """
    owned = [
        (moment, item)
        for item in _owned(client, deployment)
        for moment in [parse_time((item.get("metadata") or {}).get("creationTimestamp"))]
        if moment is not None
    ]
    if not owned:
        return None
    moment, newest = max(owned, key=lambda pair: pair[0])
    return moment if replicaset_template_hash(newest) == current_hash else None


def workload_template_hash(workload: Mapping[str, Any]) -> str:
    """Return the hash of a Deployment's pod template, as read or as its cache kept it."""
    cached = workload.get(TEMPLATE_HASH)
    if isinstance(cached, str):
        return cached
    return template_hash((workload.get("spec") or {}).get("template") or {})


def _owned(client: kube.OwnedReader, deployment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return the ReplicaSets ``deployment`` owns; none where the cluster serves none (404)."""
    namespace = str((deployment.get("metadata") or {}).get("namespace", ""))
    return client.list_owned(kube.replicasets_path(namespace), deployment)


def _hash(replicaset: Mapping[str, Any]) -> str:
    labels = (replicaset.get("metadata") or {}).get("labels") or {}
    value = labels.get(_POD_TEMPLATE_HASH) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else ""


def _rank(replicaset: Mapping[str, Any]) -> tuple[int, str]:
    metadata = replicaset.get("metadata") or {}
    revision = str((metadata.get("annotations") or {}).get(_REVISION, ""))
    # RFC 3339 times in UTC with a Z sort as text.
    return (int(revision) if revision.isdigit() else -1, str(metadata.get("creationTimestamp")))


def _replicas(replicaset: Mapping[str, Any]) -> int:
    replicas = (replicaset.get("spec") or {}).get("replicas", 1)
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0


def replicaset_template_hash(replicaset: Mapping[str, Any]) -> str:
    """Return the hash of a ReplicaSet's pod template without its ``pod-template-hash`` label,
    comparable with ``workload_template_hash`` of its Deployment."""
    cached = replicaset.get(TEMPLATE_HASH)
    if isinstance(cached, str):
        return cached
    template = dict((replicaset.get("spec") or {}).get("template") or {})
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != _POD_TEMPLATE_HASH}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    template["metadata"] = metadata
    return template_hash(template)
