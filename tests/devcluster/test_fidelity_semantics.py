"""Object semantics as kube-apiserver v1.37 has them, where the differential test found
devcluster answering otherwise: status writes, immutable roleRefs, finalizers on objects
being deleted, typed lists, field selectors, Events' eventTime and the order of /apis.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

MERGE = "application/merge-patch+json"
RBAC = "rbac.authorization.k8s.io"


def _json(response: Any) -> Any:
    return json.loads(response.data)


def _error(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return error.status, json.loads(error.body)
    raise AssertionError("the call succeeded")


def test_a_status_write_words_its_errors_relative_to_the_status(
    custom: kubernetes.client.CustomObjectsApi, ns: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("s"))

    code, status = _error(
        custom.patch_namespaced_custom_object_status,
        GROUP,
        VERSION,
        ns,
        PLURAL,
        "s",
        {"status": {"failures": -1}},
    )

    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: failures in body should be greater than or equal to 0",
            "field": "status.failures",
        }
    ]


def test_a_bindings_role_ref_cannot_change(admin_api: kubernetes.client.ApiClient, ns: str) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(admin_api)
    binding = {
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": RBAC}],
    }
    rbac.create_namespaced_role_binding(ns, binding)

    code, status = _error(
        rbac.patch_namespaced_role_binding,
        "b",
        ns,
        {"roleRef": {"name": "writer"}},
        _content_type=MERGE,
    )

    assert code == 422
    assert status["message"] == (
        f'RoleBinding.{RBAC} "b" is invalid: roleRef: Invalid value: '
        f'{{"APIGroup":"{RBAC}","Kind":"Role","Name":"writer"}}: field is immutable'
    )


def test_an_object_being_deleted_takes_no_new_finalizers(
    admin_api: kubernetes.client.ApiClient,
    custom: kubernetes.client.CustomObjectsApi,
    ns: str,
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    held = {"metadata": {"name": "held", "finalizers": ["example.com/a"]}}
    core.create_namespaced_config_map(ns, held)
    deleted = core.delete_namespaced_config_map("held", ns, _preload_content=False)
    analysis = ra_manifest("held")
    analysis["metadata"]["finalizers"] = ["example.com/a"]
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, analysis)
    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "held")
    more = {"metadata": {"finalizers": ["example.com/a", "example.com/c", "example.com/b"]}}

    code, status = _error(core.patch_namespaced_config_map, "held", ns, more, _content_type=MERGE)
    custom_code, custom_status = _error(
        custom.patch_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, "held", more
    )

    # kube-apiserver answers 200 (not 202) for a delete that finalizers hold up.
    assert deleted.status == 200
    assert _json(deleted)["metadata"]["deletionTimestamp"]
    cause = {
        "reason": "FieldValueForbidden",
        "message": "Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"example.com/b", "example.com/c"}',
        "field": "metadata.finalizers",
    }
    assert (code, custom_code) == (422, 422)
    assert status["details"]["causes"] == [cause]
    # A custom resource's metadata is checked twice: two causes, one line in the message.
    assert custom_status["details"]["causes"] == [cause, cause]
    assert custom_status["message"] == (
        f'RolloutAnalysis.{GROUP} "held" is invalid: metadata.finalizers: {cause["message"]}'
    )
    release = {"metadata": {"finalizers": None}}
    core.patch_namespaced_config_map("held", ns, release, _content_type=MERGE)
    custom.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "held", release)


def test_a_builtin_list_has_no_kind_on_its_items(
    admin_api: kubernetes.client.ApiClient, custom: kubernetes.client.CustomObjectsApi, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("r"))

    config_maps = _json(core.list_namespaced_config_map(ns, _preload_content=False))
    analyses = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)

    assert config_maps["kind"] == "ConfigMapList"
    assert not {"kind", "apiVersion"} & set(config_maps["items"][0])
    # A custom resource list is unstructured: its items keep both.
    assert analyses["items"][0]["kind"] == "RolloutAnalysis"


def test_an_unknown_field_selector_is_refused_in_the_kinds_own_words(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)

    _, config_maps = _error(core.list_namespaced_config_map, ns, field_selector="data.a=b")
    _, secrets = _error(core.list_namespaced_secret, ns, field_selector="data.a=b")

    assert config_maps["message"] == (
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    assert secrets["message"] == "field label not supported: data.a"


def test_a_core_event_without_event_time_has_it_null(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "RolloutAnalysis", "name": "r", "namespace": ns},
        "reason": "MetricFailed",
        "message": "p99 above 0.25",
    }

    created = _json(core.create_namespaced_event(ns, event, _preload_content=False))

    assert "eventTime" in created
    assert created["eventTime"] is None


def test_api_groups_come_in_kube_apiservers_order(
    admin_api: kubernetes.client.ApiClient,
) -> None:
    groups = _json(kubernetes.client.ApisApi(admin_api).get_api_versions(_preload_content=False))

    names = [group["name"] for group in groups["groups"]]
    assert names[:7] == [
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        RBAC,
        "apiextensions.k8s.io",
        "coordination.k8s.io",
    ]
    assert names.index(GROUP) > names.index("coordination.k8s.io")
