"""A StatefulSet and a DaemonSet guarded on devcluster: paused, held, resumed by hand or released.

docs/status.md#pausing-each-kind. devcluster runs no pods, so none rolls: what is checked is
that the same specs are accepted and judged there, and what the operator writes on each kind.
devcluster plays each kind's status as its controller writes it; a StatefulSet's is written
through ``/status`` as its controller would write it mid-rollout (two of five pods at the new
revision), and the partition the pause and the release write moves it as the controller would.
The same story with the real controllers rolling running pods:
tests/realcluster/test_statefulset_daemonset.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sentinel_cluster import kube, writes
from sentinel_core.workload_kinds import Released
from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import analysis_manifest, gauge_metric, workload_manifest
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, event_reasons, wait_condition
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until
from tests.operator import shared

pytestmark = pytest.mark.clusters("dev")

PAUSED_BY = "sentinel.example.com/paused-by"
PARTITION_BEFORE = "sentinel.example.com/partition-before"
STRATEGY_BEFORE = "sentinel.example.com/update-strategy-before"

# These tests share one operator (tests/operator/shared.py).
namespace, operator, fault_proxy = shared.namespace, shared.operator, shared.fault_proxy


def _get(client: kube.KubeClient, kind: str, namespace: str, name: str) -> dict[str, Any]:
    return client.request("GET", kube.workload_path(kind, namespace, name))


def _partition(statefulset: dict[str, Any]) -> int:
    return int(statefulset["spec"]["updateStrategy"]["rollingUpdate"]["partition"])


def test_a_statefulset_is_frozen_by_its_partition_and_released(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    kubectl_apply(kube_cluster, workload_manifest("StatefulSet", "db", namespace, replicas=5))
    stored = _get(kube_client, "StatefulSet", namespace, "db")
    # Defaulted as kube-apiserver defaults it; its status as the controller writes it once the
    # pods run (devcluster plays that: docs/devcluster.md).
    assert stored["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
    }
    assert stored["spec"]["podManagementPolicy"] == "OrderedReady"
    assert stored["status"]["readyReplicas"] == stored["status"]["updatedReplicas"] == 5
    assert stored["status"]["currentRevision"] == stored["status"]["updateRevision"]
    # Mid-rollout, as the StatefulSet controller writes it: ordinals 4 and 3 updated.
    kube_client.request(
        "PUT",
        kube.workload_path("StatefulSet", namespace, "db") + "/status",
        body={
            **stored,
            "status": {
                "observedGeneration": stored["metadata"]["generation"],
                "replicas": 5,
                "availableReplicas": 5,
                "updatedReplicas": 2,
                "currentRevision": "db-old",
                "updateRevision": "db-new",
            },
        },
    )
    metric = gauge_metric(case, 0.5)
    kubectl_apply(
        kube_cluster,
        analysis_manifest(
            "fast", namespace, target="db", kind="StatefulSet", metrics=[metric], failure_limit=1
        ),
        analysis_manifest(
            "slow", namespace, target="db", kind="StatefulSet", metrics=[metric], failure_limit=2
        ),
    )
    paused = wait_condition(kube_client, namespace, "fast", "RolloutPaused", "FailureLimitReached")
    assert "paused StatefulSet db" in condition(paused, "RolloutPaused")["message"]
    held = _get(kube_client, "StatefulSet", namespace, "db")
    assert _partition(held) == 3
    assert held["metadata"]["annotations"][PARTITION_BEFORE] == "0"
    # Frozen: the two updated pods stay, the three below the partition keep the old revision.
    assert (held["status"]["updatedReplicas"], held["status"]["currentRevision"]) == (2, "db-old")
    # The rollout is the revision the controller rolls out, under way when first seen.
    assert paused["status"]["rollout"]["templateHash"] == "db-new"
    assert "startedAt" in paused["status"]["rollout"]
    wait_condition(kube_client, namespace, "slow", "RolloutPaused", "FailureLimitReached")
    held = _get(kube_client, "StatefulSet", namespace, "db")
    # The second pause neither moved the partition nor saved the held one as "before".
    assert _partition(held) == 3
    assert held["metadata"]["annotations"][PARTITION_BEFORE] == "0"
    assert held["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/fast,{namespace}/slow"

    # The web app's release (what services.resume_analysis calls): the first holder's only
    # leaves paused-by; the last one's restores the partition (docs/status.md#pausing-each-kind).
    first = writes.release(kube_client, namespace, "db", f"{namespace}/fast", kind="StatefulSet")
    assert first is not None
    assert (first.outcome, first.holders) == (Released.OTHERS_HOLD, (f"{namespace}/slow",))
    still = _get(kube_client, "StatefulSet", namespace, "db")
    assert _partition(still) == 3
    assert still["metadata"]["annotations"][PAUSED_BY] == f"{namespace}/slow"
    last = writes.release(kube_client, namespace, "db", f"{namespace}/slow", kind="StatefulSet")
    assert last is not None and last.outcome == Released.RESTORED
    released = _get(kube_client, "StatefulSet", namespace, "db")
    assert _partition(released) == 0
    # The controller finishes the rollout: the new revision is the current one.
    assert released["status"]["currentRevision"] == released["status"]["updateRevision"] == "db-new"
    assert not any(
        k.startswith("sentinel.example.com/") for k in released["metadata"]["annotations"]
    )
    # slow's status (written by no web resume here) sees its target running again: a resume,
    # never a second pause.
    resumed = wait_condition(kube_client, namespace, "slow", "RolloutPaused", "ResumedByUser")
    assert resumed["status"]["pausedAt"] is None
    # The event is posted after the status write (outcome.record): wait for it too.
    wait_until(
        lambda: "RolloutResumed" in event_reasons(kube_client, namespace, "slow"),
        timeout=30,
        what="the RolloutResumed event of slow",
    )


def test_a_daemonset_is_frozen_with_on_delete_and_resumed_by_hand(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    kubectl_apply(kube_cluster, workload_manifest("DaemonSet", "agent", namespace))
    before = _get(kube_client, "DaemonSet", namespace, "agent")["spec"]["updateStrategy"]
    assert before == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    kubectl_apply(
        kube_cluster,
        analysis_manifest(
            "agent",
            namespace,
            target="agent",
            kind="DaemonSet",
            metrics=[gauge_metric(case, 0.5)],
            failure_limit=1,
        ),
    )
    wait_condition(kube_client, namespace, "agent", "RolloutPaused", "FailureLimitReached")
    held = _get(kube_client, "DaemonSet", namespace, "agent")
    # Only the type flipped: rollingUpdate stays for the admission guard to compare.
    assert held["spec"]["updateStrategy"] == {**before, "type": "OnDelete"}
    assert json.loads(held["metadata"]["annotations"][STRATEGY_BEFORE]) == before
    shown = kube_cluster.kubectl("get", "ra", "agent", "-n", namespace).stdout
    assert shown.splitlines()[0].split()[:3] == ["NAME", "KIND", "TARGET"]
    assert shown.splitlines()[1].split()[:3] == ["agent", "DaemonSet", "agent"]

    # The metric recovers and a person restores the rolling update by hand: the operator
    # reports the resume.
    gauge(0.1)
    kube_cluster.kubectl(
        "patch", "ds", "agent", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"updateStrategy": before}}),
    )  # fmt: skip
    resumed = wait_condition(kube_client, namespace, "agent", "RolloutPaused", "ResumedByUser")
    assert resumed["status"]["failures"] <= 1
    # Never auto-resumed, never paused again in the reconcile that saw the resume.
    wait_until(
        lambda: event_reasons(kube_client, namespace, "agent").count("RolloutResumed") == 1,
        timeout=5,
        what="one RolloutResumed event",
    )
