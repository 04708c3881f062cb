"""Sabotage of the processes, end to end.

The API server stopped and started again (on ``real`` the session's kube-apiserver, etcd and
kube-controller-manager themselves, on ``dev`` a devcluster of the test's own persisted in a data
directory), the operator killed mid-run (SIGTERM and SIGKILL) and restarted on the same
database, and two operator replicas on one database and one Lease with the leader killed.
Each test checks that evaluation goes on, that nothing is lost, counted twice or reset, and
prints the figures (pick-up after the restart, takeover time).
"""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from sentinel_cluster import kube
from sentinel_core.pause_record import Annotation
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import (
    condition,
    deployment_paused,
    distinct_due_times,
    due_lags,
    event_reasons,
    get_analysis,
    queries_for,
    wait_condition,
    wait_rows,
)
from testkit.operator import StartOperator
from testkit.waiting import wait_until

INTERVAL = 5.0
PAUSED_BY = Annotation.PAUSED_BY.value


def test_api_server_down_and_back(
    start_operator: StartOperator,
    restartable_cluster: Cluster,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 11: the watch resumes, a new analysis is picked up, nothing is lost, no crash.

    Then the caches: relisted after the server's 410 Gone, a target deleted and created again
    paused as the new one, a person's `kubectl rollout resume` seen within one interval.
    """
    cluster = restartable_cluster
    namespace = f"sab-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", namespace)
    operator = start_operator(
        prometheus_url=fault_proxy.url, namespaces=[namespace], kubeconfig=cluster.kubeconfig
    )
    client = kube.KubeClient(kube.load_api_client(str(cluster.kubeconfig)))
    metric = gauge_metric(case, 0.5)
    gauge(0.1)
    kubectl_apply(
        cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest("before", namespace, metrics=[metric]),
    )
    wait_condition(client, namespace, "before", "Ready", "Evaluating", timeout=8)
    rows_before = wait_rows(
        operator, namespace, "before", lambda rows: len(rows) >= 2, timeout=10, what="2 rows"
    )

    cluster.stop()
    stopped = time.monotonic()
    # Long enough for the watch to break and its reconnection to be refused.
    time.sleep(3)
    assert operator.running
    cluster.start()
    print(f"API server down for {time.monotonic() - stopped:.1f} s")
    restarted = time.monotonic()
    client = kube.KubeClient(kube.load_api_client(str(cluster.kubeconfig)))

    kubectl_apply(cluster, analysis_manifest("after", namespace, metrics=[metric]))
    created = wait_condition(client, namespace, "after", "Ready", "Evaluating", timeout=60)
    picked_up = time.monotonic() - restarted
    print(f"analysis created after the restart evaluated {picked_up:.1f} s after it")
    assert created["status"]["lastVerdict"] == "Pass"

    # The analysis from before goes on evaluating, its earlier history intact.
    rows = wait_rows(
        operator,
        namespace,
        "before",
        lambda rows: any(row["outcome"] == "Pass" for row in rows[len(rows_before) :]),
        timeout=60,
        what="an evaluation of the old analysis after the restart",
    )
    assert [row["id"] for row in rows[: len(rows_before)]] == [row["id"] for row in rows_before]
    before = get_analysis(client, namespace, "before")
    assert condition(before, "Ready")["reason"] == "Evaluating"
    assert before["status"]["failures"] == 0
    for name in ("before", "after"):
        row = operator.mirror_row(namespace, name)
        assert row is not None and row["deleted_at"] is None and row["ready"]
    assert not deployment_paused(client, namespace)
    assert operator.running

    # The operator's caches through the restart (docs/architecture.md#reads-from-caches): the
    # server dropped their watches and they listed again (told 410 Gone on resuming where they
    # were, or afresh after the outage cost this replica its Lease), while evaluations went on
    # (above). The 410 itself: tests/operator/test_runtime_dispatch.py.
    scene = time.monotonic()
    listed = f"cache /apis/apps/v1/namespaces/{namespace}/deployments: listed "
    wait_until(
        lambda: operator.log_path.read_text(errors="replace").count(listed) >= 2,
        timeout=30,
        what=f"the Deployments' cache listed again\n{operator.log}",
    )
    # A target deleted and created again under the same name: the pause lands on the new one,
    # seen (its uid) before the pause, never on what a stale cache held.
    old_uid = client.request("GET", kube.deployment_path(namespace, "checkout"))["metadata"]["uid"]
    client.request("DELETE", kube.deployment_path(namespace, "checkout"))
    wait_until(
        lambda: not _exists(client, kube.deployment_path(namespace, "checkout")),
        timeout=30,
        what="the old Deployment gone",
    )
    kubectl_apply(cluster, deployment_manifest("checkout", namespace))
    new_uid = client.request("GET", kube.deployment_path(namespace, "checkout"))["metadata"]["uid"]
    assert new_uid != old_uid
    # A metric of its own, so that the analyses from before keep passing.
    trip_gauge = GaugeSetter(gauge.app, gauge.prometheus, f"{case}-trip")
    trip_gauge(0.9)
    trip_metric = gauge_metric(f"{case}-trip", 0.5)
    kubectl_apply(
        cluster, analysis_manifest("trip", namespace, metrics=[trip_metric], failure_limit=1)
    )
    tripped = wait_condition(
        client, namespace, "trip", "RolloutPaused", "FailureLimitReached", timeout=3 * INTERVAL
    )
    target = client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert target["metadata"]["uid"] == new_uid and target["spec"].get("paused") is True
    assert f"{namespace}/trip" in target["metadata"]["annotations"][PAUSED_BY]
    assert tripped["status"]["failures"] == 1
    # A person's `kubectl rollout resume` is seen within one interval of the analysis.
    trip_gauge(0.1)
    cluster.kubectl("-n", namespace, "rollout", "resume", "deployment/checkout")
    resumed_at = time.monotonic()
    wait_condition(
        client, namespace, "trip", "RolloutPaused", "ResumedByUser", timeout=INTERVAL + 2
    )
    print(f"kubectl rollout resume seen after {time.monotonic() - resumed_at:.1f} s")
    print(f"the caches' part of the scene: {time.monotonic() - scene:.1f} s")
    assert not deployment_paused(client, namespace)
    assert "Traceback" not in operator.log_path.read_text(errors="replace")


def _exists(client: kube.KubeClient, path: str) -> bool:
    try:
        client.request("GET", path)
    except kube.NotFound:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_operator_restarted_mid_run(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    case: str,
    sig: signal.Signals,
) -> None:
    """Item 12: after a restart the count continues from the status, neither reset nor doubled."""
    lease = f"sab-{uuid.uuid4().hex[:8]}"
    options = {
        "prometheus_url": fault_proxy.url,
        "namespaces": [namespace],
        "lease_name": lease,
        "identity": f"restarted-{sig.name.lower()}",
    }
    first = start_operator(**options)
    gauge(0.9)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest(
            "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=2
        ),
    )
    wait_until(
        lambda: (
            (get_analysis(kube_client, namespace, "checkout").get("status") or {}).get("failures")
            == 1
        ),
        timeout=8,
        what="one failure",
    )
    # Stop right after an evaluation, so no task is in flight (a claim would delay it 120 s).
    first.stop(sig)
    stopped = time.monotonic()
    # The same identity holds the Lease again at once, also after SIGKILL left it unreleased.
    second = start_operator(database=first.database, **options)
    paused = wait_condition(
        kube_client, namespace, "checkout", "RolloutPaused", "FailureLimitReached", timeout=20
    )
    print(f"{sig.name}: next evaluation done {time.monotonic() - stopped:.1f} s after the stop")
    assert paused["status"]["failures"] == 2
    assert deployment_paused(kube_client, namespace)
    rows = wait_rows(
        second, namespace, "checkout", lambda rows: len(rows) >= 2, timeout=5, what="2 rows"
    )
    assert [(row["outcome"], row["failures_after"], bool(row["paused"])) for row in rows] == [
        ("Fail", 1, False),
        ("Fail", 2, True),
    ]
    assert queries_for(fault_proxy, case) == len(rows)
    assert event_reasons(kube_client, namespace, "checkout").count("RolloutPaused") == 1


def test_two_replicas_one_leader_and_takeover(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Item 13: only the leader dispatches; killed, the other takes over within the lease."""
    lease_duration = 6.0
    options = {
        "prometheus_url": fault_proxy.url,
        "namespaces": [namespace],
        "lease_name": f"sab-{uuid.uuid4().hex[:8]}",
        "lease_duration": lease_duration,
    }
    one = start_operator(identity="replica-one", **options)
    two = start_operator(identity="replica-two", database=one.database, **options)
    replicas = (one, two)

    def leaders() -> list[int]:
        return [index for index, r in enumerate(replicas) if r.metric("sentinel_leader") == 1.0]

    leader_index = wait_until(lambda: leaders() if len(leaders()) == 1 else None, timeout=10)[0]
    leader, follower = replicas[leader_index], replicas[1 - leader_index]

    gauge(0.1)
    kubectl_apply(
        kube_cluster,
        deployment_manifest("checkout", namespace),
        analysis_manifest("checkout", namespace, metrics=[gauge_metric(case, 0.5)]),
    )
    wait_condition(kube_client, namespace, "checkout", "Ready", "Evaluating", timeout=8)
    first_rows = len(leader.evaluations(namespace, "checkout"))
    mark = len(fault_proxy.requests)
    # Three more evaluations, however late a busy machine makes them.
    rows = wait_rows(
        leader,
        namespace,
        "checkout",
        lambda rows: len(rows) >= first_rows + 3,
        timeout=10 * INTERVAL,
        what="three more evaluations",
    )
    during = queries_for(fault_proxy, case, mark)
    lags = due_lags(rows)[max(first_rows - 1, 0) :]
    print(f"two replicas: {during} queries, evaluations {lags} s after their due time")
    # Each evaluation done once: each starts at its due time or later, no due time attempted
    # twice as two replicas dispatching would, and one query each (a history row may trail its
    # query by a moment).
    assert all(lag >= 0 for lag in lags), lags
    assert distinct_due_times(rows), rows
    assert abs((len(rows) - first_rows) - during) <= 1
    assert leaders() == [leader_index]

    killed_rows = len(rows)
    leader.kill()
    killed = time.monotonic()
    wait_until(
        lambda: follower.metric("sentinel_leader") == 1.0,
        timeout=lease_duration + 10,
        interval=0.1,
        what="the follower takes the Lease",
    )
    takeover = time.monotonic() - killed
    after = wait_rows(
        follower,
        namespace,
        "checkout",
        lambda rows: len(rows) > killed_rows,
        timeout=INTERVAL + 10,
        what="an evaluation dispatched by the new leader",
    )
    resumed = time.monotonic() - killed
    print(
        f"takeover {takeover:.1f} s after SIGKILL (lease {lease_duration:.0f} s); "
        f"first evaluation by the new leader {resumed:.1f} s after SIGKILL"
    )
    # The follower waits for the record to stay unchanged for a lease duration, renewing every
    # 2 s: a little more than the lease duration at worst.
    assert takeover <= lease_duration + 4  # plus one 2 s election tick and the dispatch
    assert after[-1]["outcome"] == "Pass"
    # Every query has its history row (written just after the query's evaluation).
    wait_until(
        lambda: queries_for(fault_proxy, case) == len(follower.evaluations(namespace, "checkout")),
        timeout=3,
        what="one history row per query",
    )
    resource = get_analysis(kube_client, namespace, "checkout")
    assert condition(resource, "Ready")["reason"] == "Evaluating"
