"""A real rollout of running pods, paused mid-way by the real operator (docs/realcluster.md).

kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok's simulated nodes
(the session's ``testkit.realcluster.RealCluster``); the pods' metrics served at their own IPs by
``testkit.pod_server.PodServer``; the Prometheus 3.x built by ``make realcluster`` discovering
them through the API server; ``manage.py runoperator``; the real kubectl.

The story: a Deployment of 4 (maxSurge 1, maxUnavailable 0, ``minReadySeconds`` 10, so each
step of a rolling update waits 10 s for the new pod to count as available) is healthy.
``kubectl set image`` starts a rollout whose new pods fail half their requests; the error
ratio over the namespace's pods crosses the threshold, and the operator pauses the Deployment
after ``failureLimit`` failures while the new ReplicaSet is only partly available. For longer
than two intervals and than a rollout step, neither the ReplicaSets' sizes nor the pods change.
The new pods then recover, ``kubectl rollout resume`` lets the controller go on and ``kubectl
rollout status`` sees the rollout complete. ``kubectl get rs`` before, during and after the
pause is printed (``-s`` shows it).

The second test is ``compare`` (new pods against old pods, split by the ``pod_template_hash``
Prometheus's discovery gave the series) and a ``beforeRollout`` baseline on the same running
pods: before any rollout there is no old side (``NoComparison``); a version 3 % slower, held
mid-rollout, passes ten comparisons in a row (under ``maxEffect: 10 %``), then completes
unpaused, and the analysis is ``Inconclusive/NoComparison`` again; a next version 50 % slower
is paused mid-rollout by compare after exactly ``failureLimit`` failures, with one range query
per evaluation at most (seen through the fault proxy), while the baseline taken at that
rollout's start holds the old pods' latency.

The module's two tests play on the session's realcluster (tests/support/pod_fixtures.py), each
in a namespace of its own, and share one Prometheus (discovering both namespaces; each test
queries its own) and one operator (watching both).
"""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

import pytest

from sentinel_cluster import kube
from sentinel_core.values import parse_time
from testkit.clusters import kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest
from testkit.observe import condition, event_reasons, get_analysis, wait_condition, wait_rows
from testkit.operator import OperatorProcess
from testkit.pod_server import Behaviour, PodServer, kwok_deployment, replica_set_hashes
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

NAME = "checkout"
CONTAINER = "checkout"
IMAGE = "registry.example.com/shop/checkout:{}"
REPLICAS = 4
MIN_READY_SECONDS = 10
INTERVAL = 5.0
FAILURE_LIMIT = 2
MAX_ERROR_RATIO = 0.05
PAUSED_BY = "sentinel.example.com/paused-by"


class Stage(NamedTuple):
    """Everything a story here plays on."""

    cluster: RealCluster
    client: kube.KubeClient
    namespace: str
    pods: PodServer
    prometheus: PrometheusServer
    proxy: FaultProxy
    operator: OperatorProcess


@pytest.fixture
def stage(
    real_cluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    pods: PodServer,
    pod_prometheus: PrometheusServer,
    pod_fault_proxy: FaultProxy,
    real_operator: OperatorProcess,
) -> Stage:
    return Stage(
        real_cluster,
        real_client,
        real_namespace,
        pods,
        pod_prometheus,
        pod_fault_proxy,
        real_operator,
    )


# -- reading what the controllers did ----------------------------------------------------------


def _deployment(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    return client.request("GET", kube.deployment_path(namespace, NAME))


def _sizes(cluster: RealCluster, namespace: str) -> dict[str, int]:
    """pod-template-hash -> spec.replicas of each of the Deployment's ReplicaSets."""
    return {h: replicas for _, h, replicas in replica_set_hashes(cluster, namespace, NAME)}


def _pod_names(cluster: RealCluster, namespace: str) -> set[str]:
    listed = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)
    return {pod["metadata"]["name"] for pod in listed["items"]}


def _available(cluster: RealCluster, namespace: str, template_hash: str) -> int:
    listed = cluster.kubectl("get", "rs", "-n", namespace, f"{NAME}-{template_hash}", "-o", "json")
    return int(json.loads(listed.stdout)["status"].get("availableReplicas", 0))


