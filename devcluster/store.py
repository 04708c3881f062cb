"""In-memory object store with a global resourceVersion, a bounded watch history and
optional crash-safe persistence (persistence.Journal: snapshot plus append-only log).

The request handlers (handlers.py) hold ``Store.lock`` around read-modify-write
sequences and call ``commit``/``remove``; watch streams (watch.py) read ``events_since``
and block in ``wait_for_change``. The store also serves rbac.py as its ``RbacSource``.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devcluster.persistence import Journal

RBAC_KEYS = {
    "roles": "rbac.authorization.k8s.io/roles",
    "rolebindings": "rbac.authorization.k8s.io/rolebindings",
    "clusterroles": "rbac.authorization.k8s.io/clusterroles",
    "clusterrolebindings": "rbac.authorization.k8s.io/clusterrolebindings",
}


@dataclass(frozen=True)
class WatchEvent:
    """One change: ``type`` is ADDED, MODIFIED or DELETED; ``obj`` is the object after it."""

    resource_version: int
    storage_key: str
    type: str
    obj: Mapping[str, Any]


class TooOld(Exception):
    """The requested resourceVersion has left the watch history window."""


class Store:
    """Objects keyed by (storage key, namespace, name)."""

    def __init__(self, data_dir: Path | None = None, history_size: int = 1000) -> None:
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._rv = 0
        self._history: deque[WatchEvent] = deque()
        self._history_size = max(1, history_size)
        # Watches starting before this resourceVersion can no longer be served.
        self._compacted = 0
        self._journal = Journal(data_dir) if data_dir is not None else None
        self._closed = False
        if self._journal is not None:
            self._rv, self._objects = self._journal.load()
            # Restarted watches cannot resume from before the restart: history is gone.
            self._compacted = self._rv
            self._journal.compact(self._rv, self._objects)

    # -- reads ------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """Return the latest resourceVersion handed out."""
        with self.lock:
            return self._rv

    def get(self, storage_key: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a deep copy of one object, or None."""
        with self.lock:
            obj = self._objects.get(storage_key, {}).get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, storage_key: str, namespace: str | None) -> tuple[list[dict[str, Any]], int]:
        """Return copies of all objects of a type (in one namespace if given) and the RV."""
        with self.lock:
            bucket = self._objects.get(storage_key, {})
            items = [
                copy.deepcopy(obj)
                for (ns, _name), obj in sorted(bucket.items())
                if namespace is None or ns == namespace
            ]
            return items, self._rv

    def list_rbac(self, resource: str, namespace: str | None) -> list[Mapping[str, Any]]:
        """Return RBAC objects for rbac.authorize (RbacSource protocol)."""
        items, _rv = self.list(RBAC_KEYS[resource], namespace)
        return items

    # -- writes -----------------------------------------------------------------------------

    def next_resource_version(self) -> int:
        """Reserve and return the next resourceVersion (caller holds the lock)."""
        self._rv += 1
        return self._rv

    def commit(self, storage_key: str, obj: dict[str, Any], event_type: str) -> dict[str, Any]:
        """Store ``obj`` with a new resourceVersion and record the event; return a copy."""
        with self.lock:
            rv = self.next_resource_version()
            stored = copy.deepcopy(obj)
            stored.setdefault("metadata", {})["resourceVersion"] = str(rv)
            meta = stored["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            self._objects.setdefault(storage_key, {})[key] = stored
            self._record(WatchEvent(rv, storage_key, event_type, copy.deepcopy(stored)))
            return copy.deepcopy(stored)

    def remove(self, storage_key: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Delete one object, record a DELETED event and return its last state."""
        with self.lock:
            obj = self._objects.get(storage_key, {}).pop((namespace, name), None)
            if obj is None:
                return None
            rv = self.next_resource_version()
            obj["metadata"]["resourceVersion"] = str(rv)
            self._record(WatchEvent(rv, storage_key, "DELETED", copy.deepcopy(obj)))
            return copy.deepcopy(obj)

    def _record(self, event: WatchEvent) -> None:
        self._history.append(event)
        while len(self._history) > self._history_size:
            dropped = self._history.popleft()
            self._compacted = dropped.resource_version
        if self._journal is not None and self._journal.append(
            event.resource_version, event.storage_key, event.type, dict(event.obj)
        ):
            self._journal.compact(self._rv, self._objects)
        self._changed.notify_all()

    # -- watch ------------------------------------------------------------------------------

    def events_since(self, resource_version: int, storage_key: str) -> list[WatchEvent]:
        """Return events of one type after ``resource_version``; raise TooOld if compacted."""
        with self.lock:
            if resource_version < self._compacted:
                raise TooOld(str(resource_version))
            return [
                event
                for event in self._history
                if event.resource_version > resource_version and event.storage_key == storage_key
            ]

    def states_at(self, resource_version: int, storage_key: str) -> dict[tuple[str, str], Any]:
        """Return {(namespace, name): object or None (deleted)} as of ``resource_version``.

        Covers the objects that exist now and those the history window knows about;
        used by watches to tell ADDED from MODIFIED when they filter by selectors.
        """
        with self.lock:
            states: dict[tuple[str, str], Any] = {}
            for (namespace, name), obj in self._objects.get(storage_key, {}).items():
                if int(obj["metadata"]["resourceVersion"]) <= resource_version:
                    states[(namespace, name)] = copy.deepcopy(obj)
            for event in self._history:
                if event.storage_key != storage_key or event.resource_version > resource_version:
                    continue
                metadata = event.obj.get("metadata") or {}
                key = (metadata.get("namespace", ""), metadata.get("name", ""))
                states[key] = None if event.type == "DELETED" else copy.deepcopy(event.obj)
            return states

    def wait_for_change(self, after: int, timeout: float) -> None:
        """Block until the resourceVersion passes ``after``, the timeout, or close()."""
        with self._changed:
            if self._rv <= after and not self._closed:
                self._changed.wait(timeout)

    def close(self) -> None:
        """Wake every waiting watch so the server can shut down; close the journal."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            if self._journal is not None:
                self._journal.close()

    @property
    def closed(self) -> bool:
        """Return whether close() was called."""
        return self._closed
