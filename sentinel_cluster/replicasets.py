"""Read a Deployment's ReplicaSets: when its rollout began, and which pods are new and old.

``newest_replicaset_created`` is ``sentinel_cluster.revisions.revision_created`` for a
Deployment, which the reconciler calls when the kind's ``rollout`` asks: only when the target's
pod template changed (docs/resource.md, ``beforeRollout``). The reconciler calls
``compared_hashes`` once per evaluation of an analysis with a ``compare`` metric
(docs/analysis.md). Each is one list of the namespace's ReplicaSets by the Deployment's label
selector, kept to those the Deployment owns. RBAC: ``list`` on ``apps/replicasets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube, revisions
from sentinel_core.kinds import DEPLOYMENT

# The label the Deployment controller adds to each ReplicaSet's copy of the pod template.
_POD_TEMPLATE_HASH = "pod-template-hash"
# The Deployment controller's revision of each ReplicaSet: the newest has the highest.
_REVISION = "deployment.kubernetes.io/revision"
# status.metricResults[].comparison.oldHashes holds at most this many (the CRD's maxItems).
MAX_OLD_HASHES = 20


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
    return revisions.revision_created(client, DEPLOYMENT, deployment, current_hash)


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
