"""Watch through the official Python client: resume from a resourceVersion, event order,
selectors, BOOKMARK, timeoutSeconds, and 410 Gone once a version left the history window.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import kubernetes.watch
import pytest
from kubernetes.client.exceptions import ApiException

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest

CustomApi = kubernetes.client.CustomObjectsApi


def _create(custom: CustomApi, ns: str, name: str, **labels: str) -> dict[str, Any]:
    manifest = ra_manifest(name)
    if labels:
        manifest["metadata"]["labels"] = labels
    return custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, manifest)


def _events(custom: CustomApi, ns: str, timeout: int = 1, **kwargs: Any) -> list[dict[str, Any]]:
    watch = kubernetes.watch.Watch()
    return list(
        watch.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            timeout_seconds=timeout,
            **kwargs,
        )
    )


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]


def test_watch_resumes_after_resource_version_in_order(custom: CustomApi, ns: str) -> None:
    start = _create(custom, ns, "a")["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "a", {"spec": {"failureLimit": 4}}
    )
    _create(custom, ns, "b")
    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "a")

    events = _events(custom, ns, resource_version=start)

    assert _summary(events) == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(start)
    assert events[0]["object"]["spec"]["failureLimit"] == 4


def test_watch_without_resource_version_starts_with_existing_objects(
    custom: CustomApi, ns: str
) -> None:
    _create(custom, ns, "a")
    _create(custom, ns, "b")

    events = _events(custom, ns)

    assert sorted(_summary(events)) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_from_list_resource_version_sees_only_later_changes(
    custom: CustomApi, ns: str
) -> None:
    _create(custom, ns, "a")
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    _create(custom, ns, "b")

    events = _events(custom, ns, resource_version=listed["metadata"]["resourceVersion"])

    assert _summary(events) == [("ADDED", "b")]


def test_watch_with_label_selector_sees_matching_objects_only(custom: CustomApi, ns: str) -> None:
    start = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["metadata"][
        "resourceVersion"
    ]
    _create(custom, ns, "a", team="pay")
    _create(custom, ns, "b", team="shop")

    events = _events(custom, ns, resource_version=start, label_selector="team=pay")

    assert _summary(events) == [("ADDED", "a")]


def test_watch_with_field_selector_on_name(custom: CustomApi, ns: str) -> None:
    start = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["metadata"][
        "resourceVersion"
    ]
    _create(custom, ns, "a")
    _create(custom, ns, "b")

    events = _events(custom, ns, resource_version=start, field_selector="metadata.name=b")

    assert _summary(events) == [("ADDED", "b")]


def test_watch_sends_bookmark_when_allowed(custom: CustomApi, ns: str) -> None:
    created = _create(custom, ns, "a")

    events = _events(
        custom,
        ns,
        timeout=3,
        resource_version=created["metadata"]["resourceVersion"],
        allow_watch_bookmarks=True,
    )

    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, [e["type"] for e in events]
    raw = bookmarks[0]["raw_object"]
    assert raw["kind"] == "RolloutAnalysis"
    assert raw["apiVersion"] == f"{GROUP}/{VERSION}"
    assert int(raw["metadata"]["resourceVersion"]) >= int(created["metadata"]["resourceVersion"])


def test_watch_without_bookmarks_allowed_sends_none(custom: CustomApi, ns: str) -> None:
    created = _create(custom, ns, "a")

    events = _events(custom, ns, timeout=3, resource_version=created["metadata"]["resourceVersion"])

    assert events == []


def test_timeout_seconds_ends_the_stream(custom: CustomApi, ns: str) -> None:
    started = time.monotonic()

    events = _events(custom, ns, timeout=2, resource_version="0")

    elapsed = time.monotonic() - started
    assert events == []
    assert 1.5 <= elapsed < 5


@pytest.fixture
def short_history(tmp_path: Path) -> Iterator[kubernetes.client.ApiClient]:
    """A devcluster of its own whose watch history keeps only five events."""
    with DevCluster(tmp_path, args=["--watch-history", "5"]) as cluster:
        client = kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
        try:
            yield client
        finally:
            client.close()


def test_watch_from_version_beyond_history_is_gone(
    short_history: kubernetes.client.ApiClient,
) -> None:
    core = kubernetes.client.CoreV1Api(short_history)
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "cm-0"}})
    for index in range(1, 8):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{index}"}})

    with pytest.raises(ApiException) as caught:
        list(
            kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=first.metadata.resource_version,
                timeout_seconds=2,
            )
        )

    assert caught.value.status == 410
    assert "Expired" in caught.value.reason


def test_watch_from_version_inside_history_resumes(
    short_history: kubernetes.client.ApiClient,
) -> None:
    core = kubernetes.client.CoreV1Api(short_history)
    for index in range(8):
        created = core.create_namespaced_config_map(
            "default", {"metadata": {"name": f"cm-{index}"}}
        )
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm-last"}})

    events = list(
        kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=created.metadata.resource_version,
            timeout_seconds=1,
        )
    )

    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "cm-last")]


def test_watch_delivers_events_as_they_happen(custom: CustomApi, ns: str) -> None:
    start = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["metadata"][
        "resourceVersion"
    ]
    watch = kubernetes.watch.Watch()
    arrived: queue.Queue[tuple[str, float]] = queue.Queue()

    def consume() -> None:
        stream = watch.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            resource_version=start,
            timeout_seconds=20,
        )
        # Watch.stop() shuts the socket under this reader, which then raises; that is the end.
        with contextlib.suppress(Exception):
            for event in stream:
                arrived.put((event["type"], time.monotonic()))

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    try:
        time.sleep(0.3)
        sent = time.monotonic()
        _create(custom, ns, "a")
        kind, when = arrived.get(timeout=5)
    finally:
        watch.stop()
    consumer.join(timeout=10)

    assert kind == "ADDED"
    assert when - sent < 1.0
    assert not consumer.is_alive()
