"""A pause belongs to whoever made it, end to end on both clusters.

docs/status.md#pausing-each-kind and #when-a-pause-record-is-not-trusted; the sabotage rows
24-29 of docs/operator.md#when-things-go-wrong. A real ``runoperator`` (watching the test's
namespace, the real Prometheus behind it) pauses the target; a person acts with the real kubectl;
the resume goes through the REST API on the live server, which writes the cluster with the
product's own ``sentinel_cluster.writes``. Each test checks the target's spec with kubectl before
and after, the analysis's status and Events, and the resume's answer. The pure cases:
tests/core/test_pause_record.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import (
    analysis_manifest,
    deployment_manifest,
    gauge_metric,
    workload_manifest,
)
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, event_reasons, events_for, wait_condition
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)

PREFIX = "sentinel.example.com/"


def _create(api: Api, namespace: str, name: str, **kwargs: Any) -> None:
    """Create the analysis through the REST API (so the live server mirrors it)."""
    spec = analysis_manifest(name, namespace, **kwargs)["spec"]
    response = api.post("analyses/", json={"namespace": namespace, "name": name, "spec": spec})
    assert response.status_code == 201, response.text


def _jsonpath(cluster: Cluster, kind: str, name: str, namespace: str, path: str) -> str:
    """Return what ``kubectl get KIND NAME -o jsonpath=PATH`` prints."""
    args = ("get", kind, name, "-n", namespace, "-o", f"jsonpath={path}")
    return cluster.kubectl(*args).stdout.strip()


def _record(cluster: Cluster, kind: str, name: str, namespace: str) -> dict[str, str]:
    """Return the ``sentinel.example.com/*`` annotations on the target."""
    found = json.loads(cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)
    annotations = found["metadata"].get("annotations") or {}
    return {k.removeprefix(PREFIX): v for k, v in annotations.items() if k.startswith(PREFIX)}


def _no_record(cluster: Cluster, kind: str, name: str, namespace: str) -> bool:
    return not _record(cluster, kind, name, namespace)


def test_a_persons_pause_is_kept_after_the_analysis_resume(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Sabotage 24: the confused deputy. A person paused the Deployment for maintenance."""
    gauge(0.9)
    kubectl_apply(api_cluster, deployment_manifest("checkout", namespace))
    api_cluster.kubectl("rollout", "pause", "deployment/checkout", "-n", namespace)
    assert _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}") == "true"
    # An analysis that trips on it records itself, and that the Deployment was paused before.
    _create(api, namespace, "b", metrics=[gauge_metric(case, 0.0)], failure_limit=1)
    wait_condition(kube_client, namespace, "b", "RolloutPaused", "FailureLimitReached")
    record = _record(api_cluster, "deploy", "checkout", namespace)
    assert (record["paused-by"], record["paused-before"]) == (f"{namespace}/b", "true")

    response = api.post(f"analyses/{namespace}/b/resume/")

    assert response.status_code == 200, response.text
    release = response.json()["release"]
    assert release["outcome"] == "kept-held-before"
    assert "stays paused as it was before" in release["message"]
    # The person's pause stands; only the analysis's record is gone.
    assert _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}") == "true"
    assert _no_record(api_cluster, "deploy", "checkout", namespace)
    resumed = condition(response.json(), "RolloutPaused")
    assert (resumed["status"], resumed["reason"]) == ("False", "ResumedByUser")
    # A second resume: it holds nothing now, and says so without touching anything.
    again = api.post(f"analyses/{namespace}/b/resume/")
    assert again.status_code == 409, again.text
    assert again.json() == {
        "detail": f"Nothing to release: {namespace}/b holds no pause on Deployment "
        f"{namespace}/checkout (the Deployment was paused by someone else); nothing was changed.",
        "code": "nothing_to_release",
    }
    assert _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}") == "true"


def test_two_holders_release_the_deployment_with_the_last(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Sabotage 25: two analyses hold one target; resuming one lifts nothing."""
    gauge(0.9)
    kubectl_apply(api_cluster, deployment_manifest("checkout", namespace))
    metric = gauge_metric(case, 0.5)
    _create(api, namespace, "latency", metrics=[metric], failure_limit=1)
    _create(api, namespace, "errors", metrics=[metric], failure_limit=2)
    for name in ("latency", "errors"):
        wait_condition(kube_client, namespace, name, "RolloutPaused", "FailureLimitReached")
    record = _record(api_cluster, "deploy", "checkout", namespace)
    assert record["paused-by"] == f"{namespace}/latency,{namespace}/errors"
    assert record["paused-before"] == "false"
    gauge(0.1)  # the metric recovers; neither analysis resumes by itself

    first = api.post(f"analyses/{namespace}/latency/resume/")

    assert first.status_code == 200, first.text
    assert first.json()["release"]["heldBy"] == [f"{namespace}/errors"]
    assert first.json()["release"]["outcome"] == "others-hold"
    assert _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}") == "true"
    assert _record(api_cluster, "deploy", "checkout", namespace)["paused-by"] == (
        f"{namespace}/errors"
    )

    last = api.post(f"analyses/{namespace}/errors/resume/")

    assert last.status_code == 200, last.text
    assert last.json()["release"] == {
        "target": f"Deployment {namespace}/checkout",
        "outcome": "restored",
        "heldBy": [],
        "message": f"Deployment {namespace}/checkout is rolling out again; the failure count "
        f"of {namespace}/errors was reset.",
    }
    # Unpaused: kube-apiserver drops a false spec.paused (omitempty), devcluster keeps it.
    paused = _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}")
    assert paused in ("", "false")
    assert _no_record(api_cluster, "deploy", "checkout", namespace)


def test_a_stale_statefulset_record_never_moves_a_persons_canary(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Sabotage 26: paused, lowered by hand, later a person's canary partition."""
    gauge(0.9)
    kubectl_apply(api_cluster, workload_manifest("StatefulSet", "db", namespace, replicas=5))
    _create(
        api, namespace, "db", target="db", kind="StatefulSet",
        metrics=[gauge_metric(case, 0.5)], failure_limit=1,
    )  # fmt: skip
    wait_condition(kube_client, namespace, "db", "RolloutPaused", "FailureLimitReached")
    partition = "{.spec.updateStrategy.rollingUpdate.partition}"
    # No rollout under way: the whole set is held at its replicas.
    assert _jsonpath(api_cluster, "sts", "db", namespace, partition) == "5"
    assert _record(api_cluster, "sts", "db", namespace)["partition-before"] == "0"
    gauge(0.1)
    # A person resumes by hand: the operator reports it and removes the stale record.
    patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
    api_cluster.kubectl(
        "patch", "sts", "db", "-n", namespace, "--type=merge", "-p", json.dumps(patch)
    )
    wait_condition(kube_client, namespace, "db", "RolloutPaused", "ResumedByUser", timeout=30)
    wait_until(
        lambda: _no_record(api_cluster, "sts", "db", namespace),
        timeout=30,
        what="the stale record removed",
    )
    # Later a person stages a canary: partition 3.
    patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 3}}}}
    api_cluster.kubectl(
        "patch", "sts", "db", "-n", namespace, "--type=merge", "-p", json.dumps(patch)
    )

    response = api.post(f"analyses/{namespace}/db/resume/")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "nothing_to_release"
    assert "(the StatefulSet is not paused)" in response.json()["detail"]
    assert _jsonpath(api_cluster, "sts", "db", namespace, partition) == "3"
    analysis = kube_client.request("GET", kube.analysis_path(namespace, "db"))
    # The status does not claim a hold the operator did not make.
    assert condition(analysis, "RolloutPaused")["status"] == "False"
    assert event_reasons(kube_client, namespace, "db").count("RolloutResumed") == 1


def test_a_daemonset_a_person_set_to_on_delete_stays_on_delete(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Sabotage 27: paused, restored by hand, later deliberately OnDelete."""
    gauge(0.9)
    kubectl_apply(api_cluster, workload_manifest("DaemonSet", "agent", namespace))
    before = json.loads(_jsonpath(api_cluster, "ds", "agent", namespace, "{.spec.updateStrategy}"))
    _create(
        api, namespace, "agent", target="agent", kind="DaemonSet",
        metrics=[gauge_metric(case, 0.5)], failure_limit=1,
    )  # fmt: skip
    wait_condition(kube_client, namespace, "agent", "RolloutPaused", "FailureLimitReached")
    strategy = "{.spec.updateStrategy.type}"
    assert _jsonpath(api_cluster, "ds", "agent", namespace, strategy) == "OnDelete"
    gauge(0.1)
    by_hand = json.dumps({"spec": {"updateStrategy": before}})
    api_cluster.kubectl("patch", "ds", "agent", "-n", namespace, "--type=merge", "-p", by_hand)
    wait_condition(kube_client, namespace, "agent", "RolloutPaused", "ResumedByUser", timeout=30)
    wait_until(
        lambda: _no_record(api_cluster, "ds", "agent", namespace),
        timeout=30,
        what="the stale record removed",
    )
    deliberate = json.dumps(
        {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}
    )
    api_cluster.kubectl("patch", "ds", "agent", "-n", namespace, "--type=merge", "-p", deliberate)

    response = api.post(f"analyses/{namespace}/agent/resume/")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "nothing_to_release"
    assert "(the DaemonSet was paused by someone else)" in response.json()["detail"]
    assert _jsonpath(api_cluster, "ds", "agent", namespace, strategy) == "OnDelete"


# The record garbled by hand after the pause, each on its kind: what the operator's account
# reads, what the web resume answers, what the Event says.
GARBLED = [
    ("StatefulSet", "sts", {"partition-before": None}, "partition-before is missing"),
    ("StatefulSet", "sts", {"paused-partition": "\u00b2"}, "is not a whole number"),
    (
        "DaemonSet",
        "ds",
        {"update-strategy-before": '{"type":"RollingUpdate","rollingUpdate":' + "[" * 20_000},
        "update-strategy-before is oversized",
    ),
]


@pytest.mark.parametrize(("kind", "short", "garble", "problem"), GARBLED)
def test_a_garbled_record_is_not_trusted_reported_and_never_restored(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
    kind: str,
    short: str,
    garble: dict[str, str | None],
    problem: str,
) -> None:
    """Sabotage 28: half-deleted, non-ASCII digits, deeply nested JSON."""
    gauge(0.9)
    kubectl_apply(api_cluster, workload_manifest(kind, "app", namespace, replicas=5))
    # 15 s between evaluations: time for the person's edit and the resume before the operator
    # looks again (it evaluates a new analysis at once, and pauses then).
    _create(
        api, namespace, "guard", target="app", kind=kind, interval="15s",
        metrics=[gauge_metric(case, 0.5)], failure_limit=1,
    )  # fmt: skip
    wait_condition(kube_client, namespace, "guard", "RolloutPaused", "FailureLimitReached")
    spec_before = json.loads(
        api_cluster.kubectl("get", short, "app", "-n", namespace, "-o", "json").stdout
    )["spec"]
    gauge(0.1)
    patch = {"metadata": {"annotations": {PREFIX + k: v for k, v in garble.items()}}}
    api_cluster.kubectl(
        "patch", short, "app", "-n", namespace, "--type=merge", "-p", json.dumps(patch)
    )

    response = api.post(f"analyses/{namespace}/guard/resume/")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "untrusted_pause_record"
    assert response.json()["detail"].startswith(
        f"The pause record on {kind} {namespace}/app cannot be trusted ("
    )
    assert problem in response.json()["detail"]
    # The operator's next evaluation: the status says so, an Event names it, the record goes,
    # nothing of the spec is restored, and no attempt failed.
    untrusted = wait_condition(
        kube_client, namespace, "guard", "RolloutPaused", "UntrustedPauseRecord", timeout=40
    )
    assert problem in condition(untrusted, "RolloutPaused")["message"]
    wait_until(
        lambda: "UntrustedPauseRecord" in event_reasons(kube_client, namespace, "guard"),
        timeout=15,
        what="the UntrustedPauseRecord event",
    )
    (event,) = [
        e
        for e in events_for(kube_client, namespace, "guard")
        if e["reason"] == "UntrustedPauseRecord"
    ]
    assert event["type"] == "Warning" and problem in event["message"]
    wait_until(
        lambda: _no_record(api_cluster, short, "app", namespace),
        timeout=15,
        what="the untrusted record removed",
    )
    spec_after = json.loads(
        api_cluster.kubectl("get", short, "app", "-n", namespace, "-o", "json").stdout
    )["spec"]
    assert spec_after["updateStrategy"] == spec_before["updateStrategy"]
    rows = operator.evaluations(namespace, "guard")
    assert rows and all(row["outcome"] != "Error" for row in rows), rows
    assert "Traceback" not in operator.log


def test_a_kubectl_edit_pointing_a_paused_analysis_elsewhere_reports_the_pause_left_behind(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """Sabotage 29: the REST API and the admin refuse it; kubectl bypasses them."""
    gauge(0.9)
    kubectl_apply(
        api_cluster,
        deployment_manifest("checkout", namespace),
        deployment_manifest("payments", namespace),
    )
    _create(api, namespace, "guard", metrics=[gauge_metric(case, 0.5)], failure_limit=1)
    wait_condition(kube_client, namespace, "guard", "RolloutPaused", "FailureLimitReached")
    gauge(0.1)
    retarget = json.dumps({"spec": {"target": {"kind": "Deployment", "name": "payments"}}})
    api_cluster.kubectl("patch", "ra", "guard", "-n", namespace, "--type=merge", "-p", retarget)

    wait_until(
        lambda: "PauseLeftBehind" in event_reasons(kube_client, namespace, "guard"),
        timeout=30,
        what="the PauseLeftBehind event",
    )
    (event,) = [
        e for e in events_for(kube_client, namespace, "guard") if e["reason"] == "PauseLeftBehind"
    ]
    assert event["type"] == "Warning"
    assert "still holds Deployment checkout paused: nothing was released" in event["message"]
    # Never auto-resumed: the old target keeps its pause and its record; the new one runs.
    assert _jsonpath(api_cluster, "deploy", "checkout", namespace, "{.spec.paused}") == "true"
    assert (
        _record(api_cluster, "deploy", "checkout", namespace)["paused-by"] == f"{namespace}/guard"
    )
    assert _jsonpath(api_cluster, "deploy", "payments", namespace, "{.spec.paused}") != "true"
    analysis = kube_client.request("GET", kube.analysis_path(namespace, "guard"))
    assert condition(analysis, "RolloutPaused")["status"] == "False"
    assert "RolloutResumed" not in event_reasons(kube_client, namespace, "guard")
