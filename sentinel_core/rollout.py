"""Detect the target's rollouts: a change of its pod template (``status.rollout``).

What a rollout means for the baseline is in docs/resource.md.

The reconciler hashes the Deployment's ``spec.template`` with ``template_hash``, asks
``next_rollout`` what ``status.rollout`` becomes, measures ``beforeRollout`` baselines at its
``startedAt`` (``baseline_instant``), and passes the result to ``decide`` in the Observation;
``decide`` records it and emits ``RolloutDetected`` when the hash changed. Pure.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from sentinel_core.spec import MetricSpec
from sentinel_core.status import Rollout
from sentinel_core.values import utc_seconds

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


def baseline_instant(metric: MetricSpec, rollout: Rollout | None, now: datetime) -> datetime | None:
    """Return when to evaluate ``metric``'s baseline; None when it has none or none yet."""
    baseline = metric.baseline
    if metric.max_increase is None or baseline is None:
        return None
    if baseline.offset_seconds is not None:
        return now - timedelta(seconds=baseline.offset_seconds)
    return rollout.started_at if rollout is not None else None
