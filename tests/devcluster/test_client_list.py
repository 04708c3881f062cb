"""Listing through the official Python client: limit/continue pages, label and field selectors."""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


def _create_many(custom: CustomApi, ns: str, count: int) -> list[str]:
    names = [f"ra-{index}" for index in range(count)]
    for index, name in enumerate(names):
        manifest = ra_manifest(name)
        manifest["metadata"]["labels"] = {"parity": "even" if index % 2 == 0 else "odd"}
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)
    return names


def _names(listing: dict) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def test_list_pages_with_limit_and_continue(custom: CustomApi, ns: str) -> None:
    names = _create_many(custom, ns, 5)

    pages = []
    token = None
    while True:
        page = custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, limit=2, _continue=token
        )
        pages.append(_names(page))
        token = page["metadata"].get("continue")
        if not token:
            break

    assert pages == [names[0:2], names[2:4], names[4:5]]


def test_list_page_reports_remaining_items(custom: CustomApi, ns: str) -> None:
    _create_many(custom, ns, 5)

    page = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, limit=2)

    assert page["metadata"]["remainingItemCount"] == 3
    assert page["kind"] == "RolloutAnalysisList"
    assert page["apiVersion"] == f"{GROUP}/{VERSION}"


def test_list_with_invalid_continue_token_is_bad_request(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, limit=2, _continue="garbage"
        )

    assert caught.value.status == 400
    assert json.loads(caught.value.body)["reason"] == "BadRequest"


def test_list_with_label_selector(custom: CustomApi, ns: str) -> None:
    names = _create_many(custom, ns, 4)

    even = custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, label_selector="parity=even"
    )
    not_odd = custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, label_selector="parity notin (odd)"
    )

    assert _names(even) == [names[0], names[2]]
    assert _names(not_odd) == [names[0], names[2]]


def test_list_with_field_selectors(custom: CustomApi, ns: str) -> None:
    names = _create_many(custom, ns, 3)

    by_name = custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, field_selector="metadata.name=ra-1"
    )
    not_name = custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, field_selector="metadata.name!=ra-1"
    )
    by_namespace = custom.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, field_selector=f"metadata.namespace={ns}"
    )

    assert _names(by_name) == ["ra-1"]
    assert _names(not_name) == [names[0], names[2]]
    assert _names(by_namespace) == names


def test_list_with_unknown_field_selector_is_bad_request(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, field_selector="spec.interval=30s"
        )

    assert caught.value.status == 400
    body = json.loads(caught.value.body)
    assert body["reason"] == "BadRequest"
    assert body["message"] == "field label not supported: spec.interval"


def test_list_with_malformed_label_selector_is_bad_request(custom: CustomApi, ns: str) -> None:
    with pytest.raises(ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, label_selector="team in pay"
        )

    assert caught.value.status == 400


def test_list_all_namespaces_includes_each_namespace(
    custom: CustomApi, ns: str, admin_api: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    other = f"{ns}-b"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("a"))
        custom.create_namespaced_custom_object(GROUP, VERSION, other, PLURAL, ra_manifest("a"))

        listing = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector="")

        found = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listing["items"]}
        assert {(ns, "a"), (other, "a")} <= found
    finally:
        core.delete_namespace(other)
