"""Object semantics through the official Python client: status subresource, generation,
conflicts, NotFound, Invalid causes, finalizers and dryRun.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest
from testkit.waiting import wait_until

CustomApi = kubernetes.client.CustomObjectsApi


def _create(custom: CustomApi, ns: str, name: str = "checkout", **spec: Any) -> dict[str, Any]:
    return custom.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, ra_manifest(name, **spec)
    )


def _get(custom: CustomApi, ns: str, name: str = "checkout") -> dict[str, Any]:
    return custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)


def _status_body(exc: ApiException) -> dict[str, Any]:
    body = json.loads(exc.body)
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == exc.status
    return body


def test_create_fills_server_side_metadata(custom: CustomApi, ns: str) -> None:
    created = _create(custom, ns)

    meta = created["metadata"]
    assert meta["namespace"] == ns
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0


def test_resource_versions_increase_across_objects(custom: CustomApi, ns: str) -> None:
    first = _create(custom, ns, "a")["metadata"]["resourceVersion"]
    second = _create(custom, ns, "b")["metadata"]["resourceVersion"]

    assert int(second) > int(first)


def test_status_patch_changes_only_status(custom: CustomApi, ns: str) -> None:
    created = _create(custom, ns, failureLimit=3)

    patched = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        ns,
        PLURAL,
        "checkout",
        {"spec": {"failureLimit": 9}, "status": {"failures": 2, "lastVerdict": "Fail"}},
    )

    assert patched["status"] == {"failures": 2, "lastVerdict": "Fail"}
    assert patched["spec"] == created["spec"]
    assert patched["metadata"]["generation"] == 1
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert _get(custom, ns)["spec"]["failureLimit"] == 3


def test_status_written_through_main_resource_is_ignored(custom: CustomApi, ns: str) -> None:
    _create(custom, ns)
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", {"status": {"failures": 1}}
    )

    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        PLURAL,
        "checkout",
        {"spec": {"failureLimit": 4}, "status": {"failures": 7}},
    )

    assert patched["spec"]["failureLimit"] == 4
    assert patched["status"] == {"failures": 1}
    assert patched["metadata"]["generation"] == 2


def test_status_on_create_is_dropped(custom: CustomApi, ns: str) -> None:
    manifest = ra_manifest("checkout")
    manifest["status"] = {"failures": 5}

    created = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)

    assert "status" not in created


def test_status_is_validated_against_the_schema(custom: CustomApi, ns: str) -> None:
    _create(custom, ns)

    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, ns, PLURAL, "checkout", {"status": {"lastVerdict": "Maybe"}}
        )

    assert caught.value.status == 422
    causes = _status_body(caught.value)["details"]["causes"]
    # The error itself, then kube-apiserver's note that the CRD's CEL rules were skipped (an
    # enum error blocks them), which it appends after its validation.
    assert [c["field"] for c in causes] == ["status.lastVerdict", "<nil>"]
    assert causes[0]["reason"] == "FieldValueNotSupported"


def test_generation_bumps_on_spec_change_only(custom: CustomApi, ns: str) -> None:
    _create(custom, ns)

    def generation_after(body: dict[str, Any], status: bool = False) -> int:
        patch = (
            custom.patch_namespaced_custom_object_status
            if status
            else (custom.patch_namespaced_custom_object)
        )
        return patch(GROUP, VERSION, ns, PLURAL, "checkout", body)["metadata"]["generation"]

    assert generation_after({"metadata": {"labels": {"team": "pay"}}}) == 1
    assert generation_after({"metadata": {"annotations": {"note": "x"}}}) == 1
    assert generation_after({"status": {"failures": 1}}, status=True) == 1
    assert generation_after({"spec": {"interval": "1m"}}) == 2
    assert generation_after({"spec": {"interval": "1m"}}) == 2
    assert generation_after({"spec": {"dryRun": True}}) == 3


def test_replace_with_stale_resource_version_conflicts(custom: CustomApi, ns: str) -> None:
    stale = _create(custom, ns)
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"spec": {"failureLimit": 4}}
    )
    stale["spec"]["failureLimit"] = 5

    with pytest.raises(ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout", stale)

    assert caught.value.status == 409
    body = _status_body(caught.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on rolloutanalyses.sentinel.example.com "checkout": the'
        " object has been modified; please apply your changes to the latest version and try again"
    )
    assert _get(custom, ns)["spec"]["failureLimit"] == 4


def test_replace_with_current_resource_version_succeeds(custom: CustomApi, ns: str) -> None:
    current = _create(custom, ns)
    current["spec"]["failureLimit"] = 5

    replaced = custom.replace_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", current
    )

    assert replaced["spec"]["failureLimit"] == 5
    assert replaced["metadata"]["uid"] == current["metadata"]["uid"]


def test_create_existing_is_already_exists(custom: CustomApi, ns: str) -> None:
    _create(custom, ns)

    with pytest.raises(ApiException) as caught:
        _create(custom, ns)

    assert caught.value.status == 409
    body = _status_body(caught.value)
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'rolloutanalyses.sentinel.example.com "checkout" already exists'
    assert body["details"] == {
        "name": "checkout",
        "group": GROUP,
        "kind": "rolloutanalyses",
    }


def test_get_missing_is_not_found(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        _get(custom, ns, "ghost")

    assert caught.value.status == 404
    body = _status_body(caught.value)
    assert body["reason"] == "NotFound"
    assert body["message"] == 'rolloutanalyses.sentinel.example.com "ghost" not found'
    assert body["details"] == {"name": "ghost", "group": GROUP, "kind": "rolloutanalyses"}


def test_invalid_create_is_422_with_field_causes(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        _create(
            custom,
            ns,
            "bad",
            failureLimit=0,
            metrics=[{"name": "Bad_Name", "query": "", "maxValue": 1}],
        )

    assert caught.value.status == 422
    body = _status_body(caught.value)
    assert body["reason"] == "Invalid"
    assert body["details"]["name"] == "bad"
    assert body["details"]["group"] == GROUP
    assert body["details"]["kind"] == "RolloutAnalysis"
    fields = sorted(cause["field"] for cause in body["details"]["causes"])
    assert fields == ["spec.failureLimit", "spec.metrics[0].name", "spec.metrics[0].query"]
    assert {cause["reason"] for cause in body["details"]["causes"]} == {"FieldValueInvalid"}
    assert body["message"].startswith('RolloutAnalysis.sentinel.example.com "bad" is invalid: [')
    with pytest.raises(ApiException) as missing:
        _get(custom, ns, "bad")
    assert missing.value.status == 404


def test_finalizer_keeps_deleted_object_until_removed(custom: CustomApi, ns: str) -> None:
    manifest = ra_manifest("checkout")
    manifest["metadata"]["finalizers"] = ["sentinel.example.com/hold"]
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)

    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout")

    held = _get(custom, ns)
    assert held["metadata"]["deletionTimestamp"].endswith("Z")
    assert held["metadata"]["finalizers"] == ["sentinel.example.com/hold"]
    assert held["metadata"]["generation"] == 2

    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"metadata": {"finalizers": []}}
    )

    def gone() -> bool:
        try:
            _get(custom, ns)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone, timeout=5)


def test_dry_run_create_stores_nothing(custom: CustomApi, ns: str) -> None:
    answer = custom.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, ra_manifest("checkout"), dry_run="All"
    )

    assert answer["metadata"]["name"] == "checkout"
    # Defaulted as a stored object is: dryRun by the schema, failureLimit left to the operator.
    assert answer["spec"]["dryRun"] is False
    assert "failureLimit" not in answer["spec"]
    with pytest.raises(ApiException) as caught:
        _get(custom, ns)
    assert caught.value.status == 404


def test_dry_run_patch_and_delete_change_nothing(custom: CustomApi, ns: str) -> None:
    created = _create(custom, ns, failureLimit=3)

    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"spec": {"failureLimit": 8}}, dry_run="All"
    )
    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout", dry_run="All")

    assert patched["spec"]["failureLimit"] == 8
    stored = _get(custom, ns)
    assert stored["spec"]["failureLimit"] == 3
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
