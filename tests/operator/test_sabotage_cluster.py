"""Sabotage, cluster side, end to end.

A real ``runoperator`` process against the session cluster of each kind (devcluster and the
real kube-apiserver with its controllers) and the real Prometheus, driven with kubectl: the
target deleted and recreated, two analyses on one Deployment, a real regression with a pass in
between and a dry run, 409s injected on the status write (devcluster only: a fault hook), a
spec edited, and an analysis deleted. Each test checks conditions, events, history rows, failure
counts and the Deployment's ``spec.paused``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.devcluster import DevCluster
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import (
    condition,
    deployment_paused,
    due_lags,
    due_times,
    event_reasons,
    get_analysis,
    queries_for,
    wait_condition,
    wait_rows,
)
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until
from tests.operator import shared

INTERVAL = 5.0
PAUSED_BY = "sentinel.example.com/paused-by"


# This module's tests share one operator (tests/operator/shared.py).
namespace, operator, fault_proxy = shared.namespace, shared.operator, shared.fault_proxy


def _status(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return get_analysis(client, namespace, name).get("status") or {}


def _wait_failures(
    client: kube.KubeClient, namespace: str, name: str, failures: int, timeout: float = 15
) -> dict[str, Any]:
    return wait_until(
        lambda: (
            status
            if (status := _status(client, namespace, name)).get("failures") == failures
            else None
        ),
        timeout=timeout,
        interval=0.1,
        what=f"{name} at {failures} failures",
    )


def test_target_deleted_then_recreated(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 7: TargetNotFound, metrics still evaluated and counted, no pause; recovers."""
    gauge(0.1)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest(
            "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=1
        ),
    )
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=8)

    kube_cluster.kubectl("-n", namespace, "delete", "deployment", "checkout")
    missing = wait_condition(kube_client, namespace, "checkout", "Ready", "TargetNotFound")
    assert condition(missing, "Ready")["status"] == "False"
    # A regression while the target is missing is still judged and counted, up to the limit,
    # but there is nothing to pause.
    gauge(0.9)
    rows = wait_rows(
        operator,
        namespace,
        "checkout",
        lambda rows: [row["failures_after"] for row in rows if row["outcome"] == "Fail"] == [1],
        timeout=12,
        what="a failure while the target is missing",
    )
    resource = get_analysis(kube_client, namespace, "checkout")
    assert condition(resource, "Ready")["reason"] == "TargetNotFound"
    assert condition(resource, "Healthy")["reason"] == "ThresholdExceeded"
    assert condition(resource, "RolloutPaused")["reason"] == "NotPaused"
    assert resource["status"]["failures"] == 1
    fails = [row for row in rows if row["outcome"] == "Fail"]
    assert not any(row["paused"] for row in rows)
    assert fails[0]["metric_results"][0]["value_text"] == "0.9"
    # No crash loop: attempts at the interval, not hammering or backing off (the first backoff
    # of a 5 s interval is 5 s too: the row's backoff count below tells the two apart).
    row = operator.mirror_row(namespace, "checkout")
    assert row is not None
    lags = due_lags(rows)[-2:]
    print(f"attempts while the target is missing started {lags} s after their due time")
    assert all(0 <= lag <= 1.5 for lag in lags), lags
    # Due an interval apart (up to two when moved onto the analysis's phase), not sooner.
    dues = itertools.pairwise(due_times(rows[-3:]))
    gaps = [(later - earlier).total_seconds() for earlier, later in dues]
    assert all(INTERVAL - 0.01 <= gap <= 2 * INTERVAL for gap in gaps), gaps
    assert (
        row is not None and row["backoff_attempt"] == 0 and row["ready_reason"] == "TargetNotFound"
    )
    assert operator.running

    gauge(0.1)
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace))
    back = wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=10)
    assert condition(back, "Ready")["status"] == "True"
    assert back["status"]["failures"] == 0
    assert not deployment_paused(kube_client, namespace)
    reasons = event_reasons(kube_client, namespace, "checkout")
    assert reasons.count("TargetNotFound") == 1
    assert "RolloutPaused" not in reasons


