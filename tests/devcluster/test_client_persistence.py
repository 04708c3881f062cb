"""Restarts: objects and resourceVersions survive with ``--data-dir`` and vanish without it."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import kubernetes.client
import kubernetes.watch
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest, to_yaml
from testkit.paths import CRD_PATH


def _custom(cluster: DevCluster) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(cluster.api_client())


def test_objects_and_resource_versions_survive_restart_with_data_dir(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    persistent_cluster.kubectl(
        "apply", "-n", persistent_ns, "-f", "-", input=to_yaml(ra_manifest("a"))
    )
    custom = _custom(persistent_cluster)
    before = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, persistent_ns, PLURAL, "a", {"status": {"failures": 2}}
    )

    persistent_cluster.restart()

    after = _custom(persistent_cluster).get_namespaced_custom_object(
        GROUP, VERSION, persistent_ns, PLURAL, "a"
    )
    assert after == before
    listed = persistent_cluster.kubectl("get", "ra", "-n", persistent_ns, "-o", "name").stdout
    assert listed == "rolloutanalysis.sentinel.example.com/a\n"


def test_resource_versions_keep_increasing_after_restart(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    custom = _custom(persistent_cluster)
    first = custom.create_namespaced_custom_object(
        GROUP, VERSION, persistent_ns, PLURAL, ra_manifest("a")
    )

    persistent_cluster.restart()

    second = _custom(persistent_cluster).create_namespaced_custom_object(
        GROUP, VERSION, persistent_ns, PLURAL, ra_manifest("b")
    )
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_service_account_token_still_valid_after_restart(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    persistent_cluster.kubectl("create", "serviceaccount", "bot", "-n", persistent_ns)
    token = persistent_cluster.kubectl("create", "token", "bot", "-n", persistent_ns).stdout.strip()

    persistent_cluster.restart()

    denied = persistent_cluster.kubectl("get", "ra", "-n", persistent_ns, token=token, check=False)
    assert denied.returncode == 1
    assert f'User "system:serviceaccount:{persistent_ns}:bot" cannot list' in denied.stderr


@pytest.mark.server
def test_objects_are_gone_after_restart_without_data_dir(tmp_path: Path) -> None:
    with DevCluster(tmp_path) as dev:
        created = dev.kubectl("apply", "-f", str(CRD_PATH))
        dev.kubectl("create", "namespace", "lost")
        dev.kubectl("create", "configmap", "c", "-n", "lost", "--from-literal=k=v")

        dev.restart()

        core = kubernetes.client.CoreV1Api(dev.api_client())
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_config_map("c", "lost")
        assert caught.value.status == 404
        # The CRD went with everything else, so applying it creates it again.
        again = dev.kubectl("apply", "-f", str(CRD_PATH))
        assert (
            created.stdout
            == again.stdout
            == (
                "customresourcedefinition.apiextensions.k8s.io/rolloutanalyses.sentinel.example.com"
                " created\n"
            )
        )


def test_watch_from_before_restart_resumes_or_is_gone(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    custom = _custom(persistent_cluster)
    before = custom.create_namespaced_custom_object(
        GROUP, VERSION, persistent_ns, PLURAL, ra_manifest("a")
    )

    persistent_cluster.restart()
    custom = _custom(persistent_cluster)
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, persistent_ns, PLURAL, "a", {"spec": {"failureLimit": 6}}
    )

    # A client must either get every later event or a 410 telling it to relist; silently
    # missing the change (the operator's "nothing lost" bar) is the failure.
    try:
        events = list(
            kubernetes.watch.Watch().stream(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                persistent_ns,
                PLURAL,
                resource_version=before["metadata"]["resourceVersion"],
                timeout_seconds=1,
            )
        )
    except ApiException as exc:
        assert exc.status == 410
        assert "Expired" in exc.reason
    else:
        assert [(e["type"], e["object"]["spec"]["failureLimit"]) for e in events] == [
            ("MODIFIED", 6)
        ]


def test_open_watch_ends_when_the_server_stops(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    client = persistent_cluster.api_client()
    custom = kubernetes.client.CustomObjectsApi(client)
    ended = threading.Event()

    def consume() -> None:
        # The operator relies on the stream ending (cleanly or with an error) so it can relist.
        with contextlib.suppress(Exception):
            for _ in kubernetes.watch.Watch().stream(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                persistent_ns,
                PLURAL,
                timeout_seconds=60,
            ):
                pass
        ended.set()

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    time.sleep(0.5)
    assert not ended.is_set()

    persistent_cluster.restart()

    assert ended.wait(timeout=15)
    client.close()
