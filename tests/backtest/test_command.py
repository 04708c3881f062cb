"""``manage.py backtest`` on the real control plane, against a Prometheus holding the past.

The Deployment's past is ``tests.backtest.history``'s: a good template, a latency regression a
person rolled back, a good one. The command reads the ReplicaSets, replays the analysis every
5 s and answers exit 0 (it would have paused only the rolled-back rollout); a draft with a
tighter threshold pauses the good ones too: exit 1. An unknown analysis and Prometheus down
are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults
from tests.backtest.history import QUERY, make_history

pytestmark = [pytest.mark.server, pytest.mark.clusters("real")]


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
    history = make_history(kube_cluster, kube_client, namespace, tmp_path / "prometheus")
    analysis = history.analysis
    with history.prometheus as prometheus:
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


def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "gone", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    result = subprocess.run(
        [sys.executable, str(MANAGE), "backtest", "shop/web-guard"],
        env=with_defaults({**os.environ, "KUBECONFIG": str(kubeconfig)}),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("CommandError: cannot read analysis shop/web-guard: ")


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    for args, message in (
        (["shop"], "the analysis is NAMESPACE/NAME"),
        (["shop/web", "--max-duration", "soon"], "--max-duration: "),
        (["shop/web", "--max-duration", "25h"], "--max-duration: at most 24h"),
        (["shop/web", "--spec", str(tmp_path / "none.yaml")], "--spec "),
    ):
        result = subprocess.run(
            [sys.executable, str(MANAGE), "backtest", *args],
            env=with_defaults(dict(os.environ)),
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.strip().startswith(f"CommandError: {message}"), result.stderr
