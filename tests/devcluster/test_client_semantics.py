"""More object semantics the operator leans on: resourceVersion preconditions on patches,
generateName, name and label validation, deletecollection, and the watch events of status
writes, finalizer-held deletes and cluster-wide watches.
"""

from __future__ import annotations

import json
import re
from typing import Any

import kubernetes.client
import kubernetes.watch
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


def _create(custom: CustomApi, ns: str, name: str = "checkout") -> dict[str, Any]:
    return custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest(name))


def test_status_patch_with_stale_resource_version_conflicts(custom: CustomApi, ns: str) -> None:
    stale = _create(custom, ns)["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"spec": {"failureLimit": 4}}
    )

    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            ns,
            PLURAL,
            "checkout",
            {"metadata": {"resourceVersion": stale}, "status": {"failures": 1}},
        )

    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "Conflict"
    current = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout")
    assert "status" not in current


def test_status_replace_with_current_resource_version(custom: CustomApi, ns: str) -> None:
    current = _create(custom, ns)
    current["status"] = {"failures": 2, "observedGeneration": 1}

    replaced = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", current
    )

    assert replaced["status"] == {"failures": 2, "observedGeneration": 1}
    assert replaced["metadata"]["generation"] == 1


def test_generate_name_gives_a_unique_name(custom: CustomApi, ns: str) -> None:
    manifest = ra_manifest("unused")
    del manifest["metadata"]["name"]
    manifest["metadata"]["generateName"] = "checkout-"

    first = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)
    second = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)

    names = [first["metadata"]["name"], second["metadata"]["name"]]
    assert all(re.fullmatch(r"checkout-[a-z0-9]{5}", name) for name in names)
    assert names[0] != names[1]


def test_invalid_object_name_is_rejected(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        _create(custom, ns, "Bad_Name")

    assert caught.value.status == 422
    body = json.loads(caught.value.body)
    assert [cause["field"] for cause in body["details"]["causes"]] == ["metadata.name"]
    assert body["message"].startswith(
        'RolloutAnalysis.sentinel.example.com "Bad_Name" is invalid: metadata.name: Invalid'
        ' value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of'
    )


def test_invalid_label_value_is_rejected(custom: CustomApi, ns: str) -> None:
    manifest = ra_manifest("checkout")
    manifest["metadata"]["labels"] = {"team": "not a valid value!"}

    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)

    assert caught.value.status == 422
    causes = json.loads(caught.value.body)["details"]["causes"]
    assert [cause["field"] for cause in causes] == ["metadata.labels"]


def test_delete_collection_by_label(custom: CustomApi, ns: str) -> None:
    for name, team in (("a", "pay"), ("b", "pay"), ("c", "shop")):
        manifest = ra_manifest(name)
        manifest["metadata"]["labels"] = {"team": team}
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)

    custom.delete_collection_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, label_selector="team=pay"
    )

    left = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    assert [item["metadata"]["name"] for item in left["items"]] == ["c"]


def _watch(custom: CustomApi, ns: str, resource_version: str) -> list[dict[str, Any]]:
    return list(
        kubernetes.watch.Watch().stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            resource_version=resource_version,
            timeout_seconds=1,
        )
    )


def test_status_write_is_a_modified_event(custom: CustomApi, ns: str) -> None:
    start = _create(custom, ns)["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", {"status": {"lastVerdict": "Pass"}}
    )

    events = _watch(custom, ns, start)

    assert [event["type"] for event in events] == ["MODIFIED"]
    assert events[0]["object"]["status"] == {"lastVerdict": "Pass"}


def test_finalizer_held_delete_is_modified_then_deleted(custom: CustomApi, ns: str) -> None:
    manifest = ra_manifest("checkout")
    manifest["metadata"]["finalizers"] = ["sentinel.example.com/hold"]
    start = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)
    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout")
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"metadata": {"finalizers": []}}
    )

    events = _watch(custom, ns, start["metadata"]["resourceVersion"])

    # Emptying the finalizers of a deleted object deletes it in that same write: no MODIFIED.
    assert [event["type"] for event in events] == ["MODIFIED", "DELETED"]
    assert "deletionTimestamp" in events[0]["object"]["metadata"]
    assert events[0]["object"]["metadata"]["finalizers"] == ["sentinel.example.com/hold"]


def test_cluster_wide_watch_sees_every_namespace(
    custom: CustomApi, ns: str, admin_api: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    other = f"{ns}-b"
    core.create_namespace({"metadata": {"name": other}})
    try:
        start = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)["metadata"][
            "resourceVersion"
        ]
        _create(custom, ns, "a")
        _create(custom, other, "b")

        events = list(
            kubernetes.watch.Watch().stream(
                custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                PLURAL,
                resource_version=start,
                timeout_seconds=1,
            )
        )
    finally:
        core.delete_namespace(other)

    seen = [
        (e["type"], e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"])
        for e in events
    ]
    assert ("ADDED", ns, "a") in seen
    assert ("ADDED", other, "b") in seen
