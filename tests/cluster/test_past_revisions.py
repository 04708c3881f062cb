"""past_revisions.read on the real control plane: each target kind's revisions as the backtest
sees them (docs/backtest.md), and a rollback marked.

A StatefulSet's and a DaemonSet's controllers record each template as a ControllerRevision; a
template brought back (``kubectl rollout undo``) reuses the old one with a higher ``revision``.
devcluster plays no controllers: it serves none, so a target there has no past (not an error).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from sentinel_cluster import kube, past_revisions
from sentinel_core.backtest import past_rollouts
from testkit.clusters import Cluster
from testkit.manifests import workload_manifest
from testkit.waiting import wait_until

PLURAL = {"StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "Deployment": "deployments"}


@pytest.mark.parametrize("kind", ["StatefulSet", "DaemonSet"])
def test_controller_revisions_and_a_rollback(
    kind: str,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_kind: str,
) -> None:
    body = workload_manifest(kind, "db", namespace, "shop/db:1")
    kube_client.request("POST", f"/apis/apps/v1/namespaces/{namespace}/{PLURAL[kind]}", body=body)

    def read() -> tuple[past_revisions.PastRevision, ...]:
        workload = kube_client.request("GET", kube.workload_path(kind, namespace, "db"))
        return past_revisions.read(kube_client, kind, workload)

    if cluster_kind == "dev":
        assert read() == ()
        return
    wait_until(lambda: len(read()) == 1, timeout=30, what="the first ControllerRevision")
    for change in (
        ("set", "image", f"{kind.lower()}/db", "app=shop/db:2"),
        ("rollout", "undo", f"{kind.lower()}/db"),
    ):
        highest = max(max(r.numbers) for r in read())
        # Creation times are whole seconds: a rollout a second later is a later one.
        time.sleep(1.1)
        kube_cluster.kubectl(*change, "-n", namespace)
        wait_until(
            lambda highest=highest: max(max(r.numbers) for r in read()) > highest,
            timeout=30,
            what=lambda change=change: f"a new revision after {change}: {read()}",
        )
    revisions = read()
    assert sorted(r.numbers for r in revisions) == [(2,), (3,)]
    assert all(r.key for r in revisions)
    first, second = past_rollouts(revisions, now=datetime.now(UTC))
    # The first template came back (its revision now 3): the second one was rolled back.
    assert (first.revision, second.revision) == (3, 2)
    assert second.rolled_back
