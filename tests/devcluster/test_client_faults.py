"""Fault hooks seen through the official Python client: injected 5xx, latency, forced 409."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import kubernetes.client
import kubernetes.watch
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


@pytest.fixture
def faults(cluster: DevCluster) -> Iterator[DevCluster]:
    """The shared cluster, with every fault cleared after the test."""
    with cluster.faults_cleared_after():
        yield cluster


def _list(custom: CustomApi, ns: str) -> dict:
    return custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)


def test_injected_503_is_seen_then_times_out(
    faults: DevCluster, custom: CustomApi, ns: str
) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/{PLURAL}", status=503, times=2)

    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            _list(custom, ns)
        assert caught.value.status == 503
        body = json.loads(caught.value.body)
        assert body["kind"] == "Status"
        assert body["code"] == 503
        assert body["reason"] == "ServiceUnavailable"

    assert _list(custom, ns)["items"] == []


def test_injected_500_until_cleared(faults: DevCluster, custom: CustomApi, ns: str) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/", status=500)

    for _ in range(3):
        with pytest.raises(ApiException) as caught:
            _list(custom, ns)
        assert caught.value.status == 500
        assert json.loads(caught.value.body)["reason"] == "InternalError"

    faults.clear_faults()

    assert _list(custom, ns)["items"] == []


def test_fault_only_hits_matching_methods(faults: DevCluster, custom: CustomApi, ns: str) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/", methods=["POST"], status=503)

    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("a"))

    assert caught.value.status == 503
    assert _list(custom, ns)["items"] == []


def test_injected_latency_delays_the_answer(faults: DevCluster, custom: CustomApi, ns: str) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/", latency=0.6, times=1)

    started = time.monotonic()
    _list(custom, ns)
    slow = time.monotonic() - started
    started = time.monotonic()
    _list(custom, ns)
    fast = time.monotonic() - started

    assert slow >= 0.6
    assert fast < 0.5


def test_forced_409_is_a_conflict_status(faults: DevCluster, custom: CustomApi, ns: str) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest("a"))
    faults.inject_fault(path_regex=f"/namespaces/{ns}/{PLURAL}/a/status", status=409, times=1)

    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, ns, PLURAL, "a", {"status": {"failures": 1}}
        )

    assert caught.value.status == 409
    body = json.loads(caught.value.body)
    assert body["reason"] == "Conflict"
    assert body["message"].startswith("Operation cannot be fulfilled on ")
    unchanged = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "a")
    assert "status" not in unchanged
    retried = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "a", {"status": {"failures": 1}}
    )
    assert retried["status"] == {"failures": 1}


def test_version_endpoint_is_never_faulted(faults: DevCluster, admin_api) -> None:
    faults.inject_fault(path_regex=".*", status=503)

    version = kubernetes.client.VersionApi(admin_api).get_code()

    assert version.major == "1"


def test_injected_503_on_a_watch_raises(faults: DevCluster, custom: CustomApi, ns: str) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/{PLURAL}", methods=["GET"], status=503)

    with pytest.raises(ApiException) as caught:
        list(
            kubernetes.watch.Watch().stream(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                ns,
                PLURAL,
                timeout_seconds=1,
            )
        )

    assert caught.value.status == 503


def test_kubectl_prints_the_injected_status(faults: DevCluster, ns: str) -> None:
    faults.inject_fault(path_regex=f"/namespaces/{ns}/{PLURAL}", status=503)

    result = faults.kubectl("get", "ra", "-n", ns, check=False)

    assert result.returncode == 1
    assert "Error from server (ServiceUnavailable)" in result.stderr
