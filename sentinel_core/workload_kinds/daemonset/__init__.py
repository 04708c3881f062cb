"""A DaemonSet: held by switching its ``updateStrategy`` to ``OnDelete``; a rollout is a new
ControllerRevision it owns (docs/status.md#pausing-each-kind)."""

from sentinel_core.kinds import DAEMON_SET
from sentinel_core.workload_kinds._kind import WorkloadKind, labelled, nothing, revision_rollout
from sentinel_core.workload_kinds.daemonset._pause import KEPT_KEYS, held, hold, kept_problem, trust
from sentinel_core.workload_kinds.daemonset._revisions import revisions

KIND = WorkloadKind(
    name=DAEMON_SET,
    held=held,
    hold=hold,
    rehold=nothing,
    trust=trust,
    rollout=revision_rollout,
    revisions=revisions,
    lists_revisions=True,
    revision_key=labelled("controller-revision-hash"),
    kept_keys=KEPT_KEYS,
    kept_problem=kept_problem,
)

__all__ = ["KIND"]
