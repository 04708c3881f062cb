"""docs/templates.md, "The library": each shipped cluster template against the series its
software exports, on the real control plane with running pods.

One scene for the whole library (the suite's time is scarce): the five templates of
deploy/components/template-library are applied as they ship; per template three Deployments of
2 pods on kwok's nodes, whose pods ``testkit.pod_server.PodServer`` serves with exactly that
convention's metric names, labels and buckets (``testkit.exporters``); the Prometheus of
tests/support/pod_fixtures.py discovers them through the API server. Each Deployment's analysis
is five lines and the template's arguments. All fifteen roll out at once, held with one new pod
beside the old ones (``minReadySeconds``), and are judged in parallel by one operator:

- ``<template>-errors``: the new pod fails 30 % of its requests (the old 1 %): paused by the
  template's error-rate guard;
- ``<template>-latency``: the new pod answers in 0.8 s (the old in 0.05 s): paused by its
  latency guard;
- ``<template>-good``: the new pod behaves as the old: never paused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import kubectl_apply
from testkit.exporters import EXPORTS_LABEL
from testkit.manifests import rollout_analysis
from testkit.observe import condition, deployment_paused, get_analysis
from testkit.operator import OperatorProcess
from testkit.paths import DEPLOY_DIR
from testkit.pod_server import Behaviour, PodServer, kwok_deployment
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

LIBRARY = DEPLOY_DIR / "components" / "template-library"
OLD = Behaviour(latency=0.05, error_rate=0.01, rps=20)
NEW = {
    "errors": Behaviour(latency=0.05, error_rate=0.3, rps=20),
    "latency": Behaviour(latency=0.8, error_rate=0.01, rps=20),
    "good": OLD,
}
# The metric of each template that guards each signal (its first the errors, its second the
# latency).
SIGNALS = ("errors", "latency")
GOOD_EVALUATIONS = 12


def _library() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((LIBRARY / "kustomization.yaml").read_text())
    return [yaml.safe_load((LIBRARY / name).read_text()) for name in kustomization["resources"]]


def _verdicts(evaluations: list[dict[str, Any]]) -> str:
    """Return each metric's verdicts over ``evaluations`` as letters, ``*`` where it paused."""
    lines: dict[str, str] = {}
    for row in evaluations:
        for result in row["metric_results"]:
            letter = str(result["verdict"])[:1] + ("*" if row["paused"] else "")
            lines[result["name"]] = lines.get(result["name"], "") + letter
    return "; ".join(f"{metric} {letters}" for metric, letters in lines.items())


def _args(template: str, name: str, namespace: str) -> list[dict[str, str]]:
    """The arguments an analysis of ``name`` gives ``template`` (its short rate windows suit
    the 5 s interval of the scene)."""
    given = {
        "http-server": {"service": name},
        "ingress-nginx": {"service": name, "window": "20s"},
        "envoy-gateway": {"cluster": f"httproute/{namespace}/{name}/rule/0", "window": "20s"},
    }.get(template, {})
    return [{"name": key, "value": value} for key, value in given.items()]


@pytest.fixture(scope="module")
def library(realcluster: RealCluster) -> Iterator[list[dict[str, Any]]]:
    """The library's cluster templates applied as shipped, deleted after the module."""
    templates = _library()
    for template in templates:
        kubectl_apply(realcluster, template)
    yield templates
    for template in templates:
        with contextlib.suppress(Exception):
            realcluster.kubectl(
                "delete", "cratmpl", template["metadata"]["name"], "--ignore-not-found"
            )


@pytest.fixture
def pods(realcluster: RealCluster, real_namespace: str) -> Iterator[PodServer]:
    api = realcluster.api_client()
    try:
        with PodServer(api, real_namespace, default=OLD, seed=42) as server:
            yield server
    finally:
        api.close()


