"""Watch streams: ADDED/MODIFIED/DELETED/BOOKMARK events from a resourceVersion, with
selectors, ``timeoutSeconds`` and 410 Gone once the version has left the history.

server.py calls ``stream`` with a callback that writes one JSON line per event and
returns False once the client has gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from devcluster.handlers import Cluster
from devcluster.listing import object_filter
from devcluster.resources import ResourceType
from devcluster.status import status_body
from devcluster.store import TooOld

BOOKMARK_INTERVAL = 2.0  # seconds between bookmarks when the client allows them
DEFAULT_TIMEOUT = 1800.0


def _gone(resource_version: int | str, current: int) -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": status_body(
            410,
            f"too old resource version: {resource_version} ({current})",
            reason="Expired",
        ),
    }


class _Visibility:
    """Turn store events into what a filtered watcher sees, like the watch cache does.

    An object modified into the selector arrives as ADDED, one modified out of it as
    DELETED. Objects whose earlier state this watch never saw pass through unchanged.
    """

    def __init__(self, wanted: Callable[[Mapping[str, Any]], bool]) -> None:
        self._wanted = wanted
        self._known: set[tuple[str, str]] = set()
        self._visible: set[tuple[str, str]] = set()

    def prime(self, key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
        """Record what the watcher would have seen at its starting resourceVersion."""
        self._known.add(key)
        if obj is not None and self._wanted(obj):
            self._visible.add(key)

    def __call__(self, event_type: str, obj: Mapping[str, Any]) -> str | None:
        metadata = obj.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        matches = self._wanted(obj)
        known, was_visible = key in self._known, key in self._visible
        self._known.add(key)
        if event_type == "DELETED":
            self._visible.discard(key)
            return "DELETED" if matches or was_visible else None
        if matches:
            self._visible.add(key)
            if event_type == "MODIFIED" and known and not was_visible:
                return "ADDED"
            return event_type
        self._visible.discard(key)
        return "DELETED" if was_visible else None


def stream(
    cluster: Cluster,
    rtype: ResourceType,
    namespace: str | None,
    name: str,
    query: Mapping[str, str],
    send: Callable[[Mapping[str, Any]], bool],
    alive: Callable[[], bool] = lambda: True,
    start: Callable[[], None] = lambda: None,
) -> None:
    """Send watch events to ``send`` until timeout, disconnect or server shutdown.

    ``start`` (the response headers) is called once the watch has its starting point, as
    kube-apiserver registers a watcher before it answers: a client that saw the headers
    may write, and the watch sees the write.
    """
    store = cluster.store
    selector_query = dict(query)
    if name:
        extra = f"metadata.name={name}"
        selector_query["fieldSelector"] = ",".join(
            filter(None, [query.get("fieldSelector", ""), extra])
        )
    matches = object_filter(rtype, selector_query)

    def wanted(obj: Mapping[str, Any]) -> bool:
        obj_ns = (obj.get("metadata") or {}).get("namespace", "")
        return (namespace is None or obj_ns == namespace) and matches(obj)

    translate = _Visibility(wanted)
    timeout = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT)
    deadline = time.monotonic() + timeout
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    requested = query.get("resourceVersion", "")
    initial_events = query.get("sendInitialEvents") == "true"
    if requested in ("", "0") or initial_events:
        items, last = store.list(rtype.storage_key, namespace)
        start()
        for item in items:
            shown = cluster.present(rtype, item)
            if translate("ADDED", shown) and not send({"type": "ADDED", "object": shown}):
                return
        if initial_events:
            # The watch-list protocol: a bookmark marks the end of the initial state.
            end = {
                "kind": rtype.kind,
                "apiVersion": rtype.group_version,
                "metadata": {
                    "resourceVersion": str(last),
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            }
            if not send({"type": "BOOKMARK", "object": end}):
                return
    else:
        try:
            last = int(requested)
        except ValueError:
            start()
            send(_gone(requested, store.resource_version))
            return
        for key, state in store.states_at(last, rtype.storage_key).items():
            translate.prime(key, cluster.present(rtype, state) if state is not None else None)
        start()
    next_bookmark = time.monotonic() + BOOKMARK_INTERVAL
    while not store.closed and alive():
        with store.lock:
            try:
                events = store.events_since(last, rtype.storage_key)
            except TooOld:
                send(_gone(last, store.resource_version))
                return
            current = store.resource_version
        for event in events:
            shown = cluster.present(rtype, dict(event.obj))
            kind = translate(event.type, shown)
            if kind and not send({"type": kind, "object": shown}):
                return
        last = max(last, current)
        now = time.monotonic()
        if now >= deadline:
            return
        if bookmarks and now >= next_bookmark:
            next_bookmark = now + BOOKMARK_INTERVAL
            bookmark = {
                "kind": rtype.kind,
                "apiVersion": rtype.group_version,
                "metadata": {"resourceVersion": str(last)},
            }
            if not send({"type": "BOOKMARK", "object": bookmark}):
                return
        wait = min(deadline - now, BOOKMARK_INTERVAL if bookmarks else 1.0)
        store.wait_for_change(last, max(0.0, wait))
