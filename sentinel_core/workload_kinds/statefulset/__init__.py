"""A StatefulSet: held by raising its ``rollingUpdate.partition`` (or by ``OnDelete``); a rollout
is a new ``updateRevision`` in its status (docs/status.md#pausing-each-kind)."""

from sentinel_core.kinds import STATEFUL_SET
from sentinel_core.workload_kinds._kind import WorkloadKind, named, nothing, revision_rollout
from sentinel_core.workload_kinds.statefulset._pause import (
    KEPT_KEYS,
    held,
    hold,
    kept_problem,
    trust,
)
from sentinel_core.workload_kinds.statefulset._revisions import revisions

KIND = WorkloadKind(
    name=STATEFUL_SET,
    held=held,
    hold=hold,
    rehold=nothing,
    trust=trust,
    rollout=revision_rollout,
    revisions=revisions,
    # Its pods are labelled with their ControllerRevision's name.
    revision_key=named,
    kept_keys=KEPT_KEYS,
    kept_problem=kept_problem,
)

__all__ = ["KIND"]
