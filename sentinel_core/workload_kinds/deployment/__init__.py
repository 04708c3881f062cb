"""A Deployment: held by ``spec.paused``; a rollout is a new pod template (a new ReplicaSet).

Its ``rollout`` hashes its ``spec.template`` with ``template_hash`` (or takes the hash a cache
kept, ``TEMPLATE_HASH``) and asks ``next_rollout`` (docs/status.md#rollouts-statusrollout); its
revision objects are its ReplicaSets; ``sentinel_cluster.replicasets`` reads its sides.
"""

from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.workload_kinds._kind import WorkloadKind, labelled
from sentinel_core.workload_kinds.deployment._pause import held, hold, rehold, trust
from sentinel_core.workload_kinds.deployment._rollout import (
    POD_TEMPLATE_HASH,
    TEMPLATE_HASH,
    next_rollout,
    replicaset_template_hash,
    revision_numbers,
    rollout,
    template_hash,
    workload_template_hash,
)

KIND = WorkloadKind(
    name=DEPLOYMENT,
    held=held,
    hold=hold,
    rehold=rehold,
    trust=trust,
    rollout=rollout,
    # A ReplicaSet's copy of the pod template carries the label the controller adds.
    revision_key=labelled(POD_TEMPLATE_HASH),
    revision_plural="replicasets",
    rollout_key=replicaset_template_hash,
    revision_numbers=revision_numbers,
)

__all__ = [
    "KIND",
    "TEMPLATE_HASH",
    "next_rollout",
    "replicaset_template_hash",
    "template_hash",
    "workload_template_hash",
]
