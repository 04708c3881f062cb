"""Read a StatefulSet's or DaemonSet's revisions: when its rollout began, which pods are new.

Their controllers record each pod template as a ControllerRevision and label every pod with
its ``controller-revision-hash``, as a Deployment's ReplicaSets do with ``pod-template-hash``
(``sentinel_cluster.replicasets``). The reconciler calls ``revision_started`` only when the
target's pod template changed (docs/resource.md, ``beforeRollout``), and ``revision_hashes``
once per evaluation of an analysis with a ``compare`` metric (docs/status.md#pausing-each-kind).
RBAC: ``get`` and ``list`` on ``apps/controllerrevisions``.

A StatefulSet names its revisions in its status (``updateRevision``, ``currentRevision``; its
pods' label is the revision's name). A DaemonSet does not: its revisions are listed by its
selector, kept to those it owns, the highest ``revision`` being the one it rolls out (its pods'
label is the revision's ``controller-revision-hash`` label).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube
from sentinel_cluster.replicasets import MAX_OLD_HASHES
from sentinel_core.kinds import STATEFUL_SET
from sentinel_core.values import integer, parse_time

# The label a DaemonSet's controller puts on its revisions and its pods.
_REVISION_HASH = "controller-revision-hash"


def revision_hashes(
    client: kube.KubeClient, kind: str, workload: Mapping[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """Return the new pods' ``controller-revision-hash`` and the old ones' (while rolling).

    Old pods exist only while a rollout is under way: a StatefulSet's ``currentRevision``
    differs from its ``updateRevision``; a DaemonSet has fewer pods updated than scheduled (its
    older revisions are then the old side). ``(None, ())`` before the controller has written a
    status or a revision (also on a cluster that serves no ControllerRevisions).
    """
    status = workload.get("status") or {}
    if kind == STATEFUL_SET:
        update, current = status.get("updateRevision"), status.get("currentRevision")
        if not isinstance(update, str) or not update:
            return None, ()
        old = (current,) if isinstance(current, str) and current and current != update else ()
        return update, old
    ranked = sorted(_owned(client, workload), key=_revision, reverse=True)
    hashes = [h for item in ranked if (h := _hash(item))]
    if not hashes:
        return None, ()
    updated = integer(status.get("updatedNumberScheduled", 0)) or 0
    desired = integer(status.get("desiredNumberScheduled", 0)) or 0
    rolling = updated < desired or not _caught_up(workload)
    return hashes[0], tuple(hashes[1 : 1 + MAX_OLD_HASHES]) if rolling else ()


def revision_started(
    client: kube.KubeClient, kind: str, workload: Mapping[str, Any]
) -> datetime | None:
    """Return when the revision the target rolls out was created; None when not known yet.

    None until the controller has seen the target's latest spec (``status.observedGeneration``):
    before that its newest revision is an older template's, whose creation is not when this
    rollout began; the caller then takes "now". A cluster that serves no ControllerRevisions
    (devcluster, which plays no controllers) answers 404: that is "none", not an error.
    """
    if not _caught_up(workload):
        return None
    if kind == STATEFUL_SET:
        name = (workload.get("status") or {}).get("updateRevision")
        if not isinstance(name, str) or not name:
            return None
        namespace = str((workload.get("metadata") or {}).get("namespace", ""))
        try:
            revision = client.request("GET", kube.controllerrevisions_path(namespace, name))
        except kube.NotFound:
            return None
        return parse_time((revision.get("metadata") or {}).get("creationTimestamp"))
    owned = _owned(client, workload)
    if not owned:
        return None
    newest = max(owned, key=_revision)
    return parse_time((newest.get("metadata") or {}).get("creationTimestamp"))


def _caught_up(workload: Mapping[str, Any]) -> bool:
    observed = integer((workload.get("status") or {}).get("observedGeneration"))
    generation = integer((workload.get("metadata") or {}).get("generation"))
    return observed is not None and generation is not None and observed >= generation


def _owned(client: kube.KubeClient, workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return the ControllerRevisions ``workload`` owns; none where the cluster serves none."""
    namespace = str((workload.get("metadata") or {}).get("namespace", ""))
    return client.list_owned(kube.controllerrevisions_path(namespace), workload)


def _revision(item: Mapping[str, Any]) -> tuple[int, str]:
    revision = integer(item.get("revision"))
    # RFC 3339 times in UTC with a Z sort as text.
    created = str((item.get("metadata") or {}).get("creationTimestamp"))
    return (revision if revision is not None else -1, created)


def _hash(item: Mapping[str, Any]) -> str:
    labels = (item.get("metadata") or {}).get("labels") or {}
    value = labels.get(_REVISION_HASH) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else ""
