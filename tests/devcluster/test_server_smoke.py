"""Smoke tests of devcluster's server core through the official kubernetes client.

One server per module; the broad kubectl/client suite lives in the other test_* files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION
from testkit.paths import CRD_PATH

CRD = yaml.safe_load(CRD_PATH.read_text())


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    cluster = DevCluster(tmp_path_factory.mktemp("smoke"), data_dir=tmp_path_factory.mktemp("data"))
    cluster.start()
    client = cluster.api_client()
    kubernetes.client.ApiextensionsV1Api(client).create_custom_resource_definition(CRD)
    yield cluster
    cluster.stop()


def _ra(name: str, **spec: object) -> dict[str, object]:
    body = {
        "target": {"name": "checkout"},
        "metrics": [{"name": "p99", "query": "up", "maxValue": 0.25}],
    }
    body.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"name": name},
        "spec": body,
    }


def _custom(dev: DevCluster, token: str | None = None) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(dev.api_client(token))


def test_create_defaults_and_conflict(dev: DevCluster) -> None:
    api = _custom(dev)
    created = api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, _ra("a"))
    assert (created["spec"]["target"]["kind"], created["spec"]["dryRun"]) == ("Deployment", False)
    assert "failureLimit" not in created["spec"]
    assert created["metadata"]["generation"] == 1
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, _ra("a"))
    assert exc.value.status == 409
    stale = dict(created, spec={**created["spec"], "failureLimit": 5})
    api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a", stale)
    with pytest.raises(ApiException) as exc:
        api.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a", stale)
    assert exc.value.status == 409
    assert "the object has been modified" in json.loads(exc.value.body)["message"]


def test_invalid_message_shape(dev: DevCluster) -> None:
    api = _custom(dev)
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, _ra("bad", failureLimit=0)
        )
    body = json.loads(exc.value.body)
    assert exc.value.status == 422
    assert body["message"].startswith(
        'RolloutAnalysis.sentinel.example.com "bad" is invalid: spec.failureLimit: Invalid value: 0'
    )
    assert body["details"]["causes"][0]["field"] == "spec.failureLimit"


def test_status_subresource_keeps_spec_and_generation(dev: DevCluster) -> None:
    api = _custom(dev)
    api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, _ra("s", failureLimit=3))
    patched = api.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "s",
        {"status": {"failures": 2}, "spec": {"failureLimit": 9}},
    )
    assert patched["status"]["failures"] == 2
    assert patched["spec"]["failureLimit"] == 3
    assert patched["metadata"]["generation"] == 1
    main = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "s",
        {"status": {"failures": 7}, "spec": {"failureLimit": 4}},
    )
    assert main["status"]["failures"] == 2
    assert main["metadata"]["generation"] == 2


def test_dry_run_stores_nothing(dev: DevCluster) -> None:
    api = _custom(dev)
    before = api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["metadata"][
        "resourceVersion"
    ]
    api.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _ra("dry"), dry_run="All"
    )
    after = api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert after["metadata"]["resourceVersion"] == before
    assert "dry" not in [item["metadata"]["name"] for item in after["items"]]


def test_finalizer_keeps_object_until_removed(dev: DevCluster) -> None:
    api = _custom(dev)
    body = _ra("fin")
    body["metadata"]["finalizers"] = ["sentinel.example.com/cleanup"]
    api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    api.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "fin")
    kept = api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "fin")
    assert kept["metadata"]["deletionTimestamp"]
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "fin", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as exc:
        api.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "fin")
    assert exc.value.status == 404


def test_injected_fault_answers_status(dev: DevCluster) -> None:
    core = kubernetes.client.CoreV1Api(dev.api_client())
    dev.inject_fault(path_regex="/api/v1/namespaces$", methods=["GET"], status=503, times=1)
    with pytest.raises(ApiException) as exc:
        core.list_namespace()
    assert exc.value.status == 503
    assert core.list_namespace().items


def test_unauthenticated_is_401(dev: DevCluster) -> None:
    with pytest.raises(ApiException) as exc:
        kubernetes.client.CoreV1Api(dev.api_client("nope")).list_namespace()
    assert exc.value.status == 401


def test_restart_keeps_objects(dev: DevCluster) -> None:
    api = _custom(dev)
    api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, _ra("kept"))
    dev.restart()
    kept = _custom(dev).get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "kept")
    assert kept["spec"]["target"]["name"] == "checkout"


def test_kubectl_imperative_create_sends_protobuf_we_decode(dev: DevCluster) -> None:
    dev.kubectl("create", "namespace", "proto")
    dev.kubectl("create", "configmap", "c", "-n", "proto", "--from-literal=k=v")
    dev.kubectl("create", "deployment", "web", "-n", "proto", "--image=nginx:1.27", "--replicas=2")
    core = kubernetes.client.CoreV1Api(dev.api_client())
    assert core.read_namespaced_config_map("c", "proto").data == {"k": "v"}
    apps = kubernetes.client.AppsV1Api(dev.api_client())
    deployment = apps.read_namespaced_deployment("web", "proto")
    assert deployment.spec.replicas == 2
    assert deployment.spec.template.spec.containers[0].image == "nginx:1.27"
    assert deployment.status.observed_generation == 1


def test_namespace_deletion_waits_for_finalizers(dev: DevCluster) -> None:
    core = kubernetes.client.CoreV1Api(dev.api_client())
    core.create_namespace({"metadata": {"name": "doomed"}})
    body = _ra("held")
    body["metadata"]["finalizers"] = ["sentinel.example.com/hold"]
    api = _custom(dev)
    api.create_namespaced_custom_object(GROUP, VERSION, "doomed", PLURAL, body)
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "plain"}})
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    assert core.list_namespaced_config_map("doomed").items == []
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert exc.value.status == 403
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "doomed", PLURAL, "held", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as exc:
        core.read_namespace("doomed")
    assert exc.value.status == 404


def test_impersonation_applies_rbac_of_the_target(dev: DevCluster) -> None:
    dev.kubectl("create", "serviceaccount", "nobody")
    allowed = dev.kubectl(
        "auth",
        "can-i",
        "list",
        "configmaps",
        "--as=system:serviceaccount:default:nobody",
        check=False,
    )
    assert allowed.stdout.strip() == "no"
    assert dev.kubectl("auth", "can-i", "list", "configmaps").stdout.strip() == "yes"


def test_busy_port_is_a_one_line_error(dev: DevCluster, tmp_path: Path) -> None:
    import subprocess
    import sys

    port = dev.url.rsplit(":", 1)[1]
    result = subprocess.run(
        [sys.executable, "-m", "devcluster", "--port", port, "--kubeconfig", str(tmp_path / "k")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr == f"devcluster: port {port} is already in use\n"


def test_watch_from_before_a_restart_is_gone(dev: DevCluster) -> None:
    from kubernetes import watch

    core = kubernetes.client.CoreV1Api(dev.api_client())
    old_rv = core.list_namespace().metadata.resource_version
    core.create_namespace({"metadata": {"name": "bump"}})
    dev.restart()
    core = kubernetes.client.CoreV1Api(dev.api_client())
    with pytest.raises(ApiException) as exc:
        for _event in watch.Watch().stream(
            core.list_namespace, resource_version=old_rv, timeout_seconds=2
        ):
            pass
    assert exc.value.status == 410


def test_watch_with_label_selector_sees_objects_enter_and_leave(dev: DevCluster) -> None:
    import threading

    from kubernetes import watch

    core = kubernetes.client.CoreV1Api(dev.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "mover"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version

    def relabel() -> None:
        core.patch_namespaced_config_map("mover", "default", {"metadata": {"labels": {"w": "1"}}})
        core.patch_namespaced_config_map("mover", "default", {"data": {"a": "b"}})
        core.patch_namespaced_config_map("mover", "default", {"metadata": {"labels": {"w": None}}})

    seen = []
    threading.Timer(0.3, relabel).start()
    for event in watch.Watch().stream(
        core.list_namespaced_config_map,
        "default",
        label_selector="w=1",
        resource_version=rv,
        timeout_seconds=2,
    ):
        seen.append(event["type"])
        if event["type"] == "DELETED":
            break
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_journal_replays_log_over_snapshot_and_ignores_a_torn_line(tmp_path: Path) -> None:
    from devcluster.persistence import LOG_NAME, Journal

    def cm(name: str, rv: int) -> dict[str, object]:
        return {"metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)}}

    journal = Journal(tmp_path, compact_every=2)
    assert not journal.append(1, "/configmaps", "ADDED", cm("a", 1))
    assert journal.append(2, "/configmaps", "ADDED", cm("b", 2))
    journal.compact(
        2, {"/configmaps": {("default", "a"): cm("a", 1), ("default", "b"): cm("b", 2)}}
    )
    journal.append(3, "/configmaps", "DELETED", cm("a", 3))
    journal.append(4, "/configmaps", "ADDED", cm("c", 4))
    journal.close()
    with (tmp_path / LOG_NAME).open("a") as log:
        log.write('{"rv": 5, "key": "/configm')

    rv, objects = Journal(tmp_path).load()

    assert rv == 4
    assert sorted(name for _ns, name in objects["/configmaps"]) == ["b", "c"]
