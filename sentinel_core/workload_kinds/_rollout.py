"""Detect the target's rollouts (``status.rollout``), each kind by what its controller shows.

What a rollout means for the baseline is in docs/resource.md; how each kind's is detected in
docs/status.md#rollouts-statusrollout.

A Deployment: the reconciler hashes its ``spec.template`` with ``template_hash`` and asks
``next_rollout`` (both the ``deployment`` kind's). A kind whose controller records revisions
(a StatefulSet, a DaemonSet): ``sentinel_cluster.revisions`` reads them, ``controller_revisions``
asks the kind which one it rolls out and whether pods of older ones still run, and
``next_revision_rollout`` says what ``status.rollout`` becomes. The reconciler measures
``beforeRollout`` baselines at its ``startedAt`` and passes it to ``decide`` in the Observation;
``decide`` records it and emits ``RolloutDetected`` when the key changed (``is_new``). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sentinel_core.status import Rollout
from sentinel_core.values import utc_seconds
from sentinel_core.workload_kinds._kind import ControllerRevisions
from sentinel_core.workload_kinds._registry import kind_named


def is_new(previous: Rollout | None, current: Rollout | None) -> bool:
    """Return whether ``current`` is a rollout detected now (a changed template)."""
    return (
        previous is not None
        and current is not None
        and previous.template_hash != current.template_hash
    )


def controller_revisions(
    kind: str, workload: Mapping[str, Any], ranked: Sequence[str] = ()
) -> ControllerRevisions:
    """Return what ``workload``'s controller rolls out (docs/status.md#rollouts-statusrollout).

    ``ranked``: the hashes of the ControllerRevisions it owns, highest ``revision`` first, for a
    kind whose status does not name them (``WorkloadKind.lists_revisions``: a DaemonSet).
    """
    revisions = kind_named(kind).revisions
    if revisions is None:
        raise ValueError(f"a {kind} records no controller revisions")
    return revisions(workload, ranked)


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
