"""Detect the target's rollouts (``status.rollout``), each kind by what its controller shows.

What a rollout means for the baseline is in docs/resource.md; how each kind's is detected in
docs/status.md#rollouts-statusrollout.

A Deployment: the reconciler hashes its ``spec.template`` with ``template_hash`` and asks
``next_rollout``. A StatefulSet or a DaemonSet: ``sentinel_cluster.revisions`` reads its
controller's revisions, ``controller_revisions`` says which one it rolls out and whether pods
of older ones still run, and ``next_revision_rollout`` what ``status.rollout`` becomes. The
reconciler measures ``beforeRollout`` baselines at its ``startedAt`` (``baseline_instant``) and
passes it to ``decide`` in the Observation; ``decide`` records it and emits
``RolloutDetected`` when the key changed (``is_new``). Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sentinel_core.kinds import STATEFUL_SET
from sentinel_core.spec import MetricSpec
from sentinel_core.status import Rollout
from sentinel_core.values import integer, utc_seconds

# A DaemonSet's older revisions compared with its newest: at most as many as a Deployment's
# old ReplicaSets, status.metricResults[].comparison.oldHashes' maxItems in the CRD.
MAX_OLD_REVISIONS = 20

# Short like Kubernetes' pod-template-hash; 16 hex digits make a collision between two
# templates of one Deployment practically impossible.
_HASH_LENGTH = 16


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


def is_new(previous: Rollout | None, current: Rollout | None) -> bool:
    """Return whether ``current`` is a rollout detected now (a changed template)."""
    return (
        previous is not None
        and current is not None
        and previous.template_hash != current.template_hash
    )


@dataclass(frozen=True)
class ControllerRevisions:
    """What a StatefulSet's or DaemonSet's status and revisions say of its rolling update.

    ``update``: the revision it rolls out (its pods' ``controller-revision-hash``), None before
    its controller wrote one; ``old``: the older revisions whose pods still run, empty unless
    it is rolling out; ``caught_up``: its controller has seen its latest spec
    (``status.observedGeneration``), so ``update`` is the latest template's.
    """

    update: str | None = None
    old: tuple[str, ...] = ()
    caught_up: bool = False

    @property
    def rolling(self) -> bool:
        """Return whether a rollout is under way: pods of an older revision still run."""
        return bool(self.old)

    @property
    def hashes(self) -> tuple[str | None, tuple[str, ...]]:
        """Return the new pods' hash and the old ones', as ``compare`` splits series."""
        return self.update, self.old


def controller_revisions(
    kind: str, workload: Mapping[str, Any], ranked: Sequence[str] = ()
) -> ControllerRevisions:
    """Return what ``workload``'s controller rolls out (docs/status.md#rollouts-statusrollout).

    A StatefulSet names its revisions in its status: it is rolling out while its
    ``updateRevision`` differs from its ``currentRevision``. A DaemonSet does not: ``ranked``
    are the hashes of the ControllerRevisions it owns, highest ``revision`` first, and it is
    rolling out while fewer of its pods are updated than scheduled
    (``updatedNumberScheduled < desiredNumberScheduled``), or its controller has not caught
    up with its latest spec yet.
    """
    status = workload.get("status") or {}
    observed = integer(status.get("observedGeneration"))
    generation = integer((workload.get("metadata") or {}).get("generation"))
    caught_up = observed is not None and generation is not None and observed >= generation
    if kind == STATEFUL_SET:
        update, current = status.get("updateRevision"), status.get("currentRevision")
        if not isinstance(update, str) or not update:
            return ControllerRevisions(caught_up=caught_up)
        rolling = isinstance(current, str) and current and current != update
        return ControllerRevisions(update, (current,) if rolling else (), caught_up)
    if not ranked:
        return ControllerRevisions(caught_up=caught_up)
    updated = integer(status.get("updatedNumberScheduled", 0)) or 0
    desired = integer(status.get("desiredNumberScheduled", 0)) or 0
    rolling = updated < desired or not caught_up
    old = tuple(ranked[1 : 1 + MAX_OLD_REVISIONS]) if rolling else ()
    return ControllerRevisions(ranked[0], old, caught_up)


def next_revision_rollout(
    previous: Rollout | None,
    revisions: ControllerRevisions,
    *,
    created: datetime | None,
    now: datetime,
) -> Rollout | None:
    """Return ``status.rollout`` of a StatefulSet or DaemonSet after reading ``revisions``.

    Its key is the revision the controller rolls out, read only once the controller has seen
    the latest spec (before that it names an older template's; unchanged meanwhile). A
    revision other than the recorded one is a rollout that began when the controller created
    it (``created``, its ControllerRevision's ``creationTimestamp``; now when that is not
    known). The first revision ever seen is recorded without a start, as a Deployment's first
    template, unless its rollout is under way: then its start is known.
    """
    if revisions.update is None or not revisions.caught_up:
        return previous
    if previous is not None and previous.template_hash == revisions.update:
        return previous
    if previous is None and not revisions.rolling:
        return Rollout(template_hash=revisions.update)
    started = created if created is not None else now
    return Rollout(template_hash=revisions.update, started_at=utc_seconds(started))


def baseline_instant(metric: MetricSpec, rollout: Rollout | None, now: datetime) -> datetime | None:
    """Return when to evaluate ``metric``'s baseline; None when it has none or none yet."""
    baseline = metric.baseline
    if metric.max_increase is None or baseline is None:
        return None
    if baseline.offset_seconds is not None:
        return now - timedelta(seconds=baseline.offset_seconds)
    return rollout.started_at if rollout is not None else None