def test_two_analyses_on_one_deployment(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 8: both evaluate, either may pause, paused-by names each, neither unpauses."""
    gauge(0.9)
    metric = gauge_metric(case, 0.5)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest("fast", namespace, metrics=[metric], failure_limit=2),
        analysis_manifest("slow", namespace, metrics=[metric], failure_limit=3),
    )
    wait_condition(kube_client, namespace, "fast", "RolloutPaused", "FailureLimitReached")
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"]["paused"] is True
    assert deployment["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/fast"
    # The other one has not tripped yet (it needs a third failure), so it is not named.
    slow = get_analysis(kube_client, namespace, "slow")
    assert slow["status"]["failures"] in (1, 2)
    assert condition(slow, "RolloutPaused")["reason"] == "NotPaused"

    slow = wait_condition(kube_client, namespace, "slow", "RolloutPaused", "FailureLimitReached")
    assert condition(slow, "RolloutPaused")["status"] == "True"
    assert slow["status"]["pausedAt"]
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/fast,{namespace}/slow"

    # The metric recovers: both pass, neither resumes the rollout.
    gauge(0.1)
    for name in ("fast", "slow"):
        wait_rows(
            operator,
            namespace,
            name,
            lambda rows: rows[-1]["outcome"] == "Pass",
            timeout=10,
            what=f"{name} passes",
        )
    for name, limit in (("fast", 2), ("slow", 3)):
        resource = get_analysis(kube_client, namespace, name)
        paused = condition(resource, "RolloutPaused")
        assert (paused["status"], paused["reason"]) == ("True", "FailureLimitReached")
        assert resource["status"]["failures"] == 0
        assert event_reasons(kube_client, namespace, name).count("RolloutPaused") == 1
        fails = [row for row in operator.evaluations(namespace, name) if row["outcome"] == "Fail"]
        # Consecutive failures count on after the pause; the limit-th one paused.
        assert [row["failures_after"] for row in fails] == list(range(1, len(fails) + 1))
        assert len(fails) >= limit
        assert [bool(row["paused"]) for row in fails[:limit]] == [False] * (limit - 1) + [True]
        assert "RolloutResumed" not in event_reasons(kube_client, namespace, name)
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"]["paused"] is True
    assert deployment["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/fast,{namespace}/slow"


def test_regression_pauses_after_exactly_failure_limit(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 9: a pass resets the count; the limit-th consecutive failure pauses; dryRun never."""
    metric = gauge_metric(case, 0.5)
    gauge(0.9)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        deployment_manifest("dry", namespace),
        analysis_manifest("checkout", namespace, metrics=[metric], failure_limit=2),
        analysis_manifest(
            "dry", namespace, target="dry", metrics=[metric], failure_limit=1, dry_run=True
        ),
    )
    _wait_failures(kube_client, namespace, "checkout", 1, timeout=8)
    gauge(0.1)
    _wait_failures(kube_client, namespace, "checkout", 0)
    assert not deployment_paused(kube_client, namespace)
    gauge(0.9)
    _wait_failures(kube_client, namespace, "checkout", 1)
    assert not deployment_paused(kube_client, namespace)
    paused = _wait_failures(kube_client, namespace, "checkout", 2)
    assert paused["pausedAt"]
    assert deployment_paused(kube_client, namespace)
    resource = get_analysis(kube_client, namespace, "checkout")
    assert condition(resource, "RolloutPaused")["reason"] == "FailureLimitReached"

    rows = wait_rows(
        operator,
        namespace,
        "checkout",
        lambda rows: bool(rows[-1]["paused"]),
        timeout=5,
        what="the pausing evaluation's history row",
    )
    history = [(row["outcome"], row["failures_after"], bool(row["paused"])) for row in rows]
    # Collapse the passes in between (one or more, depending on when the gauge moved).
    collapsed = [item for item, _ in itertools.groupby(history)]
    assert collapsed == [
        ("Fail", 1, False),
        ("Pass", 0, False),
        ("Fail", 1, False),
        ("Fail", 2, True),
    ], history
    assert event_reasons(kube_client, namespace, "checkout").count("RolloutPaused") == 1

    # The dry run failed every time it saw the regression, past its limit of 1, and never paused.
    # The gauge stays at 0.9: its second failure may come after checkout's pause on a busy
    # machine, where the two analyses' evaluations drift apart.
    dry_rows = wait_rows(
        operator,
        namespace,
        "dry",
        lambda rows: sum(row["outcome"] == "Fail" for row in rows) >= 2,
        timeout=3 * INTERVAL,
        what="the dry run's second failure",
    )
    dry = get_analysis(kube_client, namespace, "dry")
    assert not any(row["paused"] for row in dry_rows)
    assert dry["status"]["failures"] >= 1
    assert dry["status"]["pausedAt"] is None
    dry_paused = condition(dry, "RolloutPaused")
    assert (dry_paused["status"], dry_paused["reason"]) == ("False", "NotPaused")
    assert not deployment_paused(kube_client, namespace, "dry")
    assert "RolloutPaused" not in event_reasons(kube_client, namespace, "dry")


