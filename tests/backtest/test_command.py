"""``manage.py backtest`` on the real control plane, against a Prometheus holding the past.

The Deployment's past is ``tests.backtest.history``'s: a good template, a latency regression a
person rolled back, a good one. The command reads the ReplicaSets, replays the analysis every
5 s and answers exit 0 (it would have paused only the rolled-back rollout); a draft with a
tighter threshold pauses the good ones too: exit 1. An unknown analysis and Prometheus down
are one line and exit 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.manifests import analysis_manifest
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults
from tests.backtest.history import QUERY, make_history

pytestmark = [pytest.mark.server, pytest.mark.clusters("real")]

# The history's query with its app an argument.
TEMPLATE_QUERY = QUERY.replace('"web"', '"{{ args.app }}"')


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

        # An analysis whose metric comes from a template: resolved as the operator resolves
        # it (docs/templates.md), the same replay as the spec written out.
        _templated(kube_client, namespace, analysis["spec"], "slow-web")
        templated = _run(kube_cluster, prometheus.url, f"{namespace}/slow-web", "--json")
        assert templated.returncode == 0, templated.stderr
        again = json.loads(templated.stdout)
        assert [r["message"] for r in again["rollouts"]] == [
            r["message"] for r in result["rollouts"]
        ]
        # The newest rollout runs until now: the second backtest has replayed more of it.
        assert _verdicts(result).items() <= _verdicts(again).items()
        _templated(kube_client, namespace, analysis["spec"], "lost-web", ref="nothing")
        unresolved = _run(kube_cluster, prometheus.url, f"{namespace}/lost-web")
        assert unresolved.returncode == 2 and "Traceback" not in unresolved.stderr
        assert unresolved.stderr.strip().startswith(
            "CommandError: the templates cannot be resolved: "
        ), unresolved.stderr

        missing = _run(kube_cluster, prometheus.url, f"{namespace}/nope")
        assert missing.returncode == 2
        assert missing.stderr.strip() == f"CommandError: analysis {namespace}/nope not found"
        url = prometheus.url
    down = _run(kube_cluster, url, f"{namespace}/web-guard")
    assert down.returncode == 2 and "Traceback" not in down.stderr
    assert down.stderr.strip().startswith("CommandError: Prometheus is unavailable: ")


def _templated(
    client: kube.KubeClient,
    namespace: str,
    spec: dict[str, Any],
    name: str,
    *,
    ref: str = "latency",
) -> None:
    """Create template ``latency`` (the latency metric, its app an argument) and analysis
    ``name`` on ``spec``'s target, its metrics from template ``ref``."""
    template = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysisTemplate",
        "metadata": {"name": "latency", "namespace": namespace},
        "spec": {
            "args": [{"name": "app"}],
            "metrics": [{"name": "latency", "query": TEMPLATE_QUERY, "maxValue": 0.3}],
        },
    }
    path = f"/apis/{kube.GROUP}/{kube.VERSION}/namespaces/{namespace}/rolloutanalysistemplates"
    with contextlib.suppress(kube.Conflict):
        client.request("POST", path, body=template)
    body = {key: value for key, value in spec.items() if key != "metrics"}
    body.update(templates=[{"name": ref}], args=[{"name": "app", "value": "web"}])
    analysis = {**analysis_manifest(name, namespace, target="web", metrics=[]), "spec": body}
    client.request("POST", kube.analyses_path(namespace), body=analysis)


def _verdicts(result: dict[str, Any]) -> dict[tuple[int, str], str]:
    """(revision, instant) -> outcome of every replayed evaluation."""
    return {
        (r["revision"], e["at"]): e["outcome"] for r in result["rollouts"] for e in r["evaluations"]
    }


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
