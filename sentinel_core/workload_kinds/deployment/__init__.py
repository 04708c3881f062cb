"""A Deployment: held by ``spec.paused``; a rollout is a new pod template (a new ReplicaSet).

The reconciler hashes its ``spec.template`` with ``template_hash`` and asks ``next_rollout``
(docs/status.md#rollouts-statusrollout); ``sentinel_cluster.replicasets`` reads its sides.
"""

from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.workload_kinds._kind import WorkloadKind, labelled
from sentinel_core.workload_kinds.deployment._pause import held, hold, rehold, trust
from sentinel_core.workload_kinds.deployment._rollout import next_rollout, template_hash

KIND = WorkloadKind(
    name=DEPLOYMENT,
    held=held,
    hold=hold,
    rehold=rehold,
    trust=trust,
    # A ReplicaSet's copy of the pod template carries the label the controller adds.
    revision_key=labelled("pod-template-hash"),
)

__all__ = ["KIND", "next_rollout", "template_hash"]
