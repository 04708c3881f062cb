"""What a DaemonSet rolls out: its status does not name its revisions, so they are ranked."""

from __future__ import annotations

from collections.abc import Sequence

from sentinel_core.values import integer
from sentinel_core.workload_kinds._kind import ControllerRevisions, Workload, caught_up

# A DaemonSet's older revisions compared with its newest: at most as many as a Deployment's
# old ReplicaSets, status.metricResults[].comparison.oldHashes' maxItems in the CRD.
MAX_OLD_REVISIONS = 20


def revisions(workload: Workload, ranked: Sequence[str] = ()) -> ControllerRevisions:
    """Return what the DaemonSet rolls out, ``ranked`` being the hashes of the
    ControllerRevisions it owns, highest ``revision`` first.

    It is rolling out while fewer of its pods are updated than scheduled
    (``updatedNumberScheduled < desiredNumberScheduled``), or its controller has not caught up
    with its latest spec yet.
    """
    status = workload.get("status") or {}
    seen = caught_up(workload)
    if not ranked:
        return ControllerRevisions(caught_up=seen)
    updated = integer(status.get("updatedNumberScheduled", 0)) or 0
    desired = integer(status.get("desiredNumberScheduled", 0)) or 0
    rolling = updated < desired or not seen
    old = tuple(ranked[1 : 1 + MAX_OLD_REVISIONS]) if rolling else ()
    return ControllerRevisions(ranked[0], old, seen)