@pytest.mark.slow
def test_each_template_pauses_its_signals_regression_and_not_a_good_rollout(
    realcluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    library: list[dict[str, Any]],
    pods: PodServer,
    pod_prometheus: PrometheusServer,
    real_operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    namespace = real_namespace
    templates = {t["metadata"]["name"]: t for t in library}
    assert sorted(templates) == [
        "envoy-gateway",
        "http-server",
        "ingress-nginx",
        "istio",
        "linkerd",
    ]
    scene = {
        f"{template}-{case}": (template, case) for template in templates for case in NEW
    }  # fmt: skip
    for name, (template, case) in scene.items():
        deployment = kwok_deployment(
            name, namespace, f"shop/{name}:1.0", pods.port, replicas=2, one_pod_at_a_time=True
        )
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        labels[EXPORTS_LABEL] = template
        # Linkerd's Prometheus takes the deployment label from the pod (the proxy's own label).
        labels["deployment"] = name
        kubectl_apply(realcluster, deployment)
        pods.behave(NEW[case], image=f"shop/{name}:2.0")
    for name in scene:
        realcluster.kubectl(
            "rollout", "status", "-n", namespace, f"deployment/{name}", "--timeout=120s"
        )
    for name, (template, _) in scene.items():
        spec = {
            "target": {"name": name},
            "templates": [{"name": template, "clusterScope": True}],
            "args": _args(template, name, namespace),
            "interval": "5s",
            "failureLimit": 2,
            "falsePauseRate": 0.01,
        }
        kubectl_apply(realcluster, rollout_analysis(name, namespace, spec))
    # Every analysis resolved its template and measured the old pods before the rollouts.
    for name in scene:
        wait_until(
            lambda name=name: (
                condition(get_analysis(real_client, namespace, name), "Ready").get("status")
                == "True"
            ),
            timeout=60,
            what=f"{name} Ready\n{real_operator.log[-3000:]}",
        )
    # The baselines are the values when each rollout begins, rates over 20 s (the arguments
    # above): every pod is scraped that long first. Ready says only that the template resolved;
    # under a full run's load Prometheus found the last Deployments' pods a few seconds before
    # the rollouts, and their baselines had no data (Inconclusive, never paused).
    pod_prometheus.wait_scraped(namespace, pods=2 * len(scene), seconds=25, at_least=20)
    for name in scene:
        real_client.request(
            "PATCH",
            kube.deployment_path(namespace, name),
            body={"spec": {"minReadySeconds": 3600, "progressDeadlineSeconds": 7200}},
            content_type="application/merge-patch+json",
        )
        realcluster.kubectl(
            "-n", namespace, "set", "image", f"deployment/{name}", f"app=shop/{name}:2.0"
        )

    bad = [name for name, (_, case) in scene.items() if case != "good"]
    table: dict[str, str] = {}
    try:
        wait_until(
            lambda: all(deployment_paused(real_client, namespace, name) for name in bad),
            timeout=180,
            what="every regression paused (the table below says which is not)",
        )
        good = [name for name, (_, case) in scene.items() if case == "good"]
        wait_until(
            lambda: all(
                len(real_operator.evaluations(namespace, name)) >= GOOD_EVALUATIONS for name in good
            ),
            timeout=GOOD_EVALUATIONS * 5 * 4,
            what=f"{GOOD_EVALUATIONS} evaluations of each good rollout",
        )
    finally:
        for name, (template, case) in scene.items():
            found = get_analysis(real_client, namespace, name)
            results = (found.get("status") or {}).get("metricResults") or []
            failed = [r["name"] for r in results if r.get("verdict") == "Fail"]
            paused = deployment_paused(real_client, namespace, name)
            table[name] = (
                f"{template:14} {case:8} {'paused' if paused else 'not paused':10} {failed}"
            )
        print("\ntemplate       signal   outcome    failing metrics")
        print("\n".join(table[name] for name in scene))
        # Each regression's verdicts per metric, evaluation by evaluation (P, F, I; * paused),
        # and what the operator discarded from a status it read back, if anything.
        for name in bad:
            print(f"\n{name}: {_verdicts(real_operator.evaluations(namespace, name))}")
            for result in get_analysis(real_client, namespace, name)["status"]["metricResults"]:
                print(f"  {result['name']}: {result.get('message')}")
        discarded = realcluster.kubectl(
            "get", "events", "-n", namespace, "--field-selector", "reason=StatusDiscarded"
        )
        print(f"\n$ kubectl get events --field-selector reason=StatusDiscarded\n{discarded.stdout}")
        # For the record: the library as kubectl lists it, and a five-line analysis's metrics.
        listed = realcluster.kubectl("get", "cratmpl").stdout
        print(f"\n$ kubectl get cratmpl\n{listed}")
        shown = get_analysis(real_client, namespace, "istio-errors")
        status = shown.get("status") or {}
        resolved = [
            {k: r.get(k) for k in ("name", "verdict", "message")}
            for r in status.get("metricResults") or []
        ]
        print(yaml.safe_dump({"spec": shown["spec"], "status.templates": status.get("templates")}))
        print(yaml.safe_dump({"status.metricResults (resolved)": resolved}, width=100))
    for name, (template, case) in scene.items():
        found = get_analysis(real_client, namespace, name)
        status = found["status"]
        assert status["templates"] == [{"name": template, "clusterScope": True, "generation": 1}], (
            name
        )
        metrics = [m["name"] for m in templates[template]["spec"]["metrics"]]
        assert [r["name"] for r in status["metricResults"]] == metrics, name
        if case == "good":
            assert not deployment_paused(real_client, namespace, name), table[name]
            assert condition(found, "RolloutPaused")["status"] == "False", table[name]
            assert not any(r["paused"] for r in real_operator.evaluations(namespace, name))
        else:
            assert deployment_paused(real_client, namespace, name), table[name]
            assert condition(found, "RolloutPaused")["reason"] == "FailureLimitReached", name
            # The guard of that signal paused it, not the other one: the verdicts of the
            # evaluation that paused. A sequential guard (http-server, istio, linkerd) still
            # says Fail in the last status: its evidence may dip under the bar after first
            # reaching it, while the old pods' spread is estimated (seen once as F, P, F, F
            # before the verdict stayed), but the Fail stays (docs/analysis.md#the-verdict-stays).
            guard = metrics[SIGNALS.index(case)]
            other = metrics[1 - SIGNALS.index(case)]
            pausing = [r for r in real_operator.evaluations(namespace, name) if r["paused"]]
            assert len(pausing) == 1, (name, table[name])
            verdicts = {r["name"]: r["verdict"] for r in pausing[0]["metric_results"]}
            assert verdicts[guard] == "Fail", (name, verdicts)
            assert verdicts[other] != "Fail", (name, verdicts)
            last = {r["name"]: r for r in status["metricResults"]}[guard]
            if last.get("sequential") is not None:
                assert last["verdict"] == "Fail", (name, last)
