"""``manage.py backtest`` on the real control plane, against a Prometheus holding the past.

A Deployment gets three templates about eleven seconds apart, with a rollback in between that
``kubectl rollout undo`` makes (the controller moves the old ReplicaSet's revision to the top);
the latency its pods would have reported is written into Prometheus at those very instants
(testkit.backfill), bad only while the rolled-back template ran. The command reads the
ReplicaSets, replays the analysis every 5 s and answers exit 0 (it would have paused only the
rolled-back rollout); a draft with a tighter threshold pauses a good one too: exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube, past_revisions
from sentinel_core.backtest import past_rollouts
from testkit.backfill import backfilled
from testkit.clusters import Cluster
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults
from testkit.waiting import wait_until

pytestmark = [pytest.mark.server, pytest.mark.clusters("real")]

QUERY = 'max(lat{app="web"})'
GAP = 11.0


def _replicasets(client: kube.KubeClient, namespace: str) -> list[dict[str, Any]]:
    items = client.request("GET", kube.replicasets_path(namespace)).get("items") or []
    return [i for i in items if i["metadata"].get("ownerReferences")]


def _revision_of(client: kube.KubeClient, namespace: str, image: str) -> int:
    for item in _replicasets(client, namespace):
        if item["spec"]["template"]["spec"]["containers"][0]["image"] == image:
            return int(item["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
    return 0


def _change(cluster: Cluster, namespace: str, *args: str) -> None:
    cluster.kubectl(*args, "-n", namespace)
    time.sleep(GAP)


def _run(cluster: Cluster, prometheus: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = with_defaults(
        {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "SENTINEL_PROMETHEUS_URL": prometheus}
    )
    return subprocess.run(
        [sys.executable, str(MANAGE), "backtest", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_backtest_command_on_real_replicasets(
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_kind: str,
    tmp_path: Path,
) -> None:
    body = deployment_manifest("web", namespace, "shop/web:1")
    kube_client.request("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    wait_until(lambda: _revision_of(kube_client, namespace, "shop/web:1"), timeout=30)
    time.sleep(GAP)
    _change(kube_cluster, namespace, "set", "image", "deployment/web", "app=shop/web:2")
    undone = datetime.now(UTC)
    _change(kube_cluster, namespace, "rollout", "undo", "deployment/web")
    _change(kube_cluster, namespace, "set", "image", "deployment/web", "app=shop/web:3")
    assert wait_until(lambda: _revision_of(kube_client, namespace, "shop/web:1") == 3, 30)

    workload = kube_client.request("GET", kube.workload_path("Deployment", namespace, "web"))
    revisions = past_revisions.read(kube_client, "Deployment", workload)
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
    kube_client.request("POST", kube.analyses_path(namespace), body=analysis)

    # The latency the pods reported, every second: bad from the second template's creation
    # until the rollback.
    start = rollouts[0].started_at - timedelta(minutes=2)
    seconds = int((datetime.now(UTC) - start).total_seconds())
    samples = [
        ("lat", {"app": "web"}, 0.5 if bad_from <= moment < undone else 0.1, moment)
        for moment in (start + timedelta(seconds=s) for s in range(seconds))
    ]
    with backfilled(tmp_path / "prometheus", samples) as prometheus:
        text = _run(kube_cluster, prometheus.url, f"{namespace}/web-guard")
        print(text.stdout)
        assert text.returncode == 0, text.stderr
        assert "paused Deployment web: 2 consecutive failed evaluations" in text.stdout
        as_json = _run(kube_cluster, prometheus.url, f"{namespace}/web-guard", "--json")
        assert as_json.returncode == 0, as_json.stderr
        result = json.loads(as_json.stdout)
        first, bad, last = result["rollouts"]
        assert [r["revision"] for r in result["rollouts"]] == [1, 2, 4]
        assert bad["rolledBack"] and bad["evaluation"] == 2 and bad["metric"] == "latency"
        assert bad["value"] == "0.5" and bad["limit"] == 0.3
        assert first["wouldPauseAt"] is None and last["wouldPauseAt"] is None
        assert first["verdicts"]["pass"] >= 2 and first["verdicts"]["fail"] == 0
        assert result["summary"]["caught"][0]["revision"] == 2

        draft = tmp_path / "draft.yaml"
        spec = {
            **analysis["spec"],
            "metrics": [{"name": "latency", "query": QUERY, "maxValue": 0.05}],
        }
        draft.write_text(yaml.safe_dump(spec))
        tighter = _run(kube_cluster, prometheus.url, f"{namespace}/web-guard", "--spec", str(draft))
        print(tighter.stdout)
        assert tighter.returncode == 1, tighter.stderr
        assert "paused but not rolled back: 2" in tighter.stdout

        missing = _run(kube_cluster, prometheus.url, f"{namespace}/nope")
        assert missing.returncode == 2
        assert missing.stderr.strip() == f"CommandError: analysis {namespace}/nope not found"
        url = prometheus.url
    down = _run(kube_cluster, url, f"{namespace}/web-guard")
    assert down.returncode == 2 and "Traceback" not in down.stderr
    assert down.stderr.strip().startswith("CommandError: Prometheus is unavailable: ")
