"""Shared list-and-watch caches of the objects an evaluation reads (docs/performance.md).

``ListWatch`` is client-go's reflector loop, shared by these caches and the operator's watch of
RolloutAnalyses (``sentinel_operator.watch``): a list, then a watch from the list's
resourceVersion; a watch that ends resumes from the last version seen, 410 Gone relists, any
other API error backs off and resumes, anything unexpected is logged and relists; only while
``active()`` (this replica leads), everything forgotten otherwise.

An ``Informer`` keeps one collection (a kind, in one namespace or all) in memory, as
client-go's shared informers do, on that loop. Each object is stored through a transform that
keeps only what the operator reads (``strip_workload``, ``strip_replicaset``,
``strip_revision``, ``strip_analysis``, ``strip_template``), so the memory of many objects no
analysis targets stays small. ``get`` and ``owned_by`` answer from memory, never from the API
server, and only while ``live``.

A cluster that serves no such collection (one without the template CRDs) answers the list with
404: the cache is live and empty, one line is logged, and the list is tried again after
``ABSENT_RETRY`` seconds.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from sentinel_cluster import kube
from sentinel_core import backoff
from sentinel_core.workload_kinds import TEMPLATE_HASH, replicaset_template_hash, template_hash

log = logging.getLogger(__name__)

Transform = Callable[[Mapping[str, Any]], dict[str, Any]]
Key = tuple[str, str]

# Server-side watch timeout: short enough that a replica losing the lease stops soon, as the
# loop looks at ``active()`` only between events.
WATCH_TIMEOUT_SECONDS = 60
# Objects per list page: the most whole objects a relist holds at once. Not client-go's 500:
# Python's allocator keeps a decoded page's memory wherever a kept (stripped) object landed
# among it, so about a page stays resident per listing thread; 100 takes five times the list
# requests, made only when a cache (re)lists (docs/performance.md#reads-from-caches).
LIST_PAGE = 100
# A collection the cluster does not serve is asked for again this often.
ABSENT_RETRY = 60.0
# Backoff base for API errors; with backoff.next_delay: 1 s, 2 s, ... capped at 60 s.
_ERROR_INTERVAL = 1.0
# Written by kubectl apply: a whole copy of the object as applied, pod template included.
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# The labels and annotations the readers of a ReplicaSet or ControllerRevision look at.
_REVISION_LABELS = ("pod-template-hash", "controller-revision-hash")
_REVISION_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
)


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and _LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
    return meta


def strip_analysis(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a RolloutAnalysis without its ``managedFields`` (spec and status are read)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def strip_template(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a RolloutAnalysisTemplate or ClusterRolloutAnalysisTemplate as the reconciler
    reads it: its name, ``generation`` and spec."""
    meta = obj.get("metadata") or {}
    return {
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "generation", "resourceVersion")
            if key in meta
        },
        "spec": obj.get("spec") or {},
    }


