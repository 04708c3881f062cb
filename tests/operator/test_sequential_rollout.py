"""docs/analysis.md ("Sequential judgment") end to end: real ReplicaSets, Prometheus, pods.

The session's real control plane (kube-apiserver, controller manager, scheduler, kwok's
simulated node) runs two Deployments of 4 pods; ``testkit.pod_server.PodServer`` serves each
Running pod's counters at the pod's own IP, a random outcome per request (5 % errors unless
told); the Prometheus 3.x built by ``make realcluster`` discovers the pods through the API
server, so every series carries its ReplicaSet's real ``pod_template_hash`` and its ``pod``. The
operator asks that Prometheus through a fault proxy. ``kubectl set image`` starts each rollout;
``minReadySeconds: 3600`` holds it mid-way (4 old pods, 1 new) for as long as the test needs.

- ``bad``: the new pods fail 3 times as many requests as the old ones: paused, the status's evidence
  at least the evidence needed; the history's per-evaluation counts add up to the status's.
- ``good``: equal rates for at least 30 evaluations, never paused; meanwhile the operator is
  SIGKILLed (the evidence continues from the status: same ``since``, ``through`` on the grid of
  whole steps, every step counted once) and Prometheus is unreachable for several steps (those
  steps are read at once when it answers again and counted then).

Only on realcluster: devcluster plays no controllers, so it has no ReplicaSets and a sequential
metric there is always ``NoComparison`` (covered in tests/core/test_sequential_read.py).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats

from sentinel_cluster import kube
from sentinel_core.metric_kinds.sequential import LOOKBACK_SECONDS
from testkit.clusters import kube_client as admin_kube_client
from testkit.clusters import kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import rollout_analysis
from testkit.observe import condition, deployment_paused, get_analysis
from testkit.operator import OperatorProcess
from testkit.pod_server import Behaviour, PodServer, kwok_deployment, replica_set_hashes
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

INTERVAL = 5
REPLICAS = 4
ERROR_RATE = 0.05
# Requests per pod and second. With 4 old pods the margin is widened by what their spread, as
# far as so few pods and counts can tell it, lets pods differ by luck (docs/analysis.md, "Pods
# that stay different"); at 20 a second (5 bad events per pod and step) that estimate is mostly
# Poisson noise early on, and the replay tool put 3 x the errors unpaused after 18 steps in
# 13 % of rollouts; at 80, in none of 400 (paused by step 13 in 99 %).
RPS = 80
# needed = 1 / 0.01 = 100; a 25 % margin keeps a good rollout far from it.
SPEC_FIELDS = {"interval": f"{INTERVAL}s", "failureLimit": 1, "falsePauseRate": 0.01}


# The stage is tests/support/pod_fixtures.py's, on the session realcluster: the module's one
# namespace (its three tests share the rollouts made there), the Prometheus discovering it, the
# fault proxy in front of that and the operator asking through the proxy.


@pytest.fixture(scope="module")
def client(real_client: kube.KubeClient) -> kube.KubeClient:
    return real_client


@pytest.fixture(scope="module")
def seq_namespace(real_namespaces: list[str]) -> str:
    return real_namespaces[0]


@pytest.fixture(scope="module")
def pods(realcluster: RealCluster, seq_namespace: str) -> Iterator[PodServer]:
    api = realcluster.api_client()
    default = Behaviour(latency=0.1, error_rate=ERROR_RATE, rps=RPS)
    try:
        with PodServer(api, seq_namespace, default=default, seed=26) as server:
            yield server
    finally:
        api.close()


@pytest.fixture(scope="module")
def seq_prometheus(pod_prometheus: PrometheusServer) -> PrometheusServer:
    return pod_prometheus


@pytest.fixture(scope="module")
def proxy(pod_fault_proxy: FaultProxy) -> FaultProxy:
    return pod_fault_proxy


@pytest.fixture(scope="module")
def seq_operator(real_operator: OperatorProcess) -> OperatorProcess:
    return real_operator


def _analysis(name: str, namespace: str, percent: float = 25) -> dict[str, Any]:
    selector = f'namespace="{namespace}", app="{name}"'
    metric = {
        "name": "errors-vs-old",
        "sequential": {
            "bad": f"http_request_errors_total{{{selector}}}",
            "total": f"http_requests_total{{{selector}}}",
            "maxIncrease": {"percent": percent},
            "minEvents": 100,
        },
    }
    spec = {"target": {"kind": "Deployment", "name": name}, "metrics": [metric], **SPEC_FIELDS}
    return rollout_analysis(name, namespace, spec)


# The Deployments and their new pods' error rates: 3 times the old pods', and the same.
RATES = {"bad": 3 * ERROR_RATE, "good": ERROR_RATE}


@pytest.fixture(scope="module")
def rollouts(
    realcluster: RealCluster,
    pods: PodServer,
    seq_namespace: str,
    seq_prometheus: PrometheusServer,
    seq_operator: OperatorProcess,
) -> dict[str, tuple[str, str]]:
    """Both Deployments mid-way through a rollout, each with its analysis; name -> hashes.

    Both roll out at once and are judged side by side, so that the good one's thirty
    evaluations run while the other tests do.
    """
    namespace = seq_namespace
    for name in RATES:
        deployment = kwok_deployment(
            name, namespace, f"shop/{name}:1.0", pods.port, replicas=REPLICAS
        )
        deployment["spec"]["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        }
        kubectl_apply(realcluster, deployment)
    hashes: dict[str, tuple[str, str]] = {}
    for name, rate in RATES.items():
        realcluster.kubectl(
            "rollout", "status", "-n", namespace, f"deployment/{name}", "--timeout=90s"
        )
        ((_, old_hash, _),) = replica_set_hashes(realcluster, namespace, name)
        pods.behave(Behaviour(latency=0.1, error_rate=rate, rps=RPS), image=f"shop/{name}:2.0")
        # The new pod is Ready at once but available only after an hour: the rollout holds
        # with four old pods and one new one.
        admin_kube_client(realcluster).request(
            "PATCH",
            kube.deployment_path(namespace, name),
            body={"spec": {"minReadySeconds": 3600, "progressDeadlineSeconds": 7200}},
            content_type="application/merge-patch+json",
        )
        realcluster.kubectl(
            "-n", namespace, "set", "image", f"deployment/{name}", f"app=shop/{name}:2.0"
        )
        found = wait_until(
            lambda name=name: (
                (listed := replica_set_hashes(realcluster, namespace, name))
                and len(listed) == 2
                and listed
            ),
            timeout=30,
            what=f"the new ReplicaSet of {name}",
        )
        hashes[name] = (old_hash, found[0][1])
    pods.wait_served(
        lambda served: {h for _, h in served.values()} >= {new for _, new in hashes.values()},
        timeout=30,
    )
    # Counting begins at the first step with events on both sides, and the old pods it sees
    # then are those the guarantee counts (docs/analysis.md, "Where the bound is stated"):
    # under a full run's load Prometheus found one old pod a step late (3 of 4, Conditional).
    # The analyses begin once every pod was scraped for most of a step.
    seq_prometheus.wait_scraped(
        namespace, pods=len(RATES) * (REPLICAS + 1), seconds=INTERVAL, at_least=INTERVAL - 1
    )
    for name in RATES:
        kubectl_apply(realcluster, _analysis(name, namespace))
    return hashes


def _widening(pods: list[dict[str, Any]], *, new_pods: int, old_pods: int) -> float:
    """The margin's widening that the old pods' sums imply, computed apart from the core with
    SciPy: their chi-square's excess over its degrees of freedom per unit of its weight (the
    persistent spread), Student's t at 1 % with the pods less one (at least 3) degrees of
    freedom (docs/analysis.md, "Pods that stay different"). Each side's pods served alike, so
    their effective numbers are the pods'."""
    bad = np.array([float(p["bad"]) for p in pods])
    total = np.array([float(p["total"]) for p in pods])
    p = bad.sum() / total.sum()
    chi2 = stats.chisquare(bad, total * p).statistic / (1 - p)
    weight = p * (total.sum() - (total**2).sum() / total.sum()) / (1 - p)
    spread = max(0.0, (chi2 - (len(bad) - 1)) / weight)
    freedom = max(total.sum() ** 2 / (total**2).sum() - 1, 3)
    sd = math.sqrt(spread * (1 / new_pods + 1 / old_pods))
    return math.exp(stats.t.ppf(0.99, freedom) * sd)


