"""Keep the database mirror current from a watch on RolloutAnalyses (docs/operator.md).

``AnalysisWatch.run`` (one thread per watched scope, started by ``runtime`` and active only
while this replica leads) lists RolloutAnalyses (all namespaces, or one namespace of
``SENTINEL_NAMESPACES``), repairs the mirror with ``analyses.mirror.sync_all``, then watches
from the list's resourceVersion:

- ADDED / MODIFIED: ``upsert_from_resource``; a new resource or a new ``generation`` becomes
  due at once, so the dispatcher evaluates it within a second and the first status follows.
  An event that only adds a new evaluation (the operator's own status write) is left to the
  worker that wrote it, which mirrors it in the same transaction as its history row: told from
  the watch's last copy of the object (``mirror.adds_an_evaluation``), else by one narrow read
  (``mirror.watch_can_skip``).
- DELETED: ``mark_deleted``, which drops the analysis from the dispatch queue at once.
- BOOKMARK: only moves the resourceVersion on.
- An object the mirror cannot hold (``mirror.UNMIRRORABLE``) or outside the watched namespace is
  logged and skipped; relisting would not change it, and would only repeat.
- A watch that ends (server timeout) resumes from the last resourceVersion seen; 410 Gone
  relists; any other API error backs off (``backoff.next_delay``) and resumes: the loop of
  ``sentinel_cluster.informer.ListWatch``, which the operator's caches run too.

It also keeps the last copy of each analysis it saw, without ``managedFields``
(``cached``): the dispatcher hands it to the worker, which then makes no GET for it
(docs/performance.md, "Reads from caches"). Only while the watch runs: from the first list
until an error, and again after the next list.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import datetime

from django.db import close_old_connections

from analyses import mirror
from sentinel_cluster import kube
from sentinel_cluster.informer import WATCH_TIMEOUT_SECONDS, ListWatch, strip_analysis

log = logging.getLogger(__name__)


class AnalysisWatch(ListWatch):
    """List and watch the RolloutAnalyses of one scope into the mirror."""

    role = "watch"

    def __init__(
        self,
        client: kube.KubeClient,
        *,
        namespace: str | None,
        now: Callable[[], datetime],
        rng: random.Random | None = None,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        super().__init__(
            client, kube.analyses_path(namespace), watch_timeout=watch_timeout, rng=rng
        )
        self.namespace = namespace
        self._now = now
        # (namespace, name) -> the analysis as last seen; answered from only while ``live``.
        self._objects: dict[tuple[str, str], dict[str, object]] = {}

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
        self._listed(version)
        log.info("watch %s: listed %d analyses at %s: %s", self.path, len(items), version, result)
        return result

    def apply(self, event: kube.WatchEvent) -> None:
        """Apply one watch event to the mirror."""
        meta = event.object.get("metadata") or {}
        version = meta.get("resourceVersion")
        namespace = str(meta.get("namespace") or "")
        if self.namespace and namespace != self.namespace and event.type != "BOOKMARK":
            log.warning("watch %s: ignored an event from namespace %r", self.path, namespace)
        elif event.type in ("ADDED", "MODIFIED"):
            key = (namespace, str(meta.get("name") or ""))
            previous, self._objects[key] = self._objects.get(key), strip_analysis(event.object)
            try:
                # Most events are our own status writes, mirrored by the worker that wrote them:
                # told from the last copy, else skipped on one narrow read, the spec unparsed.
                if not (
                    mirror.adds_an_evaluation(previous, self._objects[key])
                    or mirror.watch_can_skip(event.object)
                ):
                    mirror.upsert_from_resource(event.object, now=self._now())
            except mirror.UNMIRRORABLE as exc:
                # Not mirrored, so no copy to tell the next event from: it is judged afresh.
                self._objects.pop(key, None)
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

    def clear(self) -> None:
        # A follower's mirror is kept by the leader; start afresh when leading.
        self._objects = {}
        super().clear()

    def after_unexpected_error(self) -> None:
        # A database error may have left this thread's connection unusable.
        close_old_connections()
