"""The workload kinds an analysis can guard, and what differs between them.

docs/resource.md#target describes them.

``spec.parse_spec`` checks ``target.kind`` against ``KINDS`` and gives a ``compare`` without
``by`` the kind's own label (``default_by``); ``sentinel_cluster.kube.workload_path`` finds the
object by its ``PLURALS`` entry; ``sentinel_core.workload_kinds`` pauses each kind its own way;
``compare`` and ``sequential`` say a missing side in the kind's own terms (``no_new_side``,
``no_old_side``). Pure.
"""

from __future__ import annotations

DEPLOYMENT = "Deployment"
STATEFUL_SET = "StatefulSet"
DAEMON_SET = "DaemonSet"
# The CRD's enum, in its order.
KINDS = (DEPLOYMENT, STATEFUL_SET, DAEMON_SET)
# apps/v1 resource names.
PLURALS = {DEPLOYMENT: "deployments", STATEFUL_SET: "statefulsets", DAEMON_SET: "daemonsets"}

# The series label that tells new pods from old: the pods' own label as Prometheus's Kubernetes
# discovery maps it (``labelmap`` of ``__meta_kubernetes_pod_label_(.+)``). A Deployment's pods
# carry their ReplicaSet's ``pod-template-hash``; a StatefulSet's and a DaemonSet's carry the
# ``controller-revision-hash`` of their ControllerRevision.
POD_TEMPLATE_HASH_LABEL = "pod_template_hash"
CONTROLLER_REVISION_HASH_LABEL = "controller_revision_hash"


def default_by(kind: str) -> str:
    """Return the ``compare.by`` label a metric of an analysis guarding ``kind`` defaults to."""
    return POD_TEMPLATE_HASH_LABEL if kind == DEPLOYMENT else CONTROLLER_REVISION_HASH_LABEL


def no_new_side(kind: str) -> str:
    """Return why a ``compare`` or ``sequential`` metric has no new pods to judge yet."""
    if kind == DEPLOYMENT:
        return "no comparison: the target has no ReplicaSet yet"
    return f"no comparison: the {kind} has no controller revision yet"


def no_old_side(kind: str) -> str:
    """Return why a ``compare`` or ``sequential`` metric has no old pods to compare with.

    A Deployment's old pods are those of its older ReplicaSets; a StatefulSet's and a
    DaemonSet's those of an older controller revision (docs/status.md#pausing-each-kind).
    """
    if kind == DEPLOYMENT:
        old = "no old ReplicaSet has replicas"
    else:
        old = f"no pods of the {kind} run an older controller revision"
    return (
        f"no comparison: {old} (the rollout finished or has not begun), so there are no old "
        "pods to compare the new ones with"
    )
