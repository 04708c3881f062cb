"""The target (workload) kinds, each a package behind one surface, and the one registry.

A kind is a ``WorkloadKind`` (``_kind``: how its object says it is held, how a pause holds it,
what its controller rolls out): ``deployment``, ``statefulset`` and ``daemonset``
(docs/status.md#pausing-each-kind). ``KINDS`` registers them and ``kind_named`` picks one by
``spec.target.kind``. The kind-free halves ask the kind: ``read_record``, the pause record read
strictly and checked against the target (``_record``), ``TargetState`` and the pause, release
and clean-up patches (``_target``), the rollout's key and start (``_rollout``). Nothing outside
a kind's package imports its private modules (an import-linter contract); docs/architecture.md
("Adding a target kind") says which files a new kind touches.
"""

from sentinel_core.workload_kinds._kind import (
    ControllerRevisions,
    WorkloadKind,
    next_revision_rollout,
)
from sentinel_core.workload_kinds._record import read_record
from sentinel_core.workload_kinds._registry import KINDS, kind_named
from sentinel_core.workload_kinds._rollout import controller_revisions, is_new
from sentinel_core.workload_kinds._target import (
    PauseTarget,
    Release,
    Released,
    TargetState,
    clean_up_patch,
    is_paused,
    parse_paused_by,
    pause_patch,
    paused_by_of,
    release_patch,
)
from sentinel_core.workload_kinds.deployment import (
    TEMPLATE_HASH,
    next_rollout,
    replicaset_template_hash,
    template_hash,
    workload_template_hash,
)

__all__ = [
    "KINDS",
    "TEMPLATE_HASH",
    "ControllerRevisions",
    "PauseTarget",
    "Release",
    "Released",
    "TargetState",
    "WorkloadKind",
    "clean_up_patch",
    "controller_revisions",
    "is_new",
    "is_paused",
    "kind_named",
    "next_revision_rollout",
    "next_rollout",
    "parse_paused_by",
    "pause_patch",
    "paused_by_of",
    "read_record",
    "release_patch",
    "replicaset_template_hash",
    "template_hash",
    "workload_template_hash",
]
