"""Detect the target's rollouts (``status.rollout``), each kind by what its controller shows.

What a rollout means for the baseline is in docs/resource.md; how each kind's is detected in
docs/status.md#rollouts-statusrollout.

The reconciler asks the kind's ``WorkloadKind.rollout``. A Deployment's hashes its
``spec.template`` with ``template_hash`` and asks ``next_rollout`` (both the ``deployment``
kind's). A kind whose controller records revisions (a StatefulSet, a DaemonSet):
``sentinel_cluster.revisions`` reads them, ``controller_revisions`` asks the kind which one it
rolls out and whether pods of older ones still run, and ``next_revision_rollout`` (``_kind``,
the ``rollout`` those kinds share) says what ``status.rollout`` becomes. The reconciler measures
``beforeRollout`` baselines at its ``startedAt`` and passes it to ``decide`` in the Observation;
``decide`` records it and emits ``RolloutDetected`` when the key changed (``is_new``). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sentinel_core.status import Rollout
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
