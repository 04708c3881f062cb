"""The list-and-watch loop (``sentinel_cluster.informer.ListWatch``) against both clusters.

The operator's caches and its watch of RolloutAnalyses run only while their replica leads
(docs/architecture.md#reads-from-caches): a cache answers while leading, forgets what it held
when the lead is lost (a follower must not hand out what it stopped watching), and lists afresh
when leading again, so that a change made meanwhile is seen.
"""

from __future__ import annotations

import threading

from sentinel_cluster import kube
from sentinel_cluster.informer import Informer, strip_workload
from testkit.clusters import Cluster
from testkit.manifests import deployment_manifest
from testkit.waiting import wait_until


def test_a_cache_forgets_when_its_replica_stops_leading_and_lists_again_when_it_leads(
    kube_cluster: Cluster, kube_client: kube.KubeClient, namespace: str
) -> None:
    deployments = kube.workloads_path("Deployment", namespace)
    kube_client.request("POST", deployments, body=deployment_manifest("web", namespace))
    # A client of its own: the loop runs in a thread beside the test's requests.
    cache = Informer(
        kube.KubeClient(kube_cluster.api_client()),
        deployments,
        transform=strip_workload,
        watch_timeout=1,
    )
    leading = threading.Event()
    leading.set()
    stop = threading.Event()
    thread = threading.Thread(
        target=cache.run, args=(stop,), kwargs={"active": leading.is_set}, daemon=True
    )
    thread.start()
    try:
        wait_until(lambda: cache.live and cache.get(namespace, "web") is not None, timeout=10)
        assert cache.lists == 1

        leading.clear()
        # The watch looks at the lead between events and ends within its 1 s timeout.
        wait_until(lambda: not cache.live and len(cache) == 0, timeout=10)
        assert cache.resource_version == ""
        assert cache.get(namespace, "web") is None
        kube_client.request("POST", deployments, body=deployment_manifest("later", namespace))
        assert cache.get(namespace, "later") is None

        leading.set()
        wait_until(lambda: cache.live and cache.get(namespace, "later") is not None, timeout=10)
        assert cache.lists == 2
        assert cache.get(namespace, "web") is not None
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