def _sequential(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    results = (get_analysis(client, namespace, name).get("status") or {}).get("metricResults")
    return dict((results or [{}])[0].get("sequential") or {})


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _shown(cluster: RealCluster, namespace: str, name: str) -> str:
    shown = cluster.kubectl("-n", namespace, "get", "ra", name, "-o", "yaml").stdout
    return yaml.safe_dump({"status": yaml.safe_load(shown)["status"]}, sort_keys=False)


def test_new_pods_with_three_times_the_errors_are_paused(
    realcluster: RealCluster,
    rollouts: dict[str, tuple[str, str]],
    client: kube.KubeClient,
    seq_namespace: str,
    pods: PodServer,
    seq_prometheus: PrometheusServer,
    seq_operator: OperatorProcess,
) -> None:
    namespace = seq_namespace
    old_hash, new_hash = rollouts["bad"]
    try:
        wait_until(
            lambda: deployment_paused(client, namespace, "bad"), timeout=90, what="the pause"
        )
        paused = wait_until(
            lambda: (
                condition(found := get_analysis(client, namespace, "bad"), "RolloutPaused").get(
                    "reason"
                )
                == "FailureLimitReached"
                and found
            ),
            timeout=20,
            what="RolloutPaused=True",
        )
    finally:
        print(f"\n$ kubectl get ra bad -o yaml   # status\n{_shown(realcluster, namespace, 'bad')}")
    result = paused["status"]["metricResults"][0]
    state = result["sequential"]
    assert result["verdict"] == "Fail"
    assert state["needed"] == 100 and state["evidence"] >= state["needed"]
    assert state["key"].startswith(f"{new_hash}/")
    # The error rates as played, 15 % against 5 % (the evidence may cross before minEvents:
    # the budget holds at any number of events, minEvents only withholds a Pass).
    assert state["oldTotal"] >= 4 * state["newTotal"] * 0.5
    assert state["ratio"] is None or state["ratio"] > 1.5, state
    # The ratio's bounds hold the rate as played (3 x) and rule out "no worse" at the pause;
    # the 4 old pods' counts are kept by name, and the margin is widened by what their sums
    # let 1 new and 4 old pods differ by luck.
    assert state["guarantee"] == "Stated", state
    assert 1 < state["ratioLower"] < 3, state
    assert state["ratioUpper"] is None or state["ratioUpper"] > 3, state
    assert len(state["podSpread"]["pods"]) == 4, state
    widening = _widening(state["podSpread"]["pods"], new_pods=1, old_pods=REPLICAS)
    assert state["podSpread"]["widening"] == pytest.approx(widening, rel=0.01), state
    assert f"{state['ratioLower']:.2g}\u2013" in result["message"] or (
        f"at least {state['ratioLower']:.2g}" in result["message"]
    )
    assert result["message"].startswith("new pods' error rate is ")
    assert "of 100 needed" in result["message"]
    assert old_hash != new_hash
    # The operator's /metrics: the evidence and the evidence needed, as dashboards draw them.
    labels = {"namespace": namespace, "analysis": "bad", "metric": "errors-vs-old"}
    shown = wait_until(
        lambda: seq_operator.metric("sentinel_metric_evidence", labels),
        timeout=10,
        what="sentinel_metric_evidence",
    )
    assert shown >= 100
    assert seq_operator.metric("sentinel_metric_threshold", labels) == 100
    # The history keeps each evaluation's own steps, both sides' counts (the rates the UI and
    # the picture draw): up to the status's through they add up to its sums, each step once.
    counted = [
        c
        for evaluation in seq_operator.evaluations(namespace, "bad")
        for row in evaluation["metric_results"]
        if (c := json.loads(row["counted"] or "{}"))
        and _seconds(c["through"]) <= _seconds(state["through"])
    ]
    assert sum(c["steps"] for c in counted) == state["steps"], counted
    for key in ("newBad", "newTotal", "oldBad", "oldTotal"):
        assert sum(c[key] for c in counted) == pytest.approx(state[key], rel=1e-6, abs=1e-3), key
    bad = sum(c["newBad"] for c in counted) / sum(c["newTotal"] for c in counted)
    assert bad > 1.5 * sum(c["oldBad"] for c in counted) / sum(c["oldTotal"] for c in counted)
    # Each history row keeps the ratio's bounds after its evaluation (the admin's band): one of
    # them is the status's, and where both sides are bounded the lower is under the upper.
    bounds = [
        (row["ratio_lower"], row["ratio_upper"])
        for evaluation in seq_operator.evaluations(namespace, "bad")
        for row in evaluation["metric_results"]
    ]
    assert any(
        low is not None and low == pytest.approx(state["ratioLower"], rel=1e-3) for low, _ in bounds
    ), (bounds, state["ratioLower"])
    assert all(low < high for low, high in bounds if low is not None and high is not None)


def test_a_histogram_without_the_boundary_is_an_invalid_query_naming_those_it_has(
    realcluster: RealCluster,
    client: kube.KubeClient,
    seq_namespace: str,
    rollouts: dict[str, tuple[str, str]],
    seq_prometheus: PrometheusServer,
    seq_operator: OperatorProcess,
) -> None:
    namespace = seq_namespace
    histogram = f'http_request_duration_seconds{{namespace="{namespace}", app="good"}}'
    metric = {"name": "slow-vs-old", "sequential": {"histogram": histogram, "slowerThan": 0.3}}
    spec = {"target": {"name": "good"}, "metrics": [metric], **SPEC_FIELDS}
    kubectl_apply(realcluster, rollout_analysis("good-slow", namespace, spec))
    invalid = wait_until(
        lambda: (
            condition(found := get_analysis(client, namespace, "good-slow"), "Ready").get("reason")
            == "InvalidQuery"
            and found
        ),
        timeout=40,
        what="Ready=False/InvalidQuery",
    )
    message = condition(invalid, "Ready")["message"]
    assert "has no bucket le=0.3 for slowerThan" in message
    assert "its boundaries are 0.005, 0.01, 0.025" in message and "0.25, 0.5" in message


@pytest.mark.slow
def test_equal_rates_are_never_paused_through_a_sigkill_and_an_outage(
    realcluster: RealCluster,
    client: kube.KubeClient,
    seq_namespace: str,
    pods: PodServer,
    rollouts: dict[str, tuple[str, str]],
    proxy: FaultProxy,
    seq_prometheus: PrometheusServer,
    seq_operator: OperatorProcess,
) -> None:
    namespace, name, new_hash = seq_namespace, "good", rollouts["good"][1]
    try:
        _good_rollout(realcluster, client, namespace, name, new_hash, proxy, seq_operator)
    finally:
        print(f"\n$ kubectl get ra good -o yaml   # status\n{_shown(realcluster, namespace, name)}")


def _good_rollout(
    cluster: RealCluster,
    client: kube.KubeClient,
    namespace: str,
    name: str,
    new_hash: str,
    proxy: FaultProxy,
    operator: OperatorProcess,
) -> None:
    counted = wait_until(
        lambda: (state := _sequential(client, namespace, name)).get("steps", 0) >= 3 and state,
        timeout=60,
        what="three counted steps",
    )
    since = counted["since"]
    assert counted["key"].startswith(f"{new_hash}/")

    # SIGKILL mid-rollout: the restarted operator continues from the status.
    before_kill = _sequential(client, namespace, name)
    operator.kill()
    operator.start()
    after = wait_until(
        lambda: (
            (state := _sequential(client, namespace, name)).get("steps", 0)
            > before_kill["steps"] + 1
            and state
        ),
        timeout=60,
        what="steps counted after the restart",
    )
    print(
        f"\nSIGKILL: before {before_kill['steps']} steps through {before_kill['through']}, "
        f"after {after['steps']} steps through {after['through']}"
    )
    assert after["since"] == since and after["newTotal"] > before_kill["newTotal"]
    _check_tiling(after)

    # Prometheus unreachable for several steps; they are read when it answers again.
    before_outage = _sequential(client, namespace, name)
    proxy.fail(502)
    wait_until(
        lambda: (
            condition(get_analysis(client, namespace, name), "Ready").get("reason")
            == "MetricsUnavailable"
        ),
        timeout=30,
        what="MetricsUnavailable",
    )
    held = _sequential(client, namespace, name)
    # Three whole steps at least pass while it is unreachable.
    outage_began = time.monotonic()
    wait_until(lambda: time.monotonic() - outage_began >= 3 * INTERVAL, timeout=40)
    assert _sequential(client, namespace, name)["through"] == held["through"]
    recovered_at = len(proxy.requests)
    proxy.pass_through()
    recovered = wait_until(
        lambda: (
            (state := _sequential(client, namespace, name))["through"] != held["through"] and state
        ),
        timeout=90,
        what="the steps of the outage counted",
    )
    jump = round((_seconds(recovered["through"]) - _seconds(held["through"])) / INTERVAL)
    print(
        f"outage: through {held['through']} -> {recovered['through']}: {jump} steps at once, "
        f"{recovered['steps'] - held['steps']} counted"
    )
    assert jump >= 3 and recovered["steps"] - held["steps"] == jump
    assert recovered["since"] == since and held["steps"] >= before_outage["steps"]
    _check_tiling(recovered)
    # The missed steps are read at once: the raw samples of a window of at least three steps
    # (and the lookback before them, where each series' boundary sample is).
    first_read = next(
        r
        for r in proxy.requests[recovered_at:]
        if r.path.endswith("/api/v1/query") and r.params["query"][0].endswith("ms]")
    )
    window = float(first_read.params["query"][0].rsplit("[", 1)[1].removesuffix("ms]")) / 1000
    assert round((window - LOOKBACK_SECONDS) / INTERVAL) >= 3

    # At least 30 evaluations of equal rates, never paused.
    rows = wait_until(
        lambda: (
            len(
                found := [
                    r for r in operator.evaluations(namespace, name) if r["outcome"] != "Error"
                ]
            )
            >= 30
            and found
        ),
        timeout=40 * INTERVAL,
        what="30 evaluations",
    )
    assert not any(r["paused"] for r in rows)
    assert not deployment_paused(client, namespace, name)
    final = get_analysis(client, namespace, name)
    assert condition(final, "RolloutPaused")["status"] == "False"
    state = final["status"]["metricResults"][0]["sequential"]
    assert state["evidence"] < state["needed"] and state["since"] == since
    print(
        f"good rollout: {len(rows)} decisive evaluations, evidence {state['evidence']} "
        f"of {state['needed']} needed, ratio {state['ratio']}"
    )
    _check_tiling(state)


def _check_tiling(state: dict[str, Any]) -> None:
    """Every whole step from since to through counted exactly once."""
    span = _seconds(state["through"]) - _seconds(state["since"])
    assert span % INTERVAL == 0, state
    assert state["steps"] == span / INTERVAL, state
