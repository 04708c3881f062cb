"""``sentinel_cluster.kube.KubeClient`` against both clusters over HTTPS: answers, typed errors.

Every test runs on devcluster and on the real kube-apiserver (``kube_cluster``), except the
injected 503/409, a devcluster-only fault hook.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubeconfig_for_token
from testkit.devcluster import DevCluster
from testkit.manifests import analysis_manifest, gauge_metric
from testkit.namespaces import create_namespace, delete_namespace, unique_name


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def _configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_create_get_and_typed_errors(kube_client: kube.KubeClient, namespace: str) -> None:
    created = kube_client.request("POST", _configmaps(namespace), body=_configmap("a", k="1"))
    assert created["metadata"]["uid"]
    fetched = kube_client.request("GET", f"{_configmaps(namespace)}/a")
    assert fetched["data"] == {"k": "1"}

    with pytest.raises(kube.NotFound) as missing:
        kube_client.request("GET", f"{_configmaps(namespace)}/nope")
    assert missing.value.status == 404
    assert missing.value.reason == "NotFound"

    with pytest.raises(kube.Conflict) as exists:
        kube_client.request("POST", _configmaps(namespace), body=_configmap("a"))
    assert exists.value.status == 409


def test_stale_resource_version_is_a_conflict(kube_client: kube.KubeClient, namespace: str) -> None:
    created = kube_client.request("POST", _configmaps(namespace), body=_configmap("b", k="1"))
    first = dict(created, data={"k": "2"})
    kube_client.request("PUT", f"{_configmaps(namespace)}/b", body=first)
    stale = dict(created, data={"k": "3"})
    with pytest.raises(kube.Conflict):
        kube_client.request("PUT", f"{_configmaps(namespace)}/b", body=stale)
    assert kube_client.request("GET", f"{_configmaps(namespace)}/b")["data"] == {"k": "2"}


def test_invalid_resource_lists_field_causes(kube_client: kube.KubeClient, namespace: str) -> None:
    body = analysis_manifest("bad", namespace, metrics=[gauge_metric("x", 1.0)], failure_limit=0)
    with pytest.raises(kube.Invalid) as invalid:
        kube_client.request("POST", kube.analyses_path(namespace), body=body)
    assert invalid.value.status == 422
    assert any("failureLimit" in cause.get("field", "") for cause in invalid.value.causes)


def test_list_pages_with_limit_and_continue(kube_client: kube.KubeClient, namespace: str) -> None:
    for index in range(5):
        kube_client.request("POST", _configmaps(namespace), body=_configmap(f"cm-{index}"))
    first = kube_client.request("GET", _configmaps(namespace), query={"limit": 3})
    assert len(first["items"]) == 3
    token = first["metadata"]["continue"]
    rest = kube_client.request("GET", _configmaps(namespace), query={"limit": 3, "continue": token})
    names = [item["metadata"]["name"] for item in first["items"] + rest["items"]]
    assert sorted(names) == [f"cm-{index}" for index in range(5)]


def test_watch_from_a_resource_version(kube_client: kube.KubeClient, namespace: str) -> None:
    listed = kube_client.request("GET", _configmaps(namespace))
    version = listed["metadata"]["resourceVersion"]
    created = kube_client.request("POST", _configmaps(namespace), body=_configmap("w", k="1"))
    kube_client.request(
        "PATCH",
        f"{_configmaps(namespace)}/w",
        body={"data": {"k": "2"}},
        content_type=kube.MERGE_PATCH,
    )
    kube_client.request("DELETE", f"{_configmaps(namespace)}/w")

    seen: list[tuple[str, str]] = []
    for event in kube_client.watch(
        _configmaps(namespace), resource_version=version, timeout_seconds=1
    ):
        if event.type != "BOOKMARK":
            seen.append((event.type, event.object["data"]["k"]))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]
    assert created["metadata"]["uid"]


def test_watch_delivers_changes_made_while_it_waits(
    kube_client: kube.KubeClient, namespace: str
) -> None:
    version = kube_client.request("GET", _configmaps(namespace))["metadata"]["resourceVersion"]
    timer = threading.Timer(
        0.3,
        lambda: kube_client.request("POST", _configmaps(namespace), body=_configmap("later")),
    )
    timer.start()
    started = time.monotonic()
    events = kube_client.watch(_configmaps(namespace), resource_version=version, timeout_seconds=5)
    first = next(event for event in events if event.type != "BOOKMARK")
    events.close()  # type: ignore[attr-defined]
    assert first.type == "ADDED" and first.object["metadata"]["name"] == "later"
    # Delivered while the watch waited, i.e. before its 5 s timeout closed it.
    assert time.monotonic() - started < 4.5


def test_injected_unavailable_and_conflict(
    kube_client: kube.KubeClient, namespace: str, api_faults: DevCluster
) -> None:
    path = _configmaps(namespace)
    api_faults.inject_fault(path_regex=f"/namespaces/{namespace}/configmaps", status=503, times=1)
    with pytest.raises(kube.Unavailable) as unavailable:
        kube_client.request("GET", path)
    assert unavailable.value.status == 503
    assert kube_client.request("GET", path)["items"] == []  # one time only

    api_faults.inject_fault(path_regex=f"/namespaces/{namespace}/configmaps", status=409, times=1)
    with pytest.raises(kube.Conflict):
        kube_client.request("POST", path, body=_configmap("c"))


def test_bad_credentials_are_forbidden(kube_cluster: Cluster) -> None:
    client = kube.KubeClient(kube_cluster.api_client(token="not-a-token"))
    with pytest.raises(kube.Forbidden) as refused:
        client.request("GET", kube.analyses_path())
    assert refused.value.status == 401


def test_a_token_rotated_by_the_refresh_hook_is_sent_with_the_next_request(
    kube_cluster: Cluster,
) -> None:
    # What an in-cluster client does when the kubelet rotates the ServiceAccount token: the
    # official client's refresh hook puts the new token into the configuration, and the lean
    # request path must read it there on every request, never keep the one it started with.
    admin = kube_cluster.api_client().configuration.api_key["authorization"]
    api_client = kube_cluster.api_client(token="not-a-token")
    client = kube.KubeClient(api_client)
    with pytest.raises(kube.Forbidden):
        client.request("GET", kube.analyses_path())

    current = {"token": admin}

    def refresh(configuration: Any) -> None:
        configuration.api_key["authorization"] = current["token"]

    api_client.configuration.refresh_api_key_hook = refresh
    assert client.request("GET", kube.analyses_path())["items"] is not None
    current["token"] = "rotated-away"
    with pytest.raises(kube.Forbidden):
        client.request("GET", kube.analyses_path())
    current["token"] = admin
    assert client.request("GET", kube.analyses_path())["items"] is not None


# A real exec credential plugin: prints an ExecCredential with the token in argv[1]'s file and
# counts its runs in argv[2]'s. Its credential expires now, inside the client's 5-minute skew,
# so the official loader runs it again before every request.
_EXEC_PLUGIN = """
import datetime, json, sys
token, runs = sys.argv[1:]
with open(runs, "a") as counted:
    counted.write("run\\n")
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    "status": {"token": open(token).read().strip(), "expirationTimestamp": now},
}))
"""


def _admin_token(cluster: Cluster) -> str:
    return str(cluster.api_client().configuration.api_key["authorization"])


def test_a_static_token_kubeconfig_is_not_refreshed_before_each_request(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    # docs/performance.md "Cuts 5 and 6": the loader's hook re-applied the whole configuration
    # before every request; a static token cannot expire, so nothing runs per request.
    path = kubeconfig_for_token(kube_cluster, _admin_token(kube_cluster), tmp_path / "kubeconfig")
    api_client = kube.load_api_client(str(path))
    assert api_client.configuration.refresh_api_key_hook is None
    assert kube.KubeClient(api_client).request("GET", kube.analyses_path())["items"] is not None


def test_an_exec_credential_is_renewed_when_it_expires(
    kube_cluster: Cluster, tmp_path: Path
) -> None:
    token, runs, plugin = tmp_path / "token", tmp_path / "runs", tmp_path / "plugin.py"
    token.write_text(_admin_token(kube_cluster))
    plugin.write_text(_EXEC_PLUGIN)
    path = kubeconfig_for_token(kube_cluster, "unused", tmp_path / "kubeconfig")
    config = yaml.safe_load(path.read_text())
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin), str(token), str(runs)],
        }
    }
    path.write_text(yaml.safe_dump(config))

    def run_count() -> int:
        return len(runs.read_text().splitlines())

    client = kube.KubeClient(kube.load_api_client(str(path)))
    assert run_count() == 1
    assert client.request("GET", kube.analyses_path())["items"] is not None
    assert run_count() == 2
    token.write_text("not-a-token")
    with pytest.raises(kube.Forbidden):
        client.request("GET", kube.analyses_path())
    assert run_count() == 3


def test_unloadable_kubeconfig_is_a_kube_error(tmp_path: Path) -> None:
    with pytest.raises(kube.KubeError, match="cannot load Kubernetes configuration"):
        kube.load_api_client(str(tmp_path / "missing-kubeconfig"))


def test_stopped_server_is_unavailable_and_an_old_version_is_gone(
    restartable_cluster: Cluster,
) -> None:
    own_cluster = restartable_cluster
    client = kube.KubeClient(kube.load_api_client(str(own_cluster.kubeconfig)), timeout=3)
    namespace = create_namespace(client, unique_name("stop"))
    path = _configmaps(namespace)
    version = client.request("GET", path)["metadata"]["resourceVersion"]
    client.request("POST", path, body=_configmap("kept"))

    own_cluster.stop()
    started = time.monotonic()
    with pytest.raises(kube.Unavailable, match="cannot reach the API server"):
        client.request("GET", path)
    assert time.monotonic() - started < 3  # refused at once, no hidden retries
    with pytest.raises(kube.Unavailable):
        next(iter(client.watch(path, resource_version=version, timeout_seconds=1)))

    own_cluster.start()
    # The object survived, but the watch history did not: resuming from before is 410 Gone.
    assert client.request("GET", f"{path}/kept")["metadata"]["name"] == "kept"
    with pytest.raises(kube.Gone):
        for _ in client.watch(path, resource_version=version, timeout_seconds=1):
            pass
    delete_namespace(client, namespace)
