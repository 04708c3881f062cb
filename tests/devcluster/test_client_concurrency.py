"""Concurrent clients, as the operator's workers and the web app are: optimistic concurrency
holds under races, resourceVersions stay unique, and a watch sees every write in order.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import kubernetes.client
import kubernetes.watch
from kubernetes.client.exceptions import ApiException

from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


def test_racing_replaces_with_one_resource_version_let_exactly_one_win(
    custom: CustomApi, ns: str
) -> None:
    base = custom.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, ra_manifest("checkout")
    )

    def replace(limit: int) -> int:
        body = json.loads(json.dumps(base))
        body["spec"]["failureLimit"] = limit
        try:
            custom.replace_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout", body)
        except ApiException as exc:
            return exc.status
        return 200

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(replace, range(10, 18)))

    assert sorted(statuses) == [200] + [409] * 7
    winner = 10 + statuses.index(200)
    stored = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "checkout")
    assert stored["spec"]["failureLimit"] == winner
    assert stored["metadata"]["generation"] == 2


def test_parallel_creates_get_unique_resource_versions(custom: CustomApi, ns: str) -> None:
    def create(index: int) -> str:
        created = custom.create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, ra_manifest(f"ra-{index}")
        )
        return created["metadata"]["resourceVersion"]

    with ThreadPoolExecutor(max_workers=6) as pool:
        versions = list(pool.map(create, range(24)))

    assert len(set(versions)) == 24
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    assert len(listed["items"]) == 24
    assert int(listed["metadata"]["resourceVersion"]) >= max(int(v) for v in versions)


def test_watch_sees_every_concurrent_write_in_order(custom: CustomApi, ns: str) -> None:
    for name in ("a", "b", "c"):
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, ra_manifest(name))
    start = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["metadata"][
        "resourceVersion"
    ]

    def write(name: str) -> None:
        for failures in range(1, 11):
            custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, ns, PLURAL, name, {"status": {"failures": failures}}
            )

    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(write, ("a", "b", "c")))
    events = list(
        kubernetes.watch.Watch().stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            resource_version=start,
            timeout_seconds=1,
        )
    )

    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert len(events) == 30
    assert versions == sorted(versions)
    assert len(set(versions)) == 30
    for name in ("a", "b", "c"):
        seen = [
            e["object"]["status"]["failures"]
            for e in events
            if e["object"]["metadata"]["name"] == name
        ]
        assert seen == list(range(1, 11))
