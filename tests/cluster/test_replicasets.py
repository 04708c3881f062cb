"""newest_replicaset_created against both clusters: when the target's current rollout began.

On the real cluster the controller manager makes the ReplicaSets: the newest one's creation
time counts only while it runs the Deployment's current template (hashed without the
``pod-template-hash`` label the controller adds). devcluster makes no ReplicaSets (it serves
the kind but plays no controllers): "none".
"""

from __future__ import annotations

from typing import Any

from sentinel_cluster import kube
from sentinel_cluster.replicasets import newest_replicaset_created
from sentinel_core.workload_kinds import template_hash
from testkit.manifests import deployment_manifest
from testkit.waiting import wait_until


def _owned(client: kube.KubeClient, namespace: str) -> list[dict[str, Any]]:
    items = client.request("GET", kube.replicasets_path(namespace)).get("items") or []
    return [i for i in items if i["metadata"].get("ownerReferences")]


def test_the_newest_replicaset_running_the_current_template(
    kube_client: kube.KubeClient, namespace: str, cluster_kind: str
) -> None:
    body = deployment_manifest("web", namespace, "shop/web:1.0")
    created = kube_client.request(
        "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body
    )
    current = template_hash(created["spec"]["template"])
    if cluster_kind == "dev":
        assert newest_replicaset_created(kube_client, created, current) is None
        return
    replicasets = wait_until(
        lambda: _owned(kube_client, namespace), timeout=20, what="the controller's ReplicaSet"
    )
    moment = newest_replicaset_created(kube_client, created, current)
    assert moment is not None
    assert moment.strftime("%Y-%m-%dT%H:%M:%SZ") == replicasets[0]["metadata"]["creationTimestamp"]
    # A template the newest ReplicaSet does not run (not created yet, or a rollback): none.
    assert newest_replicaset_created(kube_client, created, "0" * 16) is None