def strip_workload(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a Deployment, StatefulSet or DaemonSet as the reconciler reads it.

    The pod template (most of the object) is replaced by its hash (``TEMPLATE_HASH``, what a
    Deployment's rollout is told by); ``managedFields`` and kubectl's last-applied copy go.
    Selector, strategy, ``paused``, the pause record's annotations and the status stay.
    """
    spec = dict(obj.get("spec") or {})
    hashed = template_hash(spec.pop("template", None) or {})
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": _metadata(obj),
        "spec": spec,
        "status": obj.get("status") or {},
        TEMPLATE_HASH: hashed,
    }


def _revision_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
        "creationTimestamp": meta.get("creationTimestamp"),
        "labels": {k: labels[k] for k in _REVISION_LABELS if k in labels},
        "annotations": {k: annotations[k] for k in _REVISION_ANNOTATIONS if k in annotations},
        "ownerReferences": [
            {"uid": ref.get("uid"), "kind": ref.get("kind"), "name": ref.get("name")}
            for ref in meta.get("ownerReferences") or ()
            if isinstance(ref, Mapping)
        ],
    }


def strip_replicaset(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ReplicaSet as ``sentinel_cluster.replicasets`` reads it: its hashes, replicas,
    revision, owner and creation time."""
    return {
        "metadata": _revision_metadata(obj),
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
        TEMPLATE_HASH: replicaset_template_hash(obj),
    }


def strip_revision(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ControllerRevision without its ``data`` (the whole pod template)."""
    return {"metadata": _revision_metadata(obj), "revision": obj.get("revision")}


class ListWatch:
    """List a collection, then watch it from the list's resourceVersion, until stopped.

    A subclass says what a list and an event do (``relist``, ``apply``) and what is forgotten
    when this replica stops leading (``clear``); the loop (``run``) is the same for all. Its
    readers answer from memory only while ``live``: after a list, and not between a watch's
    failure and its resumption, when events may have been missed.
    """

    # How the logs name it: "cache" (an Informer) or "watch" (the analyses' mirror).
    role = "cache"

    def __init__(
        self,
        client: kube.KubeClient,
        path: str,
        *,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.watch_timeout = watch_timeout
        self._rng = rng or random.Random()
        self.resource_version = ""
        # Whether the cluster serves the collection (a 404 list: ``relist`` says).
        self.served = True
        self._live = False
        # Counts for tests and logs: how often the collection was listed and events applied.
        self.lists = 0
        self.events = 0

    @property
    def live(self) -> bool:
        """Whether the collection is listed and its watch has not failed since: only then is
        it answered from."""
        return self._live

    def relist(self) -> object:
        """List the collection, replace what is kept and remember the list's resourceVersion."""
        raise NotImplementedError

    def apply(self, event: kube.WatchEvent) -> None:
        """Apply one watch event."""
        raise NotImplementedError

    def _listed(self, version: str) -> None:
        """Record a list that ``relist`` kept: watched from ``version`` on, answered from."""
        self.resource_version = version
        self._live = True
        self.lists += 1

    def clear(self) -> None:
        """Forget the collection (this replica stopped leading): listed afresh when it leads."""
        self._live = False
        self.resource_version = ""

    def after_unexpected_error(self) -> None:
        """Called after an unexpected error, before the loop waits and relists."""

    def watch_once(self, stop: threading.Event, active: Callable[[], bool] = lambda: True) -> None:
        """Apply events from ``resource_version`` until the watch ends, ``stop`` is set or
        ``active()`` is no longer true."""
        # Resumed where it stopped: what it missed comes as events (or as 410 Gone).
        self._live = True
        for event in self.client.watch(
            self.path, resource_version=self.resource_version, timeout_seconds=self.watch_timeout
        ):
            self.apply(event)
            if stop.is_set() or not active():
                return

    def run(self, stop: threading.Event, *, active: Callable[[], bool] = lambda: True) -> None:
        """List and watch until ``stop`` is set, while ``active()`` (this replica leads)."""
        attempt = 0
        while not stop.is_set():
            if not active():
                self.clear()
                stop.wait(0.5)
                continue
            try:
                if not self.resource_version:
                    self._live = False
                    self.relist()
                if not self.served:
                    stop.wait(ABSENT_RETRY)
                    self.resource_version = ""
                    continue
                self.watch_once(stop, active)
                attempt = 0
            except kube.Gone:
                log.info(
                    "%s %s: resourceVersion %s is gone; relisting",
                    self.role,
                    self.path,
                    self.resource_version,
                )
                self._live = False
                self.resource_version = ""
            except kube.KubeError as exc:
                # Events may be missed until the watch resumes: nothing is answered from
                # memory meanwhile.
                self._live = False
                attempt += 1
                delay = backoff.next_delay(attempt, _ERROR_INTERVAL, self._rng)
                level = logging.ERROR if isinstance(exc, kube.Forbidden) else logging.WARNING
                log.log(level, "%s %s: %s; retrying in %.1f s", self.role, self.path, exc, delay)
                stop.wait(delay)
            except Exception:
                self._live = False
                self.resource_version = ""
                attempt += 1
                log.exception("%s %s: unexpected error; relisting", self.role, self.path)
                self.after_unexpected_error()
                stop.wait(backoff.next_delay(attempt, _ERROR_INTERVAL, self._rng))


class Informer(ListWatch):
    """One collection, listed and watched into memory."""

    def __init__(
        self,
        client: kube.KubeClient,
        path: str,
        *,
        transform: Transform,
        watch_timeout: int = WATCH_TIMEOUT_SECONDS,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(client, path, watch_timeout=watch_timeout, rng=rng)
        self.transform = transform
        self._lock = threading.Lock()
        self._items: dict[Key, dict[str, Any]] = {}
        # Owner uid -> the keys of the objects it owns (ReplicaSets, ControllerRevisions).
        self._owned: dict[str, set[Key]] = {}

    # -- reads -----------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get((namespace, name))

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        """Return the objects whose ``ownerReferences`` name ``uid``."""
        with self._lock:
            return [self._items[key] for key in self._owned.get(uid, ()) if key in self._items]

    def __len__(self) -> int:
        return len(self._items)

    # -- writes ----------------------------------------------------------------------------

    def relist(self) -> None:
        stored: dict[Key, dict[str, Any]] = {}
        try:
            version = self._list_into(stored)
            self.served = True
        except kube.NotFound:
            stored, version = {}, ""
            if self.served:
                # Once, not at every retry: a cluster without the template CRDs is normal.
                log.info(
                    "cache %s: not served by this cluster (404); empty, asked again every %.0f s",
                    self.path,
                    ABSENT_RETRY,
                )
            self.served = False
        owned: dict[str, set[Key]] = {}
        for key, item in stored.items():
            for uid in _owners(item):
                owned.setdefault(uid, set()).add(key)
        with self._lock:
            self._items, self._owned = stored, owned
        self._listed(version)
        if self.served:
            log.info("cache %s: listed %d at %s", self.path, len(stored), version)

    def _list_into(self, stored: dict[Key, dict[str, Any]]) -> str:
        """List the collection page by page into ``stored``, transformed; return its version.

        Each page is transformed before the next is asked for: only one page of whole objects
        is ever held (docs/performance.md#reads-from-caches).
        """
        token: str | None = None
        while True:
            answer = self.client.request(
                "GET", self.path, query={"limit": LIST_PAGE, "continue": token}
            )
            for item in answer.get("items") or ():
                stored[_key(item)] = self.transform(item)
            meta = answer.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return str(meta.get("resourceVersion") or "")

    def apply(self, event: kube.WatchEvent) -> None:
        version = (event.object.get("metadata") or {}).get("resourceVersion")
        if event.type in ("ADDED", "MODIFIED", "DELETED"):
            key = _key(event.object)
            with self._lock:
                old = self._items.pop(key, None)
                if old is not None:
                    for uid in _owners(old):
                        self._owned.get(uid, set()).discard(key)
                if event.type != "DELETED":
                    item = self.transform(event.object)
                    self._items[key] = item
                    for uid in _owners(item):
                        self._owned.setdefault(uid, set()).add(key)
        if version:
            self.resource_version = str(version)
        self.events += 1

    def clear(self) -> None:
        with self._lock:
            self._items, self._owned = {}, {}
        super().clear()


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _owners(obj: Mapping[str, Any]) -> list[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return [str(ref["uid"]) for ref in refs if isinstance(ref, Mapping) and ref.get("uid")]


class CachedTemplate(TypedDict):
    """One template an analysis names and what its cache held (None: not there)."""

    name: str
    # The spec's own key.
    clusterScope: bool
    template: dict[str, Any] | None


class Snapshot(TypedDict, total=False):
    """What the dispatcher hands a worker from the caches for one evaluation (all optional).

    ``analysis``: the analysis as the watch last saw it; ``kind`` and ``name``: the target it
    named then; ``target``: that target from its cache (absent: not cached, read it);
    ``owned``: its ReplicaSets (a Deployment) or ControllerRevisions (the other kinds);
    ``templates``: each template the analysis names, as its cache held it (absent: a template
    cache was not live, read them all).
    """

    analysis: dict[str, Any]
    kind: str
    name: str
    target: dict[str, Any]
    owned: list[dict[str, Any]]
    templates: list[CachedTemplate]
