"""A Deployment's rollouts: a changed ``spec.template``, begun when its ReplicaSet was created."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_core.status import Rollout
from sentinel_core.values import utc_seconds
from sentinel_core.workload_kinds._kind import ControllerRevisions, Created, Workload

# Short like Kubernetes' pod-template-hash; 16 hex digits make a collision between two
# templates of one Deployment practically impossible.
_HASH_LENGTH = 16
# The label the Deployment controller adds to each ReplicaSet's copy of the pod template.
POD_TEMPLATE_HASH = "pod-template-hash"
# Where a cached object keeps the hash of the pod template it no longer holds
# (``sentinel_cluster.informer``); never a field of an object the API server sends.
TEMPLATE_HASH = "sentinel.example.com/templateHash"
# The Deployment controller's revision of each ReplicaSet, and the earlier ones a rollback to it
# reused.
_REVISION = "deployment.kubernetes.io/revision"
_HISTORY = "deployment.kubernetes.io/revision-history"


def template_hash(template: object) -> str:
    """Return a stable hash of a Deployment's ``spec.template`` (key order does not matter)."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LENGTH]


def next_rollout(
    previous: Rollout | None,
    current_hash: str | None,
    *,
    newest_replicaset: datetime | None,
    now: datetime,
) -> Rollout | None:
    """Return ``status.rollout`` after seeing the target's template hash ``current_hash``.

    No target (None): unchanged. The first template ever seen is recorded without a start: the
    operator did not see that rollout begin, so ``beforeRollout`` has no baseline yet. A new
    hash after that is a rollout that began when its ReplicaSet was created (the newest one),
    or now where there is none.
    """
    if current_hash is None:
        return previous
    if previous is None:
        return Rollout(template_hash=current_hash)
    if previous.template_hash == current_hash:
        return previous
    started = newest_replicaset if newest_replicaset is not None else now
    return Rollout(template_hash=current_hash, started_at=utc_seconds(started))


def rollout(
    previous: Rollout | None,
    workload: Workload,
    read: ControllerRevisions | None,
    created: Created,
    now: datetime,
) -> Rollout | None:
    """Return the Deployment's rollout: its template's hash, begun when its ReplicaSet was created.

    The creation time is asked only on a change: one list per rollout, not per evaluation.
    """
    current = workload_template_hash(workload)
    newest = None
    if previous is not None and previous.template_hash != current:
        newest = created(current)
    return next_rollout(previous, current, newest_replicaset=newest, now=now)


def workload_template_hash(workload: Mapping[str, Any]) -> str:
    """Return the hash of a Deployment's pod template, as read or as its cache kept it."""
    cached = workload.get(TEMPLATE_HASH)
    if isinstance(cached, str):
        return cached
    return template_hash((workload.get("spec") or {}).get("template") or {})


def replicaset_template_hash(replicaset: Mapping[str, Any]) -> str:
    """Return the hash of a ReplicaSet's pod template without its ``pod-template-hash`` label,
    comparable with ``workload_template_hash`` of its Deployment."""
    cached = replicaset.get(TEMPLATE_HASH)
    if isinstance(cached, str):
        return cached
    template = dict((replicaset.get("spec") or {}).get("template") or {})
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    template["metadata"] = metadata
    return template_hash(template)


def revision_numbers(replicaset: Workload) -> tuple[int, ...]:
    """Return a ReplicaSet's revision and those a rollback to it reused, ascending."""
    annotations = (replicaset.get("metadata") or {}).get("annotations") or {}
    texts = [str(annotations.get(_REVISION, "")), *str(annotations.get(_HISTORY, "")).split(",")]
    return tuple(sorted({int(t) for t in (t.strip() for t in texts) if t.isdigit()}))
