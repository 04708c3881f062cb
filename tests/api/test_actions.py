"""Resume (unpause the target, reset the count in the status) and evaluate (due now)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.utils import timezone

from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_core.conditions import Annotation
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from testkit.manifests import deployment_manifest, pause_record
from tests.analyses.resources import paused_status
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)


def _paused_by(*keys: str) -> dict[str, str]:
    # The record a pause of a running Deployment by these analyses leaves.
    return pause_record(*keys)


def _pause_as_the_operator(
    client: kube.KubeClient, namespace: str, name: str, seal: str | None = None
) -> dict[str, Any]:
    """Write a paused status through the status subresource, as the operator would; mirror it."""
    path = kube.analysis_path(namespace, name)
    resource = client.request("GET", path)
    status = paused_status() if seal is None else {**paused_status(), "seal": seal}
    written = client.request("PUT", f"{path}/status", body={**resource, "status": status})
    mirror.upsert_from_resource(written)
    return written


def _create(api: Api, namespace: str, name: str, target: str = "checkout") -> None:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": name, "spec": spec(target)}
    )
    assert response.status_code == 201, response.text


def _apply(cluster: Cluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


def _spec_paused(cluster: Cluster, namespace: str) -> str:
    """Return ``.spec.paused`` of the checkout Deployment as kubectl prints it."""
    args = ("get", "deploy", "checkout", "-n", namespace, "-o", "jsonpath={.spec.paused}")
    return cluster.kubectl(*args).stdout.strip()


def test_resume_unpauses_the_target_and_resets_failures(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    key = f"{namespace}/guard"
    _apply(
        api_cluster,
        deployment_manifest("checkout", namespace, paused=True, annotations=_paused_by(key)),
    )
    _create(api, namespace, "guard")
    # The operator's seal (docs/status.md#what-the-operator-trusts-in-its-status).
    seal = "v1:" + "e" * 32 + ":" + "c" * 32
    _pause_as_the_operator(cluster_client, namespace, "guard", seal=seal)
    assert Analysis.objects.get(name="guard").paused

    response = api.post(f"analyses/{namespace}/guard/resume/")

    assert response.status_code == 200, response.text
    target = kubectl_json(api_cluster, "deployment", "checkout", "-n", namespace)
    assert target["spec"].get("paused") in (None, False)
    annotations = target["metadata"].get("annotations") or {}
    assert not {a.value for a in Annotation} & set(annotations)
    status = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)["status"]
    assert status["failures"] == 0
    assert status["pausedAt"] is None
    # The seal is kept: the evidence it covers still verifies, the reset count needs none.
    assert status["seal"] == seal
    paused = next(c for c in status["conditions"] if c["type"] == "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("False", "ResumedByUser")
    assert "through the REST API" in paused["message"]
    # Other conditions are left as the operator wrote them.
    healthy = next(c for c in status["conditions"] if c["type"] == "Healthy")
    assert healthy["reason"] == "ThresholdExceeded"
    assert response.json()["status"] == status
    assert response.json()["release"] == {
        "target": f"Deployment {namespace}/checkout",
        "outcome": "restored",
        "heldBy": [],
        "message": f"Deployment {namespace}/checkout is rolling out again; the failure count of "
        f"{key} was reset.",
    }
    row = Analysis.objects.get(name="guard")
    assert (row.paused, row.failures) == (False, 0)
    events = cluster_client.request("GET", kube.events_path(namespace))["items"]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == "guard"] == [
        "RolloutResumed"
    ]


def test_resume_of_one_holder_leaves_the_target_paused_for_the_other(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    mine, theirs = f"{namespace}/latency", f"{namespace}/errors"
    _apply(
        api_cluster,
        deployment_manifest(
            "checkout", namespace, paused=True, annotations=_paused_by(mine, theirs)
        ),
    )
    _create(api, namespace, "latency")
    _pause_as_the_operator(cluster_client, namespace, "latency")

    response = api.post(f"analyses/{namespace}/latency/resume/")

    assert response.status_code == 200, response.text
    # Released by the last holder only (docs/status.md#pausing-each-kind); the answer says who
    # still holds it.
    assert _spec_paused(api_cluster, namespace) == "true"
    target = kubectl_json(api_cluster, "deployment", "checkout", "-n", namespace)
    assert target["metadata"]["annotations"][Annotation.PAUSED_BY.value] == theirs
    release = response.json()["release"]
    assert (release["outcome"], release["heldBy"]) == ("others-hold", [theirs])
    assert f"stays paused: still held by {theirs}" in release["message"]
    assert response.json()["status"]["failures"] == 0


def test_resume_touches_only_the_analysis_namespace(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    other = f"{namespace}-other"
    api_cluster.kubectl("create", "namespace", other)
    try:
        # A paused Deployment of the target's name, but in another namespace.
        _apply(
            api_cluster,
            deployment_manifest(
                "checkout", other, paused=True, annotations=_paused_by(f"{namespace}/guard")
            ),
        )
        _create(api, namespace, "guard")
        _pause_as_the_operator(cluster_client, namespace, "guard")

        response = api.post(f"analyses/{namespace}/guard/resume/")

        # Its own namespace has no such target: nothing to release, nothing changed anywhere.
        assert response.status_code == 409, response.text
        assert response.json() == {
            "detail": f"Nothing to release: Deployment {namespace}/checkout was not found; "
            "nothing was changed.",
            "code": "nothing_to_release",
        }
        elsewhere = kubectl_json(api_cluster, "deployment", "checkout", "-n", other)
        assert elsewhere["spec"]["paused"] is True
        assert Annotation.PAUSED_BY.value in elsewhere["metadata"]["annotations"]
        status = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)["status"]
        assert status["failures"] == paused_status()["failures"]
    finally:
        api_cluster.kubectl("delete", "namespace", other, "--wait=false")


def test_resume_of_an_analysis_that_holds_nothing_changes_nothing(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    # A person paused the rollout with kubectl; this analysis never did, though its status
    # (forged, or stale) claims the pause.
    _apply(api_cluster, deployment_manifest("checkout", namespace))
    api_cluster.kubectl("rollout", "pause", "deployment/checkout", "-n", namespace)
    _create(api, namespace, "guard")
    _pause_as_the_operator(cluster_client, namespace, "guard")
    assert _spec_paused(api_cluster, namespace) == "true"
    before = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)

    response = api.post(f"analyses/{namespace}/guard/resume/")

    assert response.status_code == 409, response.text
    assert response.json() == {
        "detail": f"Nothing to release: {namespace}/guard holds no pause on Deployment "
        f"{namespace}/checkout (the Deployment was paused by someone else); nothing was changed.",
        "code": "nothing_to_release",
    }
    assert _spec_paused(api_cluster, namespace) == "true"
    after = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    events = cluster_client.request("GET", kube.events_path(namespace))["items"]
    assert not [e for e in events if e["involvedObject"]["name"] == "guard"]


def test_resume_over_an_untrusted_record_is_409_and_restores_nothing(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    key = f"{namespace}/guard"
    record = {**_paused_by(key)}
    # Half-deleted: without paused-before nobody can say whether a person had paused it.
    del record[Annotation.PAUSED_BEFORE.value]
    _apply(api_cluster, deployment_manifest("checkout", namespace, paused=True, annotations=record))
    _create(api, namespace, "guard")
    _pause_as_the_operator(cluster_client, namespace, "guard")

    response = api.post(f"analyses/{namespace}/guard/resume/")

    assert response.status_code == 409, response.text
    assert response.json()["code"] == "untrusted_pause_record"
    assert response.json()["detail"].startswith(
        f"The pause record on Deployment {namespace}/checkout cannot be trusted (paused-before "
        "is missing): nothing was restored or changed."
    )
    assert _spec_paused(api_cluster, namespace) == "true"
    target = kubectl_json(api_cluster, "deployment", "checkout", "-n", namespace)
    assert target["metadata"]["annotations"][Annotation.PAUSED_BY.value] == key


def test_resume_of_an_unknown_analysis_is_404(api: Api, namespace: str) -> None:
    response = api.post(f"analyses/{namespace}/nothing/resume/")
    assert response.status_code == 404


def test_evaluate_makes_the_analysis_due_now(api: Api, namespace: str) -> None:
    _create(api, namespace, "guard")
    later = timezone.now() + timedelta(hours=1)
    Analysis.objects.filter(name="guard").update(next_due_at=later)

    before = timezone.now()
    response = api.post(f"analyses/{namespace}/guard/evaluate/")
    after = timezone.now()

    assert response.status_code == 202, response.text
    due = Analysis.objects.get(name="guard").next_due_at
    assert due is not None and before <= due <= after
    body = response.json()
    assert body["namespace"] == namespace and body["name"] == "guard"
    assert body["nextDueAt"].startswith(due.strftime("%Y-%m-%dT%H:%M:%S"))


def test_evaluate_of_a_deleted_analysis_is_404(api: Api, namespace: str) -> None:
    _create(api, namespace, "guard")
    assert api.delete(f"analyses/{namespace}/guard/").status_code == 204
    assert api.post(f"analyses/{namespace}/guard/evaluate/").status_code == 404
    assert Analysis.objects.get(name="guard").next_due_at is None


def test_pointing_a_holding_analysis_at_another_target_is_refused_until_resumed(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    key = f"{namespace}/guard"
    _apply(
        api_cluster,
        deployment_manifest("checkout", namespace, paused=True, annotations=_paused_by(key)),
        deployment_manifest("payments", namespace),
    )
    _create(api, namespace, "guard")
    _pause_as_the_operator(cluster_client, namespace, "guard")
    before = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)
    moved = {**spec("payments")}

    refused = api.patch(f"analyses/{namespace}/guard/", json={"spec": moved})

    # The pause would be left behind where no resume of this analysis reaches it
    # (docs/status.md#pausing-each-kind): refused, nothing written.
    message = (
        f"{key} holds a pause on Deployment {namespace}/checkout; resume it before pointing the "
        "analysis at another target, so that the pause is not left behind."
    )
    assert refused.status_code == 400, refused.text
    assert refused.json() == {"spec.target": [message]}
    after = kubectl_json(api_cluster, "rolloutanalysis", "guard", "-n", namespace)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"]["target"]["name"] == "checkout"

    assert api.post(f"analyses/{namespace}/guard/resume/").status_code == 200
    accepted = api.patch(f"analyses/{namespace}/guard/", json={"spec": moved})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["spec"]["target"]["name"] == "payments"
