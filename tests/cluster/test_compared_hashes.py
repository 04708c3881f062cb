"""compared_hashes against both clusters: which pods are new and which old (docs/analysis.md).

On the real cluster the controller manager makes the ReplicaSets: the newest by the
``deployment.kubernetes.io/revision`` annotation is new, the others with replicas are old, and
a rollback (``kubectl rollout undo``) makes the old template the newest revision again.
devcluster makes no ReplicaSets (it serves the kind but plays no controller): none.
"""

from __future__ import annotations

from typing import Any

from sentinel_cluster import kube
from sentinel_cluster.replicasets import compared_hashes
from testkit.clusters import Cluster
from testkit.manifests import deployment_manifest
from testkit.waiting import wait_until


def _by_revision(client: kube.KubeClient, namespace: str) -> list[tuple[int, str, int]]:
    items = client.request("GET", kube.replicasets_path(namespace)).get("items") or []
    return sorted(
        (
            int(i["metadata"]["annotations"]["deployment.kubernetes.io/revision"]),
            i["metadata"]["labels"]["pod-template-hash"],
            i["spec"]["replicas"],
        )
        for i in items
    )


def _deployment(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return client.request("GET", kube.deployment_path(namespace, "web"))


def test_new_is_the_newest_revision_old_the_others_with_replicas(
    kube_cluster: Cluster, kube_client: kube.KubeClient, namespace: str, cluster_kind: str
) -> None:
    body = deployment_manifest("web", namespace, "shop/web:1.0", replicas=2)
    created = kube_client.request(
        "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body
    )
    if cluster_kind == "dev":
        assert compared_hashes(kube_client, created) == (None, ())
        return
    ((_, first, _),) = wait_until(
        lambda: _by_revision(kube_client, namespace), timeout=20, what="the first ReplicaSet"
    )
    assert compared_hashes(kube_client, _deployment(kube_client, namespace)) == (first, ())

    kube_cluster.kubectl("-n", namespace, "set", "image", "deployment/web", "app=shop/web:2.0")
    rolled = wait_until(
        lambda: len(found := _by_revision(kube_client, namespace)) == 2 and found,
        timeout=20,
        what="the new ReplicaSet",
    )
    second = rolled[1][1]
    assert compared_hashes(kube_client, _deployment(kube_client, namespace)) == (
        second,
        (first,),
    )

    # A rollback: the first template becomes revision 3, the newest; 2.0's pods are the old.
    kube_cluster.kubectl("-n", namespace, "rollout", "undo", "deployment/web")
    wait_until(
        lambda: max(_by_revision(kube_client, namespace))[1] == first,
        timeout=20,
        what="the rollback's revision",
    )
    new, old = compared_hashes(kube_client, _deployment(kube_client, namespace))
    assert new == first and old in ((second,), ())
