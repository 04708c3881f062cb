"""A Deployment's rollouts: a changed ``spec.template``, begun when its ReplicaSet was created."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

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
