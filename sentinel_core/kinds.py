"""The workload kinds an analysis can guard, and what differs between them.

docs/resource.md#target describes them.

``spec.parse_spec`` checks ``target.kind`` against ``KINDS`` and gives a ``compare`` without
``by`` the kind's own label (``default_by``); ``sentinel_cluster.kube.workload_path`` finds the
object by its ``PLURALS`` entry; ``sentinel_core.target`` pauses each kind its own way. Pure.
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