def test_conflicting_status_write_is_reapplied(
    operator: OperatorProcess,
    api_faults: DevCluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
) -> None:
    """Item 10: 409s on the status write re-read and re-apply; nothing measured or counted twice."""
    gauge(0.9)
    status_path = f"/namespaces/{namespace}/rolloutanalyses/checkout/status$"
    # Three conflicts in a row, within the reconciler's five re-reads. The write only succeeds
    # once the rule is used up, so a status appearing proves the conflicts happened.
    api_faults.inject_fault(path_regex=status_path, methods=["PUT"], status=409, times=3)
    kubectl_apply(
        api_faults,
        deployment_manifest("checkout", namespace),
        analysis_manifest(
            "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=3
        ),
    )
    first = _wait_failures(kube_client, namespace, "checkout", 1, timeout=8)
    assert first["lastVerdict"] == "Fail"
    rows = wait_rows(operator, namespace, "checkout", bool, timeout=5, what="the first row")
    assert [(row["outcome"], row["failures_after"]) for row in rows] == [("Fail", 1)]
    assert queries_for(fault_proxy, case) == 1

    api_faults.inject_fault(path_regex=status_path, methods=["PUT"], status=409, times=3)
    second = _wait_failures(kube_client, namespace, "checkout", 2)
    resource = get_analysis(kube_client, namespace, "checkout")
    assert condition(resource, "Healthy")["reason"] == "ThresholdExceeded"
    assert condition(resource, "RolloutPaused")["reason"] == "NotPaused"
    assert second["metricResults"][0]["value"] == "0.9"
    rows = wait_rows(
        operator, namespace, "checkout", lambda rows: len(rows) >= 2, timeout=5, what="2 rows"
    )
    assert [(row["outcome"], row["failures_after"]) for row in rows] == [("Fail", 1), ("Fail", 2)]
    assert queries_for(fault_proxy, case) == len(rows) == 2
    assert not deployment_paused(kube_client, namespace)
    assert event_reasons(kube_client, namespace, "checkout") == []
    row = operator.mirror_row(namespace, "checkout")
    assert row is not None and row["failures"] == 2


def test_spec_edit_resets_failures(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 14: a kubectl edit resets the count; observedGeneration and history follow."""
    gauge(0.9)
    manifest = analysis_manifest(
        "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=3
    )
    kubectl_apply(kube_cluster, deployment_manifest("checkout", namespace), manifest)
    # Two evaluations an interval apart; the bound only decides how long a failure takes to show
    # (12 s was overrun beside another copy of the suite, docs/testkit.md#parallel-runs).
    _wait_failures(kube_client, namespace, "checkout", 2, timeout=30)

    manifest["spec"]["metrics"][0]["maxValue"] = 0.6
    kubectl_apply(kube_cluster, manifest)
    edited = wait_until(
        lambda: (
            resource
            if (resource := get_analysis(kube_client, namespace, "checkout"))["status"].get(
                "observedGeneration"
            )
            == 2
            else None
        ),
        timeout=5,
        what="observedGeneration 2",
    )
    assert edited["metadata"]["generation"] == 2
    # Reset to 0 before the evaluation that saw the edit, which then failed once: 1, not 3.
    assert edited["status"]["failures"] == 1
    assert edited["status"]["metricResults"][0]["maxValue"] == 0.6
    for type_ in ("Ready", "Healthy", "RolloutPaused"):
        assert condition(edited, type_)["observedGeneration"] == 2
    assert not deployment_paused(kube_client, namespace)

    rows = wait_rows(
        operator,
        namespace,
        "checkout",
        lambda rows: rows[-1]["generation"] == 2 and rows[-1]["failures_after"] == 2,
        timeout=10,
        what="a second failure of generation 2",
    )
    assert [(row["generation"], row["failures_after"]) for row in rows] == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    ]
    assert [
        m["max_value"] for m in (rows[0]["metric_results"][0], rows[2]["metric_results"][0])
    ] == [
        0.5,
        0.6,
    ]
    assert not deployment_paused(kube_client, namespace)
    row = operator.mirror_row(namespace, "checkout")
    assert row is not None and row["generation"] == 2 and row["observed_generation"] == 2


def test_deleted_analysis_stops_querying_and_keeps_history(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
) -> None:
    """Item 15: no query after the delete; the mirror row is marked deleted, history kept."""
    gauge(0.1)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest("checkout", namespace, metrics=[gauge_metric(case, 0.5)]),
    )
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=8)
    rows = wait_rows(operator, namespace, "checkout", bool, timeout=5, what="the first row")

    kube_cluster.kubectl("-n", namespace, "delete", "rolloutanalysis", "checkout")
    deleted_at = time.monotonic()
    row = wait_until(
        lambda: (
            found
            if (found := operator.mirror_row(namespace, "checkout")) and found["deleted_at"]
            else None
        ),
        timeout=5,
        what="the mirror row marked deleted",
    )
    print(f"mirror row marked deleted {time.monotonic() - deleted_at:.2f} s after kubectl delete")
    assert row["next_due_at"] is None
    mark = len(fault_proxy.requests)
    kept = len(operator.evaluations(namespace, "checkout"))
    assert kept >= len(rows)
    # Longer than one interval and a half: any queue entry left would have run by now.
    time.sleep(INTERVAL * 1.5)
    assert queries_for(fault_proxy, case, mark) == 0
    history = operator.evaluations(namespace, "checkout")
    assert len(history) == kept
    assert all(item["outcome"] == "Pass" for item in history)
    assert operator.running
