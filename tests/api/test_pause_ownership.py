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
from dataclasses import dataclass
from typing import Any

import pytest
import requests

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


@dataclass(frozen=True)
class _Scene:
    """The running operator, the REST API and the cluster of one test, and its steps."""

    operator: OperatorProcess
    api: Api
    namespace: str
    cluster: Cluster
    kube_client: kube.KubeClient
    gauge: GaugeSetter
    case: str

    def create(self, name: str, **kwargs: Any) -> None:
        """Create the analysis through the REST API (so the live server mirrors it)."""
        spec = analysis_manifest(name, self.namespace, **kwargs)["spec"]
        body = {"namespace": self.namespace, "name": name, "spec": spec}
        response = self.api.post("analyses/", json=body)
        assert response.status_code == 201, response.text

    def hold(self, name: str, **kwargs: Any) -> None:
        """Create an analysis failing on its first evaluation; wait until it paused the target."""
        self.create(name, metrics=[gauge_metric(self.case, 0.5)], failure_limit=1, **kwargs)
        self.wait_paused(name)

    def wait_paused(self, name: str) -> None:
        wait_condition(
            self.kube_client, self.namespace, name, "RolloutPaused", "FailureLimitReached"
        )

    def wait_resumed_by_user(self, name: str) -> None:
        wait_condition(
            self.kube_client, self.namespace, name, "RolloutPaused", "ResumedByUser", timeout=30
        )

    def resume(self, name: str) -> requests.Response:
        """Resume the analysis through the REST API."""
        return self.api.post(f"analyses/{self.namespace}/{name}/resume/")

    def analysis(self, name: str) -> dict[str, Any]:
        return self.kube_client.request("GET", kube.analysis_path(self.namespace, name))

    def jsonpath(self, kind: str, name: str, path: str) -> str:
        """Return what ``kubectl get KIND NAME -o jsonpath=PATH`` prints."""
        args = ("get", kind, name, "-n", self.namespace, "-o", f"jsonpath={path}")
        return self.cluster.kubectl(*args).stdout.strip()

    def spec(self, kind: str, name: str) -> dict[str, Any]:
        """Return the target's whole spec, as ``kubectl get -o json`` prints it."""
        found = self.cluster.kubectl("get", kind, name, "-n", self.namespace, "-o", "json")
        return json.loads(found.stdout)["spec"]

    def paused(self, deployment: str) -> str:
        """Return the Deployment's ``spec.paused`` as kubectl prints it."""
        return self.jsonpath("deploy", deployment, "{.spec.paused}")

    def patch(self, kind: str, name: str, patch: dict[str, Any]) -> None:
        """Merge-patch the object with the real kubectl, as a person would."""
        self.cluster.kubectl(
            "patch", kind, name, "-n", self.namespace, "--type=merge", "-p", json.dumps(patch)
        )

    def record(self, kind: str, name: str) -> dict[str, str]:
        """Return the ``sentinel.example.com/*`` annotations on the target."""
        found = self.cluster.kubectl("get", kind, name, "-n", self.namespace, "-o", "json")
        annotations = json.loads(found.stdout)["metadata"].get("annotations") or {}
        return {k.removeprefix(PREFIX): v for k, v in annotations.items() if k.startswith(PREFIX)}

    def no_record(self, kind: str, name: str) -> bool:
        return not self.record(kind, name)

    def wait_no_record(self, kind: str, name: str, what: str, timeout: float) -> None:
        wait_until(lambda: self.no_record(kind, name), timeout=timeout, what=what)

    def event(self, name: str, reason: str, timeout: float) -> dict[str, Any]:
        """Wait for the analysis's one Event with this reason; return it."""
        wait_until(
            lambda: reason in event_reasons(self.kube_client, self.namespace, name),
            timeout=timeout,
            what=f"the {reason} event",
        )
        (found,) = [
            e for e in events_for(self.kube_client, self.namespace, name) if e["reason"] == reason
        ]
        return found


@pytest.fixture
def scene(
    operator: OperatorProcess,
    api: Api,
    namespace: str,
    api_cluster: Cluster,
    kube_client: kube.KubeClient,
    gauge: GaugeSetter,
    case: str,
) -> _Scene:
    return _Scene(operator, api, namespace, api_cluster, kube_client, gauge, case)


