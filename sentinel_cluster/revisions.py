"""Read a StatefulSet's or DaemonSet's revisions: what it rolls out, and since when.

Their controllers record each pod template as a ControllerRevision and label every pod with
its ``controller-revision-hash``, as a Deployment's ReplicaSets do with ``pod-template-hash``
(``sentinel_cluster.replicasets``). The reconciler calls ``read`` once per evaluation of an
analysis guarding one of them (its rollout and, for a metric kind that needs them, its sides:
``sentinel_core.workload_kinds.controller_revisions`` decides from what is read here), and
``revision_created`` for any kind, a Deployment too, when the kind's ``rollout`` asks: only
when the revision it rolls out changed (docs/status.md#rollouts-statusrollout). RBAC: ``list``
on ``apps/controllerrevisions`` (and ``apps/replicasets``).

A StatefulSet names its revisions in its status (``updateRevision``, ``currentRevision``; its
pods' label is the revision's name): ``read`` asks nothing more for it. A DaemonSet does not:
its revisions are listed by its selector, kept to those it owns, the highest ``revision`` being
the one it rolls out (its pods' label is the revision's ``controller-revision-hash`` label).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube
from sentinel_core.values import integer, parse_time
from sentinel_core.workload_kinds import ControllerRevisions, controller_revisions, kind_named


def read(client: kube.OwnedReader, kind: str, workload: Mapping[str, Any]) -> ControllerRevisions:
    """Return what ``workload`` (a StatefulSet or DaemonSet) rolls out, from its controller.

    Nothing before the controller has written a status or a revision (also on a cluster that
    serves no ControllerRevisions, which answers a DaemonSet's list with 404).
    """
    if not kind_named(kind).lists_revisions:
        return controller_revisions(kind, workload)
    ranked = sorted(_owned(client, kind, workload), key=_revision, reverse=True)
    return controller_revisions(
        kind, workload, [h for item in ranked if (h := kind_named(kind).revision_key(item))]
    )


def revision_created(
    client: kube.OwnedReader, kind: str, workload: Mapping[str, Any], revision: str
) -> datetime | None:
    """Return when ``revision`` (its revision object's ``WorkloadKind.rollout_key``) was created.

    None when it is not the most recently created of the workload's revision objects
    (ControllerRevisions, a Deployment's ReplicaSets): a rollback makes the controller reuse the
    older object of the same template, whose creation is not when this rollout began; the
    caller then takes "now". None too where none are served.
    """
    target = kind_named(kind)
    key = target.rollout_key or target.revision_key
    created = [
        (moment, key(item))
        for item in _owned(client, kind, workload)
        for moment in [parse_time((item.get("metadata") or {}).get("creationTimestamp"))]
        if moment is not None
    ]
    if not created:
        return None
    moment, newest = max(created, key=lambda pair: pair[0])
    return moment if newest == revision else None


def _owned(
    client: kube.OwnedReader, kind: str, workload: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """Return the revision objects ``workload`` owns; none where the cluster serves none."""
    namespace = str((workload.get("metadata") or {}).get("namespace", ""))
    return client.list_owned(kube.apps_path(kind_named(kind).revision_plural, namespace), workload)


def _revision(item: Mapping[str, Any]) -> tuple[int, str]:
    revision = integer(item.get("revision"))
    # RFC 3339 times in UTC with a Z sort as text.
    created = str((item.get("metadata") or {}).get("creationTimestamp"))
    return (revision if revision is not None else -1, created)
