"""Authentication and RBAC through the official Python client: 401 and 403 as Status objects."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


@pytest.fixture
def sa_custom(
    cluster: DevCluster, ns: str, admin_api: kubernetes.client.ApiClient
) -> Iterator[CustomApi]:
    """CustomObjectsApi as ServiceAccount ``operator`` allowed get/list/watch and status patch."""
    core = kubernetes.client.CoreV1Api(admin_api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(admin_api)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "operator"}})
    rbac.create_namespaced_role(
        ns,
        {
            "metadata": {"name": "operator"},
            "rules": [
                {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["patch"]},
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "operator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "operator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}],
        },
    )
    token = core.create_namespaced_service_account_token(
        "operator", ns, {"spec": {"expirationSeconds": 600}}
    ).status.token
    client = cluster.api_client(token=token)
    try:
        yield CustomApi(client)
    finally:
        client.close()


def test_service_account_may_do_what_is_bound(
    sa_custom: CustomApi, custom: CustomApi, ns: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("checkout"))

    listed = sa_custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    patched = sa_custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", {"status": {"failures": 1}}
    )

    assert [item["metadata"]["name"] for item in listed["items"]] == ["checkout"]
    assert patched["status"] == {"failures": 1}


def test_service_account_denied_verb_is_forbidden_status(
    sa_custom: CustomApi, custom: CustomApi, ns: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("checkout"))

    with pytest.raises(ApiException) as caught:
        sa_custom.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, "checkout", {"spec": {"failureLimit": 9}}
        )

    assert caught.value.status == 403
    body = json.loads(caught.value.body)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            f'rolloutanalyses.sentinel.example.com "checkout" is forbidden: User'
            f' "system:serviceaccount:{ns}:operator" cannot patch resource "rolloutanalyses" in'
            f' API group "sentinel.example.com" in the namespace "{ns}"'
        ),
        "reason": "Forbidden",
        "details": {"name": "checkout", "group": GROUP, "kind": PLURAL},
        "code": 403,
    }


def test_service_account_other_namespace_is_forbidden(
    sa_custom: CustomApi, ns: str, admin_api: kubernetes.client.ApiClient
) -> None:
    with pytest.raises(ApiException) as caught:
        sa_custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)

    assert caught.value.status == 403
    assert json.loads(caught.value.body)["message"] == (
        f'rolloutanalyses.sentinel.example.com is forbidden: User "system:serviceaccount:{ns}:'
        'operator" cannot list resource "rolloutanalyses" in API group "sentinel.example.com"'
        ' in the namespace "default"'
    )


def test_service_account_cluster_wide_list_is_forbidden(sa_custom: CustomApi) -> None:
    with pytest.raises(ApiException) as caught:
        sa_custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)

    assert caught.value.status == 403
    assert "at the cluster scope" in json.loads(caught.value.body)["message"]


def test_token_of_deleted_service_account_is_unauthorized(
    cluster: DevCluster, ns: str, admin_api: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "gone"}})
    token = core.create_namespaced_service_account_token("gone", ns, {"spec": {}}).status.token
    core.delete_namespaced_service_account("gone", ns)
    client = cluster.api_client(token=token)
    try:
        with pytest.raises(ApiException) as caught:
            CustomApi(client).list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    finally:
        client.close()

    assert caught.value.status == 401


def test_bad_token_is_unauthorized_status(cluster: DevCluster, ns: str) -> None:
    client = cluster.api_client(token="definitely-not-valid")
    try:
        with pytest.raises(ApiException) as caught:
            CustomApi(client).list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    finally:
        client.close()

    assert caught.value.status == 401
    assert json.loads(caught.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_missing_token_is_unauthorized(cluster: DevCluster) -> None:
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    request = urllib.request.Request(cluster.url + f"/apis/{GROUP}/{VERSION}/{PLURAL}")

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, context=context, timeout=10)

    assert caught.value.code == 401
    assert json.loads(caught.value.read())["reason"] == "Unauthorized"


def test_self_subject_access_review_answers_for_the_caller(sa_custom: CustomApi, ns: str) -> None:
    api = kubernetes.client.AuthorizationV1Api(sa_custom.api_client)

    def allowed(verb: str) -> bool:
        review = api.create_self_subject_access_review(
            {
                "spec": {
                    "resourceAttributes": {
                        "namespace": ns,
                        "verb": verb,
                        "group": GROUP,
                        "resource": PLURAL,
                    }
                }
            }
        )
        return bool(review.status.allowed)

    assert allowed("watch") is True
    assert allowed("delete") is False