def test_a_persons_pause_is_kept_after_the_analysis_resume(scene: _Scene) -> None:
    """Sabotage 24: the confused deputy. A person paused the Deployment for maintenance."""
    namespace = scene.namespace
    scene.gauge(0.9)
    kubectl_apply(scene.cluster, deployment_manifest("checkout", namespace))
    scene.cluster.kubectl("rollout", "pause", "deployment/checkout", "-n", namespace)
    assert scene.paused("checkout") == "true"
    # An analysis that trips on it records itself, and that the Deployment was paused before.
    scene.create("b", metrics=[gauge_metric(scene.case, 0.0)], failure_limit=1)
    scene.wait_paused("b")
    record = scene.record("deploy", "checkout")
    assert (record["paused-by"], record["paused-before"]) == (f"{namespace}/b", "true")
    # With -s, for a closing note: what kubectl shows before and after the resume.
    print(f"before the resume of b: .spec.paused={scene.paused('checkout')!r}, record {record}")

    response = scene.resume("b")

    assert response.status_code == 200, response.text
    release = response.json()["release"]
    assert release["outcome"] == "kept-held-before"
    assert "stays paused as it was before" in release["message"]
    # The person's pause stands; only the analysis's record is gone.
    assert scene.paused("checkout") == "true"
    assert scene.no_record("deploy", "checkout")
    print(f"resume of b: {response.status_code} {release}")
    after = scene.record("deploy", "checkout")
    print(f"after: .spec.paused={scene.paused('checkout')!r}, record {after}")
    resumed = condition(response.json(), "RolloutPaused")
    assert (resumed["status"], resumed["reason"]) == ("False", "ResumedByUser")
    # A second resume: it holds nothing now, and says so without touching anything.
    again = scene.resume("b")
    assert again.status_code == 409, again.text
    assert again.json() == {
        "detail": f"Nothing to release: {namespace}/b holds no pause on Deployment "
        f"{namespace}/checkout (the Deployment was paused by someone else); nothing was changed.",
        "code": "nothing_to_release",
    }
    assert scene.paused("checkout") == "true"
    print(f"second resume of b: {again.status_code} {again.json()}")


def test_two_holders_release_the_deployment_with_the_last(scene: _Scene) -> None:
    """Sabotage 25: two analyses hold one target; resuming one lifts nothing."""
    namespace = scene.namespace
    scene.gauge(0.9)
    kubectl_apply(scene.cluster, deployment_manifest("checkout", namespace))
    metric = gauge_metric(scene.case, 0.5)
    scene.create("latency", metrics=[metric], failure_limit=1)
    scene.create("errors", metrics=[metric], failure_limit=2)
    for name in ("latency", "errors"):
        scene.wait_paused(name)
    record = scene.record("deploy", "checkout")
    assert record["paused-by"] == f"{namespace}/latency,{namespace}/errors"
    assert record["paused-before"] == "false"
    scene.gauge(0.1)  # the metric recovers; neither analysis resumes by itself

    first = scene.resume("latency")

    assert first.status_code == 200, first.text
    assert first.json()["release"]["heldBy"] == [f"{namespace}/errors"]
    assert first.json()["release"]["outcome"] == "others-hold"
    assert scene.paused("checkout") == "true"
    assert scene.record("deploy", "checkout")["paused-by"] == f"{namespace}/errors"

    last = scene.resume("errors")

    assert last.status_code == 200, last.text
    assert last.json()["release"] == {
        "target": f"Deployment {namespace}/checkout",
        "outcome": "restored",
        "heldBy": [],
        "message": f"Deployment {namespace}/checkout is rolling out again; the failure count "
        f"of {namespace}/errors was reset.",
    }
    # Unpaused: kube-apiserver drops a false spec.paused (omitempty), devcluster keeps it.
    assert scene.paused("checkout") in ("", "false")
    assert scene.no_record("deploy", "checkout")


def test_a_stale_statefulset_record_never_moves_a_persons_canary(scene: _Scene) -> None:
    """Sabotage 26: paused, lowered by hand, later a person's canary partition."""
    scene.gauge(0.9)
    kubectl_apply(
        scene.cluster, workload_manifest("StatefulSet", "db", scene.namespace, replicas=5)
    )
    scene.hold("db", target="db", kind="StatefulSet")
    partition = "{.spec.updateStrategy.rollingUpdate.partition}"
    # No rollout under way: the whole set is held at its replicas.
    assert scene.jsonpath("sts", "db", partition) == "5"
    assert scene.record("sts", "db")["partition-before"] == "0"
    scene.gauge(0.1)
    # A person resumes by hand: the operator reports it and removes the stale record.
    scene.patch("sts", "db", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}})
    scene.wait_resumed_by_user("db")
    scene.wait_no_record("sts", "db", "the stale record removed", timeout=30)
    # Later a person stages a canary: partition 3.
    scene.patch("sts", "db", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 3}}}})

    response = scene.resume("db")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "nothing_to_release"
    assert "(the StatefulSet is not paused)" in response.json()["detail"]
    assert scene.jsonpath("sts", "db", partition) == "3"
    print(f"resume over the canary: {response.status_code} {response.json()}; partition 3 stays")
    # The status does not claim a hold the operator did not make.
    assert condition(scene.analysis("db"), "RolloutPaused")["status"] == "False"
    assert event_reasons(scene.kube_client, scene.namespace, "db").count("RolloutResumed") == 1


