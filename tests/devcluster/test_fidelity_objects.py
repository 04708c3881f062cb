"""Object shapes the real kube-apiserver v1.37 answers with, as the differential test found them.

Each test pins one answer where devcluster used to differ from the real server
(tests/realcluster/test_differential.py compares the two): the JSON the official client
receives, read raw so that an absent field and an empty one stay distinguishable.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

MERGE = "application/merge-patch+json"


def _json(response: Any) -> Any:
    return json.loads(response.data)


def _error(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return error.status, json.loads(error.body)
    raise AssertionError("the call succeeded")


def test_a_patched_cluster_scoped_object_has_no_namespace_field(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    patched = core.patch_namespace(
        ns, {"metadata": {"labels": {"tier": "one"}}}, _content_type=MERGE, _preload_content=False
    )

    assert "namespace" not in _json(patched)["metadata"]


def test_empty_metadata_collections_are_not_stored(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    body = {"metadata": {"name": "bare", "labels": {}, "annotations": {}, "finalizers": []}}
    created = _json(core.create_namespaced_config_map(ns, body, _preload_content=False))
    read = _json(core.read_namespaced_config_map("bare", ns, _preload_content=False))

    for answer in (created, read):
        assert not {"labels", "annotations", "finalizers"} & set(answer["metadata"])


def test_a_deleted_namespace_has_a_timestamp_but_no_grace_period(
    admin_api: kubernetes.client.ApiClient,
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespace({"metadata": {"name": "fidelity-gone"}})

    deleted = _json(core.delete_namespace("fidelity-gone", _preload_content=False))

    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["status"]["phase"] == "Terminating"
    assert "deletionGracePeriodSeconds" not in deleted["metadata"]


def test_status_details_leave_out_the_empty_core_group(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)

    code, status = _error(core.read_namespaced_config_map, "missing", ns)

    assert code == 404
    assert status["details"] == {"name": "missing", "kind": "configmaps"}


def test_a_failed_delete_precondition_names_both_resource_versions(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    created = core.create_namespaced_config_map(ns, {"metadata": {"name": "kept"}})
    stored = created.metadata.resource_version

    code, status = _error(
        core.delete_namespaced_config_map,
        "kept",
        ns,
        body={"preconditions": {"resourceVersion": "1"}},
    )

    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on ConfigMap "kept": the ResourceVersion in the '
        f"precondition (1) does not match the ResourceVersion in record ({stored}). The "
        "object might have been modified"
    )
    assert status["details"] == {"name": "kept", "kind": "ConfigMap"}


def test_deleting_a_custom_resource_answers_with_a_success_status(
    custom: kubernetes.client.CustomObjectsApi, ns: str
) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("x"))

    answer = custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "x")

    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "x",
            "group": GROUP,
            "kind": PLURAL,
            "uid": created["metadata"]["uid"],
        },
    }


def test_a_token_request_carries_the_service_accounts_uid(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    account = core.create_namespaced_service_account(ns, {"metadata": {"name": "robot"}})

    answer = _json(
        core.create_namespaced_service_account_token(
            "robot", ns, {"spec": {}}, _preload_content=False
        )
    )

    assert answer["metadata"]["uid"] == account.metadata.uid
    assert answer["metadata"]["creationTimestamp"].endswith("Z")


def test_a_too_short_token_request_is_invalid_with_a_cause(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "robot"}})

    code, status = _error(
        core.create_namespaced_service_account_token,
        "robot",
        ns,
        {"spec": {"expirationSeconds": 60}},
    )

    assert code == 422
    assert status["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        "value: 60: may not specify a duration less than 10 minutes"
    )
    assert status["details"] == {
        "group": "authentication.k8s.io",
        "kind": "TokenRequest",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 60: may not specify a duration less than 10 minutes",
                "field": "spec.expirationSeconds",
            }
        ],
    }


def test_a_crd_defaults_to_conversion_strategy_none(
    admin_api: kubernetes.client.ApiClient,
) -> None:
    crds = kubernetes.client.ApiextensionsV1Api(admin_api)

    stored = _json(
        crds.read_custom_resource_definition(f"{PLURAL}.{GROUP}", _preload_content=False)
    )

    assert stored["spec"]["conversion"] == {"strategy": "None"}


def test_custom_resource_verbs_are_listed_in_apiextensions_order(
    admin_api: kubernetes.client.ApiClient,
) -> None:
    discovery = _json(
        kubernetes.client.CustomObjectsApi(admin_api).get_api_resources(
            GROUP, VERSION, _preload_content=False
        )
    )

    resource = next(r for r in discovery["resources"] if r["name"] == PLURAL)
    assert resource["verbs"] == [
        "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch",
    ]  # fmt: skip


def test_a_selector_mismatch_prints_the_labels_as_json(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    apps = kubernetes.client.AppsV1Api(admin_api)
    body = {
        "metadata": {"name": "broken"},
        "spec": {
            "selector": {"matchLabels": {"app": "other"}},
            "template": {
                "metadata": {"labels": {"app": "broken", "tier": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }

    code, status = _error(apps.create_namespaced_deployment, ns, body)

    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: {"app":"broken","tier":"web"}: `selector` does not match '
            "template `labels`",
            "field": "spec.template.metadata.labels",
        }
    ]
