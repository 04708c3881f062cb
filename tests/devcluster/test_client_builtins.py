"""Built-in kinds the operator relies on, through the official Python client: Leases,
Events in both API groups, Deployment status and scale subresources, the StatefulSet and
DaemonSet statuses devcluster plays, Secrets, Namespaces.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.manifests import (
    GROUP,
    PLURAL,
    VERSION,
    deployment_manifest,
    ra_manifest,
    workload_manifest,
)
from testkit.waiting import wait_until

ApiClient = kubernetes.client.ApiClient


def _lease(name: str, holder: str) -> dict:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    }


def test_lease_update_with_stale_resource_version_conflicts(admin_api: ApiClient, ns: str) -> None:
    leases = kubernetes.client.CoordinationV1Api(admin_api)
    created = leases.create_namespaced_lease(ns, _lease("sentinel-leader", "pod-a"))
    taken = leases.read_namespaced_lease("sentinel-leader", ns)
    taken.spec.holder_identity = "pod-b"
    leases.replace_namespaced_lease("sentinel-leader", ns, taken)
    created.spec.holder_identity = "pod-c"

    with pytest.raises(ApiException) as caught:
        leases.replace_namespaced_lease("sentinel-leader", ns, created)

    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "Conflict"
    assert leases.read_namespaced_lease("sentinel-leader", ns).spec.holder_identity == "pod-b"


def test_lease_keeps_micro_time_fields(admin_api: ApiClient, ns: str) -> None:
    leases = kubernetes.client.CoordinationV1Api(admin_api)
    lease = _lease("sentinel-leader", "pod-a")
    lease["spec"]["renewTime"] = "2026-11-29T10:00:30.123456Z"
    lease["spec"]["acquireTime"] = "2026-11-29T10:00:00.000001Z"

    leases.create_namespaced_lease(ns, lease)

    stored = leases.read_namespaced_lease("sentinel-leader", ns)
    assert stored.spec.renew_time == datetime(2026, 11, 29, 10, 0, 30, 123456, tzinfo=UTC)
    assert stored.spec.acquire_time == datetime(2026, 11, 29, 10, 0, 0, 1, tzinfo=UTC)


def test_core_event_is_visible_through_events_api(admin_api: ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_event(
        ns,
        {
            "metadata": {"name": "checkout.1"},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "RolloutAnalysis",
                "name": "checkout",
                "namespace": ns,
            },
            "reason": "RolloutPaused",
            "message": "failure limit reached",
            "type": "Warning",
            "count": 1,
            "source": {"component": "rollout-sentinel"},
            "firstTimestamp": "2026-11-29T10:00:30Z",
            "lastTimestamp": "2026-11-29T10:00:30Z",
        },
    )

    # Read raw: a core event has no eventTime, which the events.k8s.io/v1 model of client 37
    # requires; a real server answers "eventTime": null just the same.
    response = kubernetes.client.EventsV1Api(admin_api).read_namespaced_event(
        "checkout.1", ns, _preload_content=False
    )
    event = json.loads(response.data)

    assert event["regarding"]["name"] == "checkout"
    assert event["regarding"]["kind"] == "RolloutAnalysis"
    assert event["note"] == "failure limit reached"
    assert event["reason"] == "RolloutPaused"
    assert event["type"] == "Warning"
    assert event["deprecatedCount"] == 1
    assert event["deprecatedSource"] == {"component": "rollout-sentinel"}


def test_built_in_timestamps_are_normalized_to_rfc3339(admin_api: ApiClient, ns: str) -> None:
    # The client sends datetimes as "+00:00"; a real server stores metav1.Time as "...Z" and
    # metav1.MicroTime with six fractional digits.
    leases = kubernetes.client.CoordinationV1Api(admin_api)
    lease = _lease("sentinel-leader", "pod-a")
    lease["spec"]["renewTime"] = "2026-11-29T10:00:30.5Z"
    leases.create_namespaced_lease(ns, lease)
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_event(
        ns,
        {
            "metadata": {"name": "x.1"},
            "involvedObject": {"kind": "Deployment", "name": "x", "namespace": ns},
            "firstTimestamp": "2026-11-29T10:00:30Z",
        },
    )

    raw_lease = json.loads(
        leases.read_namespaced_lease("sentinel-leader", ns, _preload_content=False).data
    )
    raw_event = json.loads(core.read_namespaced_event("x.1", ns, _preload_content=False).data)

    assert raw_lease["spec"]["renewTime"] == "2026-11-29T10:00:30.500000Z"
    assert raw_event["firstTimestamp"] == "2026-11-29T10:00:30Z"


def test_events_api_event_is_visible_through_core_api(admin_api: ApiClient, ns: str) -> None:
    kubernetes.client.EventsV1Api(admin_api).create_namespaced_event(
        ns,
        {
            "metadata": {"name": "checkout.2"},
            "eventTime": "2026-11-29T10:00:30.000000Z",
            "regarding": {"kind": "Deployment", "name": "checkout", "namespace": ns},
            "reason": "RolloutResumed",
            "note": "resumed by user",
            "type": "Normal",
            "action": "Resume",
            "reportingController": "sentinel.example.com/operator",
            "reportingInstance": "pod-a",
        },
    )

    event = kubernetes.client.CoreV1Api(admin_api).read_namespaced_event("checkout.2", ns)

    assert event.involved_object.name == "checkout"
    assert event.message == "resumed by user"
    assert event.reason == "RolloutResumed"
    assert event.reporting_component == "sentinel.example.com/operator"


def test_event_field_selector_on_involved_object(admin_api: ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    for name in ("a", "b"):
        core.create_namespaced_event(
            ns,
            {
                "metadata": {"name": f"{name}.1"},
                "involvedObject": {"kind": "RolloutAnalysis", "name": name, "namespace": ns},
                "reason": "Test",
                "message": name,
            },
        )

    listed = core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=RolloutAnalysis,involvedObject.name=b"
    )

    assert [event.message for event in listed.items] == ["b"]


def test_deployment_status_subresource_is_kept_apart(admin_api: ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(admin_api)
    apps.create_namespaced_deployment(ns, deployment_manifest("web"))

    apps.patch_namespaced_deployment_status(
        "web", ns, {"spec": {"replicas": 7}, "status": {"observedGeneration": 1, "replicas": 1}}
    )
    apps.patch_namespaced_deployment("web", ns, {"status": {"replicas": 9}})

    stored = apps.read_namespaced_deployment("web", ns)
    assert stored.spec.replicas == 1
    assert stored.status.replicas == 1
    assert stored.metadata.generation == 1


def test_deployment_pause_patch_bumps_generation(admin_api: ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(admin_api)
    apps.create_namespaced_deployment(ns, deployment_manifest("web"))

    patched = apps.patch_namespaced_deployment(
        "web", ns, {"metadata": {"annotations": {"sentinel.example.com/paused-by": "x/y"}}}
    )
    paused = apps.patch_namespaced_deployment("web", ns, {"spec": {"paused": True}})

    assert patched.metadata.generation == 1
    assert paused.spec.paused is True
    assert paused.metadata.generation == 2
    assert paused.metadata.annotations["sentinel.example.com/paused-by"] == "x/y"


def test_deployment_scale_subresource(admin_api: ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(admin_api)
    apps.create_namespaced_deployment(ns, deployment_manifest("web"))

    scale = apps.read_namespaced_deployment_scale("web", ns)
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 4}})

    assert scale.kind == "Scale"
    assert scale.spec.replicas == 1
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 4


def test_secret_string_data_is_stored_as_data(admin_api: ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)

    core.create_namespaced_secret(
        ns, {"metadata": {"name": "token"}, "stringData": {"token": "s3cret"}, "type": "Opaque"}
    )

    secret = core.read_namespaced_secret("token", ns)
    assert secret.data == {"token": base64.b64encode(b"s3cret").decode()}
    assert secret.string_data is None


def test_deleting_a_namespace_deletes_its_objects(
    admin_api: ApiClient, custom: kubernetes.client.CustomObjectsApi, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    doomed = f"{ns}-doomed"
    core.create_namespace({"metadata": {"name": doomed}})
    custom.create_namespaced_custom_object(GROUP, VERSION, doomed, PLURAL, ra_manifest("a"))

    core.delete_namespace(doomed)

    def namespace_gone() -> bool:
        try:
            core.read_namespace(doomed)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_until(namespace_gone, timeout=10)
    listed = custom.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, field_selector=f"metadata.namespace={doomed}"
    )
    assert listed["items"] == []


def test_create_in_missing_namespace_is_not_found(
    custom: kubernetes.client.CustomObjectsApi,
) -> None:
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, "no-such-namespace", PLURAL, ra_manifest("a")
        )

    assert caught.value.status == 404
    assert json.loads(caught.value.body)["message"] == 'namespaces "no-such-namespace" not found'


def _rolled(apps: kubernetes.client.AppsV1Api, kind: str, ns: str, name: str) -> dict:
    read = (
        apps.read_namespaced_stateful_set
        if kind == "StatefulSet"
        else apps.read_namespaced_daemon_set
    )
    return apps.api_client.sanitize_for_serialization(read(name, ns))["status"]


def test_statefulset_status_is_played_as_its_controller_writes_it(
    admin_api: ApiClient, ns: str
) -> None:
    """docs/devcluster.md: the rolling update completes as far as the partition lets it."""
    apps = kubernetes.client.AppsV1Api(admin_api)
    manifest = workload_manifest("StatefulSet", "db", ns, "db:1", replicas=5)
    created = apps.api_client.sanitize_for_serialization(
        apps.create_namespaced_stateful_set(ns, manifest)
    )["status"]
    first = created["updateRevision"]
    assert first.startswith("db-") and len(first) == 13
    assert created == {
        "observedGeneration": 1,
        "replicas": 5,
        "readyReplicas": 5,
        "currentReplicas": 5,
        "updatedReplicas": 5,
        "currentRevision": first,
        "updateRevision": first,
        "collisionCount": 0,
        "availableReplicas": 5,
    }
    # Held at partition 3, a new image reaches ordinals 3 and 4 only.
    apps.patch_namespaced_stateful_set(
        "db", ns, {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 3}}}}
    )
    apps.patch_namespaced_stateful_set(
        "db",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "db:2"}]}}}},
    )
    held = _rolled(apps, "StatefulSet", ns, "db")
    second = held["updateRevision"]
    assert second != first and held["currentRevision"] == first
    assert (held["observedGeneration"], held["updatedReplicas"], held["currentReplicas"]) == (
        3,
        2,
        3,
    )
    # Raising the partition further (a pause) keeps the pods already updated.
    apps.patch_namespaced_stateful_set(
        "db", ns, {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 5}}}}
    )
    assert _rolled(apps, "StatefulSet", ns, "db")["updatedReplicas"] == 2
    # Released: every pod at the new revision, which becomes the current one.
    apps.patch_namespaced_stateful_set(
        "db", ns, {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
    )
    done = _rolled(apps, "StatefulSet", ns, "db")
    assert (done["currentRevision"], done["updateRevision"]) == (second, second)
    assert (done["updatedReplicas"], done["currentReplicas"]) == (5, 5)


def test_daemonset_status_is_played_on_one_node(admin_api: ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(admin_api)
    created = apps.api_client.sanitize_for_serialization(
        apps.create_namespaced_daemon_set(ns, workload_manifest("DaemonSet", "agent", ns, "a:1"))
    )["status"]
    assert created == {
        "currentNumberScheduled": 1,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 1,
        "numberReady": 1,
        "observedGeneration": 1,
        "updatedNumberScheduled": 1,
        "numberAvailable": 1,
    }
    # OnDelete (a pause) replaces no pod: a new template leaves it not updated.
    apps.patch_namespaced_daemon_set(
        "agent", ns, {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}
    )
    apps.patch_namespaced_daemon_set(
        "agent",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "a:2"}]}}}},
    )
    held = _rolled(apps, "DaemonSet", ns, "agent")
    assert held["observedGeneration"] == 3 and "updatedNumberScheduled" not in held
    # Its rolling update restored, the pod is replaced.
    apps.patch_namespaced_daemon_set(
        "agent", ns, {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}
    )
    assert _rolled(apps, "DaemonSet", ns, "agent")["updatedNumberScheduled"] == 1
