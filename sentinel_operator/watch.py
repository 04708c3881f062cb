"""Keep the database mirror current from a watch on RolloutAnalyses (docs/operator.md).

``AnalysisWatch.run`` (one thread per watched scope, started by ``runtime`` and active only
while this replica leads) lists RolloutAnalyses (all namespaces, or one namespace of
``SENTINEL_NAMESPACES``), repairs the mirror with ``analyses.mirror.sync_all``, then watches
from the list's resourceVersion:

- ADDED / MODIFIED: ``upsert_from_resource``; a new resource or a new ``generation`` becomes
  due at once, so the dispatcher evaluates it within a second and the first status follows.
  An event that only adds a new evaluation (the operator's own status write) is left to the
  worker that wrote it, which mirrors it in the same transaction as its history row.
- DELETED: ``mark_deleted``, which drops the analysis from the dispatch queue at once.
- BOOKMARK: only moves the resourceVersion on.
- An object the mirror cannot hold (``mirror.UNMIRRORABLE``) or outside the watched namespace is
  logged and skipped; relisting would not change it, and would only repeat.
- A watch that ends (server timeout) resumes from the last resourceVersion seen; 410 Gone
  relists; any other API error backs off (``backoff.next_delay``) and resumes.

It also keeps the last copy of each analysis it saw, without ``managedFields``
(``cached``): the dispatcher hands it to the worker, which then makes no GET for it
(docs/performance.md, "Reads from caches"). Only while the watch runs: from the first list
until an error, and again after the next list.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from datetime import datetime

from django.db import close_old_connections

from analyses import mirror
from sentinel_cluster import kube
from sentinel_cluster.informer import strip_analysis
from sentinel_core import backoff

log = logging.getLogger(__name__)

# Server-side watch timeout: short enough that a replica losing the lease stops soon.
WATCH_TIMEOUT_SECONDS = 60
# Backoff base for API errors; with backoff.next_delay this gives 1 s, 2 s, ... capped at 60 s.
_ERROR_INTERVAL = 1.0


class AnalysisWatch:
    """List and watch the RolloutAnalyses of one scope into the mirror."""

    def __init__(
        self,
        client: kube.KubeClient,
        *,
        namespace: str | None,
        now: Callable[[], datetime],
        is_leader: Callable[[], bool] = lambda: True,
        rng: random.Random | None = None,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self._now = now
        self._is_leader = is_leader
        self._rng = rng or random.Random()
        self.watch_timeout = watch_timeout
        self.path = kube.analyses_path(namespace)
        self.resource_version = ""
        # Counts for tests and logs: how often the scope was listed and events applied.
        self.lists = 0
        self.events = 0
        # (namespace, name) -> the analysis as last seen; answered from only while ``live``.
        self._objects: dict[tuple[str, str], dict[str, object]] = {}
        self.live = False

    def cached(self, namespace: str, name: str) -> dict[str, object] | None:
        """Return the analysis as the watch last saw it; None when not seen or not live."""
        return self._objects.get((namespace, name)) if self.live else None

    def relist(self) -> mirror.SyncResult:
        """List the scope, repair the mirror and remember the list's resourceVersion."""
        listed_at = self._now()
        items, version = self.client.list_all(self.path)
        scope = [self.namespace] if self.namespace else None
        result = mirror.sync_all(items, listed_at=listed_at, namespaces=scope, now=self._now())
        self._objects = {
            (str(meta.get("namespace") or ""), str(meta.get("name") or "")): strip_analysis(item)
            for item in items
            for meta in [item.get("metadata") or {}]
        }
        self.resource_version = version
        self.live = True
        self.lists += 1
        log.info("watch %s: listed %d analyses at %s: %s", self.path, len(items), version, result)
        return result

    def watch_once(self, stop: threading.Event) -> None:
        """Apply events from ``resource_version`` until the watch ends or ``stop`` is set."""
        # Resumed where it stopped: what it missed comes as events (or as 410 Gone).
        self.live = True
        for event in self.client.watch(
            self.path, resource_version=self.resource_version, timeout_seconds=self.watch_timeout
        ):
            self.apply(event)
            if stop.is_set() or not self._is_leader():
                return

    def apply(self, event: kube.WatchEvent) -> None:
        """Apply one watch event to the mirror."""
        meta = event.object.get("metadata") or {}
        version = meta.get("resourceVersion")
        namespace = str(meta.get("namespace") or "")
        if self.namespace and namespace != self.namespace and event.type != "BOOKMARK":
            log.warning("watch %s: ignored an event from namespace %r", self.path, namespace)
        elif event.type in ("ADDED", "MODIFIED"):
            self._objects[(namespace, str(meta.get("name") or ""))] = strip_analysis(event.object)
            try:
                # Most events are our own status writes, mirrored by the worker that wrote them:
                # skipped on one narrow read, without parsing the spec.
                if not mirror.watch_can_skip(event.object):
                    mirror.upsert_from_resource(event.object, now=self._now())
            except mirror.UNMIRRORABLE as exc:
                log.warning(
                    "watch %s: skipped %s/%s: %s", self.path, namespace, meta.get("name"), exc
                )
        elif event.type == "DELETED":
            self._objects.pop((namespace, str(meta.get("name") or "")), None)
            mirror.mark_deleted(
                namespace,
                str(meta.get("name") or ""),
                str(meta.get("uid") or ""),
                now=self._now(),
            )
        if version:
            self.resource_version = str(version)
        self.events += 1

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set, while this replica leads."""
        attempt = 0
        while not stop.is_set():
            if not self._is_leader():
                # A follower's mirror is kept by the leader; start afresh when leading.
                self.resource_version = ""
                self.live, self._objects = False, {}
                stop.wait(0.5)
                continue
            try:
                if not self.resource_version:
                    self.relist()
                self.watch_once(stop)
                attempt = 0
            except kube.Gone:
                self.live = False
                log.info(
                    "watch %s: resourceVersion %s is gone; relisting",
                    self.path,
                    self.resource_version,
                )
                self.resource_version = ""
            except kube.KubeError as exc:
                # Events may be missed until the watch resumes: no analysis is handed out
                # from memory meanwhile.
                self.live = False
                attempt += 1
                delay = backoff.next_delay(attempt, _ERROR_INTERVAL, self._rng)
                level = logging.ERROR if isinstance(exc, kube.Forbidden) else logging.WARNING
                log.log(level, "watch %s: %s; retrying in %.1f s", self.path, exc, delay)
                stop.wait(delay)
            except Exception:
                self.live = False
                attempt += 1
                log.exception("watch %s: unexpected error; relisting", self.path)
                self.resource_version = ""
                close_old_connections()
                stop.wait(backoff.next_delay(attempt, _ERROR_INTERVAL, self._rng))