def test_a_daemonset_a_person_set_to_on_delete_stays_on_delete(scene: _Scene) -> None:
    """Sabotage 27: paused, restored by hand, later deliberately OnDelete."""
    scene.gauge(0.9)
    kubectl_apply(scene.cluster, workload_manifest("DaemonSet", "agent", scene.namespace))
    before = json.loads(scene.jsonpath("ds", "agent", "{.spec.updateStrategy}"))
    scene.hold("agent", target="agent", kind="DaemonSet")
    strategy = "{.spec.updateStrategy.type}"
    assert scene.jsonpath("ds", "agent", strategy) == "OnDelete"
    scene.gauge(0.1)
    scene.patch("ds", "agent", {"spec": {"updateStrategy": before}})  # restored by hand
    scene.wait_resumed_by_user("agent")
    scene.wait_no_record("ds", "agent", "the stale record removed", timeout=30)
    deliberate = {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}
    scene.patch("ds", "agent", deliberate)

    response = scene.resume("agent")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "nothing_to_release"
    assert "(the DaemonSet was paused by someone else)" in response.json()["detail"]
    assert scene.jsonpath("ds", "agent", strategy) == "OnDelete"


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
    scene: _Scene, kind: str, short: str, garble: dict[str, str | None], problem: str
) -> None:
    """Sabotage 28: half-deleted, non-ASCII digits, deeply nested JSON."""
    namespace = scene.namespace
    scene.gauge(0.9)
    kubectl_apply(scene.cluster, workload_manifest(kind, "app", namespace, replicas=5))
    # 15 s between evaluations: time for the person's edit and the resume before the operator
    # looks again (it evaluates a new analysis at once, and pauses then).
    scene.hold("guard", target="app", kind=kind, interval="15s")
    spec_before = scene.spec(short, "app")
    scene.gauge(0.1)
    scene.patch(
        short, "app", {"metadata": {"annotations": {PREFIX + k: v for k, v in garble.items()}}}
    )

    response = scene.resume("guard")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "untrusted_pause_record"
    assert response.json()["detail"].startswith(
        f"The pause record on {kind} {namespace}/app cannot be trusted ("
    )
    assert problem in response.json()["detail"]
    # The operator's next evaluation: the status says so, an Event names it, the record goes,
    # nothing of the spec is restored, and no attempt failed.
    untrusted = wait_condition(
        scene.kube_client, namespace, "guard", "RolloutPaused", "UntrustedPauseRecord", timeout=40
    )
    assert problem in condition(untrusted, "RolloutPaused")["message"]
    event = scene.event("guard", "UntrustedPauseRecord", timeout=15)
    assert event["type"] == "Warning" and problem in event["message"]
    print(f"{kind} {str(garble)[:80]}: resume {response.status_code} {response.json()}")
    print(f"  Event {event['type']} {event['reason']}: {event['message']}")
    scene.wait_no_record(short, "app", "the untrusted record removed", timeout=15)
    assert scene.spec(short, "app")["updateStrategy"] == spec_before["updateStrategy"]
    rows = scene.operator.evaluations(namespace, "guard")
    assert rows and all(row["outcome"] != "Error" for row in rows), rows
    assert "Traceback" not in scene.operator.log


def test_a_kubectl_edit_pointing_a_paused_analysis_elsewhere_reports_the_pause_left_behind(
    scene: _Scene,
) -> None:
    """Sabotage 29: the REST API and the admin refuse it; kubectl bypasses them."""
    namespace = scene.namespace
    scene.gauge(0.9)
    kubectl_apply(
        scene.cluster,
        deployment_manifest("checkout", namespace),
        deployment_manifest("payments", namespace),
    )
    scene.hold("guard")
    scene.gauge(0.1)
    scene.patch("ra", "guard", {"spec": {"target": {"kind": "Deployment", "name": "payments"}}})

    event = scene.event("guard", "PauseLeftBehind", timeout=30)

    assert event["type"] == "Warning"
    assert "still holds Deployment checkout paused: nothing was released" in event["message"]
    # Never auto-resumed: the old target keeps its pause and its record; the new one runs.
    assert scene.paused("checkout") == "true"
    assert scene.record("deploy", "checkout")["paused-by"] == f"{namespace}/guard"
    assert scene.paused("payments") != "true"
    assert condition(scene.analysis("guard"), "RolloutPaused")["status"] == "False"
    assert "RolloutResumed" not in event_reasons(scene.kube_client, namespace, "guard")
