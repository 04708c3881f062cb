"""Find when a Deployment's current rollout began: its newest ReplicaSet's creation time.

The reconciler calls ``newest_replicaset_created`` only when the target's pod template changed
(SPEC §3.1, ``beforeRollout``): one list of the namespace's ReplicaSets by the Deployment's
label selector, kept to those the Deployment owns. RBAC: ``list`` on ``apps/replicasets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sentinel_cluster import kube
from sentinel_core.rollout import template_hash
from sentinel_core.values import parse_time

# The label the Deployment controller adds to each ReplicaSet's copy of the pod template.
_POD_TEMPLATE_HASH = "pod-template-hash"


def newest_replicaset_created(
    client: kube.KubeClient, deployment: Mapping[str, Any], current_hash: str
) -> datetime | None:
    """Return the newest owned ReplicaSet's ``creationTimestamp`` if it runs the current template.

    None when there is none, or when the newest one carries another template: the controller
    has not created the new ReplicaSet yet, or a rollback went back to an old one (whose
    creation time is not when this rollout began); the caller then takes "now".

    A cluster that serves no ReplicaSets (devcluster, which plays no controllers) answers 404:
    that is "none", not an error. Any other API error is raised as the ``KubeError`` it is.
    """
    metadata = deployment.get("metadata") or {}
    namespace, uid = metadata.get("namespace", ""), metadata.get("uid")
    selector = _selector(deployment)
    query = {"labelSelector": selector} if selector else None
    try:
        answer = client.request("GET", kube.replicasets_path(namespace), query=query)
    except kube.NotFound:
        return None
    owned = [
        (moment, item)
        for item in answer.get("items") or ()
        if isinstance(item, Mapping) and _owned_by(item, uid)
        for moment in [parse_time((item.get("metadata") or {}).get("creationTimestamp"))]
        if moment is not None
    ]
    if not owned:
        return None
    moment, newest = max(owned, key=lambda pair: pair[0])
    return moment if _template_hash(newest) == current_hash else None


def _template_hash(replicaset: Mapping[str, Any]) -> str:
    template = dict((replicaset.get("spec") or {}).get("template") or {})
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != _POD_TEMPLATE_HASH}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    template["metadata"] = metadata
    return template_hash(template)


def _selector(deployment: Mapping[str, Any]) -> str:
    # matchLabels only: the owner check below keeps the list exact whatever else selects.
    labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def _owned_by(item: Mapping[str, Any], uid: object) -> bool:
    owners = (item.get("metadata") or {}).get("ownerReferences") or ()
    return any(isinstance(o, Mapping) and o.get("uid") == uid for o in owners)
