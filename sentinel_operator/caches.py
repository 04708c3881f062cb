"""The operator's caches of the targets, their ReplicaSets and ControllerRevisions, and the
templates the analyses name.

``Caches`` runs one ``sentinel_cluster.informer.Informer`` per kind and watched scope (every
namespace, or each of ``SENTINEL_NAMESPACES``), in threads of the operator's main process,
active while this replica leads, like the analysis watch. The evaluations run in django-q2
worker processes, which share none of that memory: so the dispatcher asks ``snapshot`` for
each analysis it queues and the task carries the stripped objects (signed with
``SENTINEL_TASK_KEY``, like every task), and a worker makes no GET for what it carries
(docs/architecture.md#reads-from-caches). What a cache does not hold, or holds while it is not
live, is left out, and the worker reads it from the API server as before; a template an
analysis names that its live cache does not hold is carried as None, and the worker confirms
it with a GET (docs/templates.md#how-the-operator-reads-templates).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sentinel_cluster import kube
from sentinel_cluster.informer import (
    CachedTemplate,
    Informer,
    Snapshot,
    Transform,
    strip_replicaset,
    strip_revision,
    strip_template,
    strip_workload,
)
from sentinel_core.kinds import DEPLOYMENT, KINDS, PLURALS
from sentinel_core.templates import TemplateError, template_refs

# The analysis as the watch last saw it, or None.
AnalysisLookup = Callable[[str, str], Mapping[str, Any] | None]

_REPLICASETS = "replicasets"
_REVISIONS = "controllerrevisions"
_TEMPLATES = "rolloutanalysistemplates"
_CLUSTER_TEMPLATES = "clusterrolloutanalysistemplates"
_GROUPS = {_TEMPLATES: f"{kube.GROUP}/{kube.VERSION}"}


def _collection(resource: str, namespace: str | None) -> str:
    group = _GROUPS.get(resource, "apps/v1")
    if namespace:
        return f"/apis/{group}/namespaces/{namespace}/{resource}"
    return f"/apis/{group}/{resource}"


class Caches:
    """Informers of the three target kinds, ReplicaSets, ControllerRevisions and both template
    kinds (the cluster-scoped one cluster-wide whatever the scope)."""

    def __init__(
        self,
        client: kube.KubeClient,
        *,
        namespaces: Sequence[str],
        analysis: AnalysisLookup,
        watch_timeout: int = 60,
    ) -> None:
        self._analysis = analysis
        kinds: list[tuple[str, Transform]] = [(PLURALS[kind], strip_workload) for kind in KINDS]
        kinds += [(_REPLICASETS, strip_replicaset), (_REVISIONS, strip_revision)]
        kinds += [(_TEMPLATES, strip_template)]
        # resource -> namespace ("" for all) -> informer
        self.informers: dict[str, dict[str, Informer]] = {
            resource: {
                namespace or "": Informer(
                    client,
                    _collection(resource, namespace),
                    transform=transform,
                    watch_timeout=watch_timeout,
                )
                for namespace in (tuple(namespaces) or (None,))
            }
            for resource, transform in kinds
        }
        self.informers[_CLUSTER_TEMPLATES] = {
            "": Informer(
                client,
                f"/apis/{kube.GROUP}/{kube.VERSION}/{_CLUSTER_TEMPLATES}",
                transform=strip_template,
                watch_timeout=watch_timeout,
            )
        }

    def all(self) -> list[Informer]:
        return [informer for scopes in self.informers.values() for informer in scopes.values()]

    def live(self) -> bool:
        return all(informer.live for informer in self.all())

    def _informer(self, resource: str, namespace: str) -> Informer | None:
        scopes = self.informers[resource]
        # Not ``or``: an empty informer is falsy (``__len__``).
        found = scopes[namespace] if namespace in scopes else scopes.get("")
        return found if found is not None and found.live else None

    def snapshot(self, namespace: str, name: str, uid: str) -> Snapshot | None:
        """Return what the caches hold for the evaluation of ``namespace/name`` (incarnation
        ``uid``); None when the analysis is not cached as that incarnation."""
        analysis = self._analysis(namespace, name)
        if analysis is None or (analysis.get("metadata") or {}).get("uid") != uid:
            return None
        snapshot: Snapshot = {"analysis": dict(analysis)}
        spec = analysis.get("spec") or {}
        if isinstance(spec, Mapping) and (spec.get("templates") or spec.get("args")):
            templates = self._templates(namespace, spec)
            if templates is not None:
                snapshot["templates"] = templates
        target = spec.get("target") if isinstance(spec, Mapping) else None
        if not isinstance(target, Mapping):
            return snapshot
        kind, target_name = target.get("kind", DEPLOYMENT), target.get("name")
        if kind not in PLURALS or not isinstance(target_name, str):
            return snapshot
        informer = self._informer(PLURALS[kind], namespace)
        workload = informer.get(namespace, target_name) if informer is not None else None
        snapshot["kind"], snapshot["name"] = kind, target_name
        if workload is None:
            return snapshot
        snapshot["target"] = workload
        owned = self._informer(_REPLICASETS if kind == DEPLOYMENT else _REVISIONS, namespace)
        if owned is not None:
            snapshot["owned"] = owned.owned_by(str((workload.get("metadata") or {}).get("uid")))
        return snapshot

    def _templates(self, namespace: str, spec: Mapping[str, Any]) -> list[CachedTemplate] | None:
        """Return each template ``spec`` names as its cache holds it; None when one of the
        template caches is not live, or the names cannot be read (the worker reports that)."""
        try:
            refs = template_refs(spec)
        except TemplateError:
            return None
        found: list[CachedTemplate] = []
        for ref in refs:
            informer = self._informer(
                _CLUSTER_TEMPLATES if ref.cluster_scope else _TEMPLATES, namespace
            )
            if informer is None:
                return None
            template = informer.get("" if ref.cluster_scope else namespace, ref.name)
            found.append(
                {"name": ref.name, "clusterScope": ref.cluster_scope, "template": template}
            )
        return found

    def start(self, stop: threading.Event, active: Callable[[], bool]) -> list[threading.Thread]:
        """Start each informer in a daemon thread of its own; return the threads."""
        threads = []
        for informer in self.all():
            thread = threading.Thread(
                target=informer.run,
                args=(stop,),
                kwargs={"active": active},
                name=f"cache {informer.path}",
                daemon=True,
            )
            thread.start()
            threads.append(thread)
        return threads
