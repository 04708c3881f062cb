"""Deletion semantics: finalizers and deletionTimestamp, namespace termination, CRD removal.

Mixed into handlers.Cluster; server.py reaches these through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from devcluster.resources import Registry, ResourceType, types_from_crd
from devcluster.results import Result, dry_run
from devcluster.status import ApiError, details
from devcluster.store import Store

if TYPE_CHECKING:
    from collections.abc import Callable


class DeletionMixin:
    """DELETE of objects and collections for handlers.Cluster."""

    store: Store
    registry: Registry

    if TYPE_CHECKING:
        now: Callable[[], str]
        present: Callable[[ResourceType, dict[str, Any]], dict[str, Any]]
        _stored: Callable[[ResourceType, str, str], dict[str, Any]]
        list: Callable[[ResourceType, str | None, Mapping[str, str]], Result]

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        query: Mapping[str, str],
    ) -> Result:
        """Answer DELETE of one object (finalizers keep it with a deletionTimestamp)."""
        with self.store.lock:
            old = self._stored(rtype, namespace, name)
            preconditions = (
                (body or {}).get("preconditions") or {} if isinstance(body, dict) else {}
            )
            uid, rv = old["metadata"].get("uid", ""), old["metadata"]["resourceVersion"]
            wanted_uid, wanted_rv = preconditions.get("uid"), preconditions.get("resourceVersion")
            if wanted_uid and wanted_uid != uid:
                raise failed_precondition(
                    rtype,
                    name,
                    f"the UID in the precondition ({wanted_uid}) does not match the UID in "
                    f"record ({uid}). The object might have been deleted and then recreated",
                )
            if wanted_rv and wanted_rv != rv:
                raise failed_precondition(
                    rtype,
                    name,
                    f"the ResourceVersion in the precondition ({wanted_rv}) does not match the "
                    f"ResourceVersion in record ({rv}). The object might have been modified",
                )
            meta = old["metadata"]
            if dry_run(query, body):
                return Result(200, self._deleted_body(rtype, old))
            if meta.get("finalizers") or rtype.plural == "namespaces":
                if not meta.get("deletionTimestamp"):
                    meta["deletionTimestamp"] = self.now()
                    if rtype.plural != "namespaces":
                        # The namespace registry sets only the timestamp (and the phase).
                        meta["deletionGracePeriodSeconds"] = 0
                    if "generation" in meta:
                        meta["generation"] = int(meta["generation"]) + 1
                    if rtype.plural == "namespaces":
                        old.setdefault("status", {})["phase"] = "Terminating"
                    old = self.store.commit(rtype.storage_key, old, "MODIFIED")
                if rtype.plural == "namespaces":
                    self._empty_namespace(name)
                    if self.store.get(rtype.storage_key, "", name) is None:
                        return Result(200, self._deleted_body(rtype, old))
                # 200 as on kube-apiserver: it answers 202 only when the client asked for
                # orphanDependents=false, which kubectl and client-go no longer send.
                return Result(200, self.present(rtype, old))
            removed = self.store.remove(rtype.storage_key, namespace, name)
            assert removed is not None
            self._after_delete(rtype, removed)
            return Result(200, self._deleted_body(rtype, removed))

    def _deleted_body(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        # Namespaces and CRDs answer with the object (their registries finalize them); every
        # other kind, custom resources included, with a Success Status once it is gone.
        if rtype.plural in ("namespaces", "customresourcedefinitions"):
            return self.present(rtype, obj)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details(
                name=obj["metadata"]["name"],
                group=rtype.group,
                kind=rtype.plural,
                uid=obj["metadata"].get("uid", ""),
            ),
        }

    def delete_collection(
        self, rtype: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> Result:
        """Answer DELETE of a collection, honouring selectors."""
        with self.store.lock:
            listed = self.list(rtype, namespace, {**query, "limit": "", "continue": ""}).body
            for item in listed["items"]:
                meta = item["metadata"]
                self.delete(rtype, meta.get("namespace", ""), meta["name"], None, query)
            return Result(200, {**listed, "items": listed["items"]})

    def _after_delete(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if rtype.kind == "CustomResourceDefinition":
            crd_types = types_from_crd(obj)
            self.registry.remove_crd(obj["metadata"]["name"])
            for key in {t.storage_key for t in crd_types}:
                for item in self.store.list(key, None)[0]:
                    meta = item["metadata"]
                    self.store.remove(key, meta.get("namespace", ""), meta["name"])
        namespace = obj["metadata"].get("namespace")
        if rtype.namespaced and namespace:
            namespaces = self.registry.lookup("", "v1", "namespaces")
            assert namespaces is not None
            ns = self.store.get(namespaces.storage_key, "", namespace)
            if ns is not None and ns["metadata"].get("deletionTimestamp"):
                self._empty_namespace(namespace)

    def _empty_namespace(self, namespace: str) -> None:
        remaining = 0
        for rtype in self.registry.types:
            if not rtype.namespaced or not rtype.persisted or rtype.group == "events.k8s.io":
                continue
            for item in self.store.list(rtype.storage_key, namespace)[0]:
                meta = item["metadata"]
                if meta.get("finalizers"):
                    remaining += 1
                    if not meta.get("deletionTimestamp"):
                        meta["deletionTimestamp"] = self.now()
                        self.store.commit(rtype.storage_key, item, "MODIFIED")
                else:
                    self.store.remove(rtype.storage_key, namespace, meta["name"])
        if remaining == 0:
            self.store.remove("/namespaces", "", namespace)


def failed_precondition(rtype: ResourceType, name: str, why: str) -> ApiError:
    """The 409 of a failed delete precondition: it names the kind, not the resource."""
    qualified = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
        reason="Conflict",
        details=details(name=name, group=rtype.group, kind=rtype.kind),
    )