def _show_rs(cluster: RealCluster, namespace: str, when: str) -> None:
    shown = cluster.kubectl("get", "rs", "-n", namespace, "-o", "wide").stdout
    print(f"\n$ kubectl get rs -o wide   # {when}\n{shown.rstrip()}")


def _roll_out_version_1(
    cluster: RealCluster, namespace: str, port: int, replicas: int, min_ready_seconds: int
) -> str:
    """Apply version 1 (one surge pod per step, none unavailable), wait until all its pods are
    available, and return its ReplicaSet's pod-template-hash."""
    deployment = kwok_deployment(
        NAME,
        namespace,
        IMAGE.format("1.0"),
        port,
        replicas=replicas,
        min_ready_seconds=min_ready_seconds,
        container=CONTAINER,
        one_pod_at_a_time=True,
    )
    kubectl_apply(cluster, deployment)
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=90s")
    ((_, template_hash, _),) = replica_set_hashes(cluster, namespace, NAME)
    return template_hash


def _set_image(cluster: RealCluster, namespace: str, version: str) -> None:
    image = IMAGE.format(version)
    cluster.kubectl("-n", namespace, "set", "image", f"deployment/{NAME}", f"{CONTAINER}={image}")


def _apply_analysis(cluster: RealCluster, namespace: str, metrics: list[dict[str, Any]]) -> None:
    """Apply the analysis of the Deployment (every INTERVAL, pausing after FAILURE_LIMIT)."""
    analysis = analysis_manifest(
        NAME,
        namespace,
        target=NAME,
        metrics=metrics,
        interval=f"{INTERVAL:.0f}s",
        failure_limit=FAILURE_LIMIT,
    )
    kubectl_apply(cluster, analysis)


def _progressing_reason(deployment: dict[str, Any]) -> str:
    return str(condition(deployment, "Progressing").get("reason", ""))


