"""A Deployment's past on the real control plane, and the latency its pods reported then.

Three templates about eleven seconds apart, with a rollback in between that ``kubectl rollout
undo`` makes (the controller moves the old ReplicaSet's revision to the top): revisions 1 (then
3), 2 and 4. The latency is written into a Prometheus at those very instants
(testkit.backfill), bad (0.5) only while the rolled-back template ran, 0.1 otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sentinel_cluster import kube, past_revisions
from sentinel_core.backtest import PastRollout, past_rollouts
from testkit.backfill import backfilled
from testkit.clusters import Cluster
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until

QUERY = 'max(lat{app="web"})'
GAP = 11.0


@dataclass(frozen=True)
class History:
    rollouts: tuple[PastRollout, ...]
    analysis: dict[str, Any]
    # The analysis as the API server answered its creation (for the mirror).
    created: dict[str, Any]
    prometheus: PrometheusServer


def _revision_of(client: kube.KubeClient, namespace: str, image: str) -> int:
    items = client.request("GET", kube.replicasets_path(namespace)).get("items") or []
    for item in items:
        if item["spec"]["template"]["spec"]["containers"][0]["image"] == image:
            return int(item["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
    return 0


def _change(cluster: Cluster, namespace: str, *args: str) -> None:
    cluster.kubectl(*args, "-n", namespace)
    time.sleep(GAP)


def make_history(
    cluster: Cluster, client: kube.KubeClient, namespace: str, workdir: Path
) -> History:
    """Make the Deployment's past and the analysis ``web-guard``; return a Prometheus to start."""
    body = deployment_manifest("web", namespace, "shop/web:1")
    client.request("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    wait_until(lambda: _revision_of(client, namespace, "shop/web:1"), timeout=30)
    time.sleep(GAP)
    _change(cluster, namespace, "set", "image", "deployment/web", "app=shop/web:2")
    undone = datetime.now(UTC)
    _change(cluster, namespace, "rollout", "undo", "deployment/web")
    _change(cluster, namespace, "set", "image", "deployment/web", "app=shop/web:3")
    assert wait_until(lambda: _revision_of(client, namespace, "shop/web:1") == 3, 30)

    workload = client.request("GET", kube.workload_path("Deployment", namespace, "web"))
    revisions = past_revisions.read(client, "Deployment", workload)
    assert sorted(r.numbers for r in revisions) == [(1, 3), (2,), (4,)]
    rollouts = past_rollouts(revisions, now=datetime.now(UTC))
    assert [r.rolled_back for r in rollouts] == [False, True, False]
    bad_from = rollouts[1].started_at

    analysis = analysis_manifest(
        "web-guard",
        namespace,
        target="web",
        interval="5s",
        failure_limit=2,
        metrics=[{"name": "latency", "query": QUERY, "maxValue": 0.3}],
    )
    created = client.request("POST", kube.analyses_path(namespace), body=analysis)

    # The latency the pods reported, every second: bad from the second template's creation
    # until the rollback.
    start = rollouts[0].started_at - timedelta(minutes=2)
    seconds = int((datetime.now(UTC) - start).total_seconds())
    samples = [
        ("lat", {"app": "web"}, 0.5 if bad_from <= moment < undone else 0.1, moment)
        for moment in (start + timedelta(seconds=s) for s in range(seconds))
    ]
    return History(rollouts, analysis, created, backfilled(workdir, samples))
