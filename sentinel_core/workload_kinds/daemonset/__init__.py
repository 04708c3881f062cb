"""A DaemonSet: held by switching its ``updateStrategy`` to ``OnDelete``; a rollout is a new
ControllerRevision it owns (docs/status.md#pausing-each-kind)."""

from sentinel_core.kinds import DAEMON_SET
from sentinel_core.workload_kinds._kind import WorkloadKind, labelled, nothing
from sentinel_core.workload_kinds.daemonset._pause import held, hold
from sentinel_core.workload_kinds.daemonset._revisions import revisions

KIND = WorkloadKind(
    name=DAEMON_SET,
    held=held,
    hold=hold,
    rehold=nothing,
    revisions=revisions,
    lists_revisions=True,
    revision_key=labelled("controller-revision-hash"),
)

__all__ = ["KIND"]
