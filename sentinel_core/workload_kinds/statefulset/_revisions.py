"""What a StatefulSet rolls out: its status names both revisions."""

from __future__ import annotations

from collections.abc import Sequence

from sentinel_core.workload_kinds._kind import ControllerRevisions, Workload, caught_up


def revisions(workload: Workload, ranked: Sequence[str] = ()) -> ControllerRevisions:
    """Return what the StatefulSet rolls out: rolling while ``updateRevision`` differs from
    ``currentRevision`` (``ranked`` is not needed)."""
    status = workload.get("status") or {}
    seen = caught_up(workload)
    update, current = status.get("updateRevision"), status.get("currentRevision")
    if not isinstance(update, str) or not update:
        return ControllerRevisions(caught_up=seen)
    rolling = isinstance(current, str) and current and current != update
    return ControllerRevisions(update, (current,) if rolling else (), seen)
