"""Identity, permissions and connections as kube-apiserver v1.37 has them, where the
differential test found devcluster answering otherwise: what every ServiceAccount may do,
who a token says it is, a pooled connection outliving a watch, and when a watch answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import kubernetes.client

from devcluster.handlers import Cluster
from devcluster.resources import Registry
from devcluster.store import Store
from devcluster.watch import stream
from testkit.devcluster import DevCluster

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _token(cluster: DevCluster, ns: str) -> str:
    cluster.kubectl("create", "serviceaccount", "robot", "-n", ns)
    return cluster.kubectl("create", "token", "robot", "-n", ns).stdout.strip()


def test_every_service_account_may_read_the_issuer_discovery_documents(
    cluster: DevCluster, ns: str
) -> None:
    token = _token(cluster, ns)

    rules = cluster.kubectl("auth", "can-i", "--list", "-n", ns, token=token).stdout

    for url in ("/.well-known/openid-configuration", "/openid/v1/jwks"):
        assert re.search(rf"^\s+\[{re.escape(url)}\] .*\[get\]", rules, re.M), url


def test_whoami_names_the_tokens_credential_id(cluster: DevCluster, ns: str) -> None:
    token = _token(cluster, ns)

    review = json.loads(cluster.kubectl("auth", "whoami", "-o", "json", token=token).stdout)

    assert review["metadata"]["creationTimestamp"].endswith("Z")
    extra = review["status"]["userInfo"]["extra"]
    assert list(extra) == ["authentication.kubernetes.io/credential-id"]
    [credential] = extra["authentication.kubernetes.io/credential-id"]
    assert credential.startswith("JTI=")
    assert UUID.fullmatch(credential.removeprefix("JTI="))


def test_a_pooled_connection_serves_the_next_request_after_a_watch_times_out(
    cluster: DevCluster, ns: str
) -> None:
    # As sentinel_cluster.kube does: no retries, so a connection the server closed behind
    # the pool's back would fail the next request instead of being retried away.
    configuration = kubernetes.client.Configuration()
    configuration.host = cluster.url
    configuration.ssl_ca_cert = str(cluster.ca_file)
    configuration.api_key = {"authorization": cluster.admin_token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    configuration.retries = False
    configuration.connection_pool_maxsize = 1
    with kubernetes.client.ApiClient(configuration) as api:
        core = kubernetes.client.CoreV1Api(api)
        listed = core.list_namespaced_config_map(ns)
        core.list_namespaced_config_map(
            ns,
            watch=True,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
            _preload_content=False,
        ).read()

        created = core.create_namespaced_config_map(ns, {"metadata": {"name": "after"}})

    assert created.metadata.name == "after"


def test_a_watch_answers_only_once_it_has_its_starting_point() -> None:
    # kubectl get -w watches from resourceVersion 0 ("now") and writes as soon as the
    # watch is answered: a write made right after the headers must arrive as an event.
    store = Store()
    cluster = Cluster(store, Registry(), issue_token=lambda *args, **kwargs: ("", None))
    cluster.bootstrap()
    config_maps = cluster.registry.lookup("", "v1", "configmaps")
    assert config_maps is not None
    cluster.create(config_maps, "default", {"metadata": {"name": "c"}}, {})
    events: list[tuple[str, dict[str, Any]]] = []

    def answered() -> None:
        body = {"metadata": {"name": "c", "labels": {"written": "after-headers"}}}
        cluster.update(config_maps, "default", "c", "", body, {})

    def send(event: Mapping[str, Any]) -> bool:
        events.append((event["type"], dict(event["object"]["metadata"])))
        return True

    stream(
        cluster,
        config_maps,
        "default",
        "",
        {"resourceVersion": "0", "timeoutSeconds": "1"},
        send,
        start=answered,
    )
    store.close()

    assert [kind for kind, _ in events] == ["ADDED", "MODIFIED"]
    assert "labels" not in events[0][1]
    assert events[1][1]["labels"] == {"written": "after-headers"}