# -- the rollout ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_regressing_rollout_is_paused_mid_way_held_and_resumed(stage: Stage) -> None:
    cluster, client, namespace, pods, pod_prometheus, _, real_operator = stage
    started = time.monotonic()
    old_hash = _roll_out_version_1(cluster, namespace, pods.port, REPLICAS, MIN_READY_SECONDS)
    print(f"\nversion 1: {REPLICAS} pods available in {time.monotonic() - started:.1f} s")
    pods.wait_served(lambda served: len(served) == REPLICAS)
    errors = (
        f'sum(rate(http_request_errors_total{{namespace="{namespace}"}}[10s])) / '
        f'sum(rate(http_requests_total{{namespace="{namespace}"}}[10s]))'
    )
    pod_prometheus.wait_for(errors, lambda values: values == [0.0], timeout=30)
    error_ratio = {"name": "error-ratio", "query": errors, "maxValue": MAX_ERROR_RATIO}
    _apply_analysis(cluster, namespace, [error_ratio])
    first = wait_condition(client, namespace, NAME, "Ready", "Evaluating", timeout=20)
    assert first["status"]["lastVerdict"] == "Pass"
    _show_rs(cluster, namespace, "before the rollout")

    # Version 2 fails half its requests; its first pod is Ready at once, available 10 s later.
    pods.behave(Behaviour(latency=0.1, error_rate=0.5), image=IMAGE.format("2.0"))
    rollout = time.monotonic()
    _set_image(cluster, namespace, "2.0")
    new_hash = wait_until(
        lambda: (
            (found := replica_set_hashes(cluster, namespace, NAME))[0][1] != old_hash
            and found[0][1]
        ),
        timeout=20,
        what="the new ReplicaSet",
    )
    paused = wait_condition(
        client, namespace, NAME, "RolloutPaused", "FailureLimitReached", timeout=60
    )
    paused_at = time.monotonic()
    print(f"set image -> paused in {paused_at - rollout:.1f} s")
    assert paused["status"]["failures"] == FAILURE_LIMIT
    assert condition(paused, "Healthy")["reason"] == "ThresholdExceeded"
    held = _deployment(client, namespace)
    assert held["spec"]["paused"] is True
    assert held["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/{NAME}"
    wait_until(
        lambda: _progressing_reason(_deployment(client, namespace)) == "DeploymentPaused",
        timeout=15,
        what="Progressing=DeploymentPaused",
    )

    # Mid-rollout: both ReplicaSets have pods, the new one is not yet all there.
    frozen = _sizes(cluster, namespace)
    frozen_pods = _pod_names(cluster, namespace)
    assert set(frozen) == {old_hash, new_hash}
    assert 0 < frozen[new_hash] < REPLICAS and 0 < frozen[old_hash] <= REPLICAS
    _show_rs(cluster, namespace, "paused by the operator")
    # Longer than two intervals and than a rollout step (minReadySeconds): unpaused, the
    # controller would have moved on by then.
    watch_until = time.monotonic() + max(2 * INTERVAL, MIN_READY_SECONDS) + 2
    watched = 0
    while time.monotonic() < watch_until or watched < 4:
        assert _sizes(cluster, namespace) == frozen
        assert _pod_names(cluster, namespace) == frozen_pods
        assert _deployment(client, namespace)["spec"]["paused"] is True
        watched += 1
        time.sleep(0.5)
    # By now the new pods have been Ready for longer than minReadySeconds: only the pause
    # holds the controller back.
    assert _available(cluster, namespace, new_hash) == frozen[new_hash]
    still = get_analysis(client, namespace, NAME)
    assert condition(still, "RolloutPaused")["reason"] == "FailureLimitReached"
    _show_rs(cluster, namespace, f"{time.monotonic() - paused_at:.0f} s into the pause")
    print(
        f"held for {time.monotonic() - paused_at:.1f} s ({watched} reads): ReplicaSets "
        f"{frozen}, pods unchanged {sorted(frozen_pods)}"
    )
    wait_until(
        lambda: event_reasons(client, namespace, NAME).count("RolloutPaused") == 1,
        timeout=5,
        what="one RolloutPaused event",
    )

    # The new pods recover; once the error ratio is back under the threshold, a person
    # resumes with kubectl and the rollout runs to the end.
    pods.behave(Behaviour(latency=0.1), image=IMAGE.format("2.0"))
    pod_prometheus.wait_for(
        errors, lambda values: len(values) == 1 and values[0] < MAX_ERROR_RATIO, timeout=30
    )
    resumed = time.monotonic()
    cluster.kubectl("-n", namespace, "rollout", "resume", f"deployment/{NAME}")
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=120s")
    print(f"resume -> rollout complete in {time.monotonic() - resumed:.1f} s")
    _show_rs(cluster, namespace, "after the resume")
    assert _sizes(cluster, namespace) == {new_hash: REPLICAS, old_hash: 0}
    after = wait_condition(
        client, namespace, NAME, "RolloutPaused", "ResumedByUser", timeout=3 * INTERVAL
    )
    assert condition(after, "RolloutPaused")["status"] == "False"
    # The resume starts the count again (the resuming reconcile's own Fail would make it 1).
    assert after["status"]["failures"] <= 1 and after["status"].get("pausedAt") is None
    assert _deployment(client, namespace)["spec"].get("paused") is not True
    fails = [row for row in real_operator.evaluations(namespace, NAME) if row["outcome"] == "Fail"]
    assert [bool(row["paused"]) for row in fails[:FAILURE_LIMIT]] == [False, True]
    print(f"whole story: {time.monotonic() - started:.1f} s")


# -- new pods against old pods, and a baseline from before the rollout --------------------------

COMPARE_REPLICAS = 3
# Version 2's steps are short once it may finish; the slow version's are long enough that the old
# side is still there when compare has its samples (a pause comes ~30 s after the new ReplicaSet).
GOOD_MIN_READY_SECONDS = 3
SLOW_MIN_READY_SECONDS = 25
# Until then version 2 is held mid-rollout, two new pods beside the three old ones (an hour
# before a new pod counts as available), for as long as compare judges it.
HOLD = {"minReadySeconds": 3600, "progressDeadlineSeconds": 7200}
LATENCY = 0.25
# Version 2 answers 3 % slower: under maxEffect (10 %), so compare passes it every time.
SMALL_EFFECT = 1.03
SMALL_PASSES = 10
SLOW_EFFECT = 1.5
LOOKBACK_SECONDS = 20
NO_OLD_SIDE = "no comparison: no old ReplicaSet has replicas"


def _latency_metrics(namespace: str) -> list[dict[str, Any]]:
    """Each pod's mean latency, new pods against old (one series per pod, labelled by
    discovery); and the namespace's mean latency against its value when the rollout began."""
    return [
        {
            "name": "latency-vs-old",
            "query": _per_pod_latency(namespace),
            "compare": {
                "by": "pod_template_hash",
                "worse": "increase",
                "maxEffect": {"percent": 10},
                "confidence": 0.95,
                "lookback": f"{LOOKBACK_SECONDS}s",
                "minSamples": 5,
            },
        },
        {
            # Loose on purpose: compare, not this, is what pauses the slow version.
            "name": "latency-vs-before",
            "query": (
                f"sum(rate(http_request_duration_seconds_sum{_selector(namespace)}[10s])) / "
                f"sum(rate(http_request_duration_seconds_count{_selector(namespace)}[10s]))"
            ),
            "maxValue": 1,
            "maxIncrease": {"percent": 100},
            "baseline": {"beforeRollout": True},
        },
    ]


def _selector(namespace: str) -> str:
    return f'{{namespace="{namespace}",app="{NAME}"}}'


def _per_pod_latency(namespace: str) -> str:
    selector = _selector(namespace)
    return (
        f"rate(http_request_duration_seconds_sum{selector}[10s]) / "
        f"rate(http_request_duration_seconds_count{selector}[10s])"
    )


def _results(client: kube.KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    status = get_analysis(client, namespace, NAME).get("status") or {}
    return {result["name"]: result for result in status.get("metricResults") or []}


def _compared(rows: list[dict[str, Any]], new_hash: str) -> list[dict[str, Any]]:
    """Return the history rows whose compare metric judged ``new_hash`` against old pods, each
    with that metric's row as ``compare``."""
    found = []
    for row in rows:
        for metric in row["metric_results"]:
            comparison = json.loads(metric["comparison"] or "{}")
            if metric["name"] == "latency-vs-old" and comparison.get("newHash") == new_hash:
                found.append({**row, "compare": {**metric, "comparison": comparison}})
    return found


def _patch_deployment(client: kube.KubeClient, namespace: str, spec: dict[str, Any]) -> None:
    client.request(
        "PATCH",
        kube.deployment_path(namespace, NAME),
        body={"spec": spec},
        content_type="application/merge-patch+json",
    )


@pytest.mark.slow
def test_compare_on_discovered_pods_passes_a_good_rollout_and_pauses_a_slower_one(
    stage: Stage,
) -> None:
    cluster, client, namespace, pods, _, proxy, real_operator = stage
    started = time.monotonic()
    pods.default = Behaviour(latency=LATENCY, spread=0.03)
    first_hash = _roll_out_version_1(
        cluster, namespace, pods.port, COMPARE_REPLICAS, GOOD_MIN_READY_SECONDS
    )
    _apply_analysis(cluster, namespace, _latency_metrics(namespace))
    # One ReplicaSet: no old pods to compare with, and no rollout seen, so no baseline.
    # An evaluation with the namespace's latency measured: Prometheus has the rate, so the
    # rollout's start (below) finds it as the baseline. Otherwise, under load, the start could
    # fall before the first two scrapes and the baseline would (rightly) never exist.
    before = wait_until(
        lambda: (
            len(found := _results(client, namespace)) == 2
            and "value" in found["latency-vs-before"]
            and found
        ),
        timeout=30,
        interval=0.2,
        what="a first evaluation with the latency measured",
    )
    # The rollout's start is its ReplicaSet's creationTimestamp, in whole seconds (up to a
    # second before the set image): let it fall after that measured instant.
    analysis = get_analysis(client, namespace, NAME)
    measured = parse_time(analysis["status"]["lastEvaluationTime"])
    assert measured is not None
    wait_until(
        lambda: time.time() >= measured.timestamp() + 2,
        timeout=5,
        what="the clock two seconds past the measured evaluation",
    )
    assert before["latency-vs-old"]["verdict"] == "Inconclusive"
    assert before["latency-vs-old"]["message"].startswith(NO_OLD_SIDE)
    assert "comparison" not in before["latency-vs-old"]
    assert "baseline" not in before["latency-vs-before"]
    healthy = condition(analysis, "Healthy")
    assert (healthy["status"], healthy["reason"]) == ("Unknown", "NoComparison")

    # Version 2, 3 % slower, held mid-rollout: compare judges its pods against the old ones
    # and passes them, evaluation after evaluation.
    pods.behave(Behaviour(latency=SMALL_EFFECT * LATENCY, spread=0.03), image=IMAGE.format("2.0"))
    _patch_deployment(client, namespace, {**HOLD, "strategy": {"rollingUpdate": {"maxSurge": 2}}})
    since = len(real_operator.evaluations(namespace, NAME))
    _set_image(cluster, namespace, "2.0")
    good_hash = wait_until(
        lambda: (
            len(found := replica_set_hashes(cluster, namespace, NAME)) == 2
            and found[0][1] != first_hash
            and found[0][1]
        ),
        timeout=20,
        what="version 2's ReplicaSet",
    )
    rows = wait_rows(
        real_operator,
        namespace,
        NAME,
        lambda rows: len(_compared(rows[since:], good_hash)) >= SMALL_PASSES,
        timeout=(SMALL_PASSES + 8) * INTERVAL + 30,
        what=f"{SMALL_PASSES} comparisons of version 2's pods",
    )
    passes = _compared(rows[since:], good_hash)[:SMALL_PASSES]
    print(f"\ncompare: {SMALL_PASSES} comparisons of +3 % in {time.monotonic() - started:.1f} s")
    assert [row["outcome"] for row in passes] == ["Pass"] * SMALL_PASSES
    assert [row["compare"]["verdict"] for row in passes] == ["Pass"] * SMALL_PASSES
    assert {tuple(row["compare"]["comparison"]["oldHashes"]) for row in passes} == {(first_hash,)}
    assert not [row for row in rows[since:] if row["outcome"] == "Fail"]
    assert get_analysis(client, namespace, NAME)["status"]["failures"] == 0
    assert _sizes(cluster, namespace) == {good_hash: 2, first_hash: COMPARE_REPLICAS}
    assert _deployment(client, namespace)["spec"].get("paused") is not True

    # Released, it runs to its end unpaused, and then there is no old side.
    good = time.monotonic()
    _patch_deployment(
        client,
        namespace,
        {"minReadySeconds": GOOD_MIN_READY_SECONDS, "strategy": {"rollingUpdate": {"maxSurge": 1}}},
    )
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{NAME}", "--timeout=90s")
    print(f"compare: good rollout complete in {time.monotonic() - good:.1f} s once released")
    ((_, last, _), (_, first, _)) = replica_set_hashes(cluster, namespace, NAME)
    assert (last, first) == (good_hash, first_hash)
    assert _sizes(cluster, namespace) == {good_hash: COMPARE_REPLICAS, first_hash: 0}
    done = wait_until(
        lambda: (
            (found := _results(client, namespace))
            .get("latency-vs-old", {})
            .get("message", "")
            .startswith(NO_OLD_SIDE)
            and "baseline" in found["latency-vs-before"]
            and get_analysis(client, namespace, NAME)
        ),
        timeout=3 * INTERVAL,
        interval=0.2,
        what=f"NoComparison after the good rollout (last seen: {_results(client, namespace)})",
    )
    assert done["status"]["lastVerdict"] == "Inconclusive"
    assert condition(done, "Healthy")["reason"] == "NoComparison"
    assert condition(done, "RolloutPaused").get("status") != "True"
    assert "comparison" not in _results(client, namespace)["latency-vs-old"]
    assert _deployment(client, namespace)["spec"].get("paused") is not True
    assert not [r for r in real_operator.evaluations(namespace, NAME) if r["outcome"] == "Fail"]

    # Version 3 answers 50 % slower; each of its steps takes 25 s, so the old side stays.
    pods.behave(Behaviour(latency=SLOW_EFFECT * LATENCY, spread=0.03), image=IMAGE.format("3.0"))
    _patch_deployment(client, namespace, {"minReadySeconds": SLOW_MIN_READY_SECONDS})
    _show_rs(cluster, namespace, "compare: before the slow rollout")
    slow = time.monotonic()
    since = len(real_operator.evaluations(namespace, NAME))
    _set_image(cluster, namespace, "3.0")
    paused = wait_condition(
        client, namespace, NAME, "RolloutPaused", "FailureLimitReached", timeout=90
    )
    print(f"compare: set image -> paused in {time.monotonic() - slow:.1f} s")
    _show_rs(cluster, namespace, "compare: paused")
    ((_, new_hash, new_size), (_, old_hash, old_size), (_, _, gone)) = replica_set_hashes(
        cluster, namespace, NAME
    )
    # Mid-rollout: old pods still serve, the new ReplicaSet is not all available.
    assert old_hash == good_hash and gone == 0
    assert new_size > 0 and old_size > 0, (new_size, old_size)
    assert _available(cluster, namespace, new_hash) < COMPARE_REPLICAS
    assert _deployment(client, namespace)["spec"]["paused"] is True
    # Paused after exactly failureLimit failures.
    assert paused["status"]["failures"] == FAILURE_LIMIT
    results = {result["name"]: result for result in paused["status"]["metricResults"]}
    compared = results["latency-vs-old"]
    comparison = compared["comparison"]
    assert compared["verdict"] == "Fail"
    assert compared["message"].startswith("new pods' median ")
    assert "% above old pods' " in compared["message"]
    # The hashes are the ReplicaSets' own, as discovery labelled the series.
    assert comparison["newHash"] == new_hash and comparison["oldHashes"] == [old_hash]
    assert comparison["newSamples"] >= 5 and comparison["oldSamples"] >= 5
    assert comparison["pValue"] < 0.05
    # +50 % over version 2's +3 %: 1.5 / 1.03 - 1 = 46 %.
    assert 0.3 < comparison["effect"] / comparison["oldMedian"] < 0.7
    # The baseline is the old pods' latency (version 2's) when version 3's ReplicaSet was made.
    baseline = float(results["latency-vs-before"]["baseline"])
    assert abs(baseline - SMALL_EFFECT * LATENCY) < 0.05 * LATENCY
    # The history row is written after the status and the pause: wait for it.
    rows = wait_rows(
        real_operator,
        namespace,
        NAME,
        lambda rows: sum(r["outcome"] == "Fail" for r in rows[since:]) >= FAILURE_LIMIT,
        timeout=10,
    )
    fails = [r for r in rows[since:] if r["outcome"] == "Fail"]
    assert [(r["failures_after"], bool(r["paused"])) for r in fails[:FAILURE_LIMIT]] == [
        (1, False),
        (2, True),
    ]
    # One range query per evaluation at most, each over the lookback at the interval's step.
    per_pod = _per_pod_latency(namespace)
    asked = [r for r in proxy.requests if r.params.get("query") == [per_pod]]
    ranges = [r for r in asked if r.path == "/api/v1/query_range"]
    instants = [r for r in asked if r.path == "/api/v1/query"]
    assert 0 < len(ranges) <= len(instants)
    assert {float(r.params["step"][0]) for r in ranges} == {INTERVAL}
    assert {round(float(r.params["end"][0]) - float(r.params["start"][0])) for r in ranges} == {
        LOOKBACK_SECONDS
    }
    print(f"comparison: {comparison}; message: {compared['message']}")
    print(f"baseline: {results['latency-vs-before']}")
    print(f"compare story: {time.monotonic() - started:.1f} s")
