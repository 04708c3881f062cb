"""A StatefulSet: held by raising its ``rollingUpdate.partition`` (or by ``OnDelete``); a rollout
is a new ``updateRevision`` in its status (docs/status.md#pausing-each-kind)."""

from sentinel_core.kinds import STATEFUL_SET
from sentinel_core.workload_kinds._kind import WorkloadKind, named, nothing
from sentinel_core.workload_kinds.statefulset._pause import held, hold
from sentinel_core.workload_kinds.statefulset._revisions import revisions

KIND = WorkloadKind(
    name=STATEFUL_SET,
    held=held,
    hold=hold,
    rehold=nothing,
    revisions=revisions,
    # Its pods are labelled with their ControllerRevision's name.
    revision_key=named,
)

__all__ = ["KIND"]
