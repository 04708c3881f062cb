"""The API verbs over the store: get, list, create, update, patch, delete, deletecollection,
plus the subresources (status, scale, serviceaccounts/token) and the review kinds.

server.py routes each request to one ``Cluster`` method; every method returns a
``Result`` or raises ``status.ApiError``.
"""

from __future__ import annotations

import copy
import json
import secrets
import string
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from devcluster import builtins, listing, patching, timestamps
from devcluster.admission import Cause, admit
from devcluster.auth import API_AUDIENCES
from devcluster.deletion import DeletionMixin
from devcluster.resources import Registry, ResourceType, types_from_crd
from devcluster.results import Result, dry_run, timestamp
from devcluster.status import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from devcluster.store import Store

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Cluster(DeletionMixin):
    """Object semantics of the API server, independent of HTTP."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        issue_token: Callable[..., tuple[str, datetime]],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_uid: Callable[[], str] = lambda: str(uuid.uuid4()),
        name_suffix: Callable[[], str] = lambda: "".join(
            secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5)
        ),
    ) -> None:
        self.store = store
        self.registry = registry
        self._issue_token = issue_token
        self._clock = clock
        self._new_uid = new_uid
        self._name_suffix = name_suffix

    # -- start-up ----------------------------------------------------------------------------

    def bootstrap(self) -> None:
        """Create the default namespaces and serve the CRDs already stored."""
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None
        for name in DEFAULT_NAMESPACES:
            if self.store.get(namespaces.storage_key, "", name) is None:
                self.create(namespaces, "", {"metadata": {"name": name}}, {})
        crds = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crds is not None
        for crd in self.store.list(crds.storage_key, None)[0]:
            self.registry.set_crd(crd["metadata"]["name"], types_from_crd(crd))

    def now(self) -> str:
        """Return the current time as the API server prints it."""
        return timestamp(self._clock())

    # -- reads ---------------------------------------------------------------------------------

    def _stored(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rtype.storage_key, namespace, name)
        if obj is None:
            raise not_found(rtype.plural, rtype.group, name)
        return obj

    def present(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Return a stored object in the shape of ``rtype`` (Event conversion)."""
        if rtype.kind == "Event":
            return builtins.convert_event(obj, rtype.group)
        if rtype.custom:
            # CRD versions share storage with conversion strategy None: only apiVersion differs.
            obj["apiVersion"] = rtype.group_version
        return obj

    def get(self, rtype: ResourceType, namespace: str, name: str, subresource: str) -> Result:
        """Answer GET of one object or its status/scale subresource."""
        obj = self._stored(rtype, namespace, name)
        if subresource == "scale":
            return Result(200, builtins.scale_of(obj))
        return Result(200, self.present(rtype, obj))

    def list(self, rtype: ResourceType, namespace: str | None, query: Mapping[str, str]) -> Result:
        """Answer a list with selectors and limit/continue."""
        items, rv = self.store.list(rtype.storage_key, namespace)
        items = [self.present(rtype, item) for item in items]
        if not rtype.custom:
            # A built-in kind's list is a typed list: its items carry no kind or apiVersion.
            items = [
                {key: value for key, value in item.items() if key not in ("kind", "apiVersion")}
                for item in items
            ]
        return Result(200, listing.list_body(rtype, items, rv, query))

    # -- create ----------------------------------------------------------------------------------

    def _require_namespace(self, rtype: ResourceType, namespace: str, name: str) -> None:
        if not rtype.namespaced:
            return
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None
        ns = self.store.get(namespaces.storage_key, "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                f'{rtype.plural} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated",
            )

    def create(
        self, rtype: ResourceType, namespace: str, body: Any, query: Mapping[str, str]
    ) -> Result:
        """Answer POST to a collection."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        if rtype.kind == "Event" and rtype.group:
            body = builtins.convert_event({**body, "apiVersion": "events.k8s.io/v1"}, "")
            stored_type = self.registry.lookup("", "v1", "events")
            assert stored_type is not None
            result = self.create(stored_type, namespace, body, query)
            return Result(result.code, self.present(rtype, dict(result.body)), result.warnings)
        metadata = body.setdefault("metadata", {}) if isinstance(body.get("metadata"), dict) else {}
        body_ns = metadata.get("namespace")
        if rtype.namespaced and body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = metadata["generateName"] + self._name_suffix()
        admitted = admit(rtype, body, None, field_validation=_validation(query))
        obj = admitted.obj
        meta = obj["metadata"]
        if rtype.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = self._new_uid()
        meta["creationTimestamp"] = self.now()
        meta.pop("resourceVersion", None)
        self._before_write(rtype, obj)
        with self.store.lock:
            self._require_namespace(rtype, namespace, meta["name"])
            if self.store.get(rtype.storage_key, meta.get("namespace", ""), meta["name"]):
                raise already_exists(rtype.plural, rtype.group, meta["name"])
            if dry_run(query):
                return Result(201, obj, admitted.warnings)
            stored = self.store.commit(rtype.storage_key, obj, "ADDED")
            self._after_write(rtype, stored)
        return Result(201, stored, admitted.warnings)

    # -- update / patch ----------------------------------------------------------------------

    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        subresource: str,
        body: Any,
        query: Mapping[str, str],
    ) -> Result:
        """Answer PUT of an object or its status/scale subresource."""
        with self.store.lock:
            old = self._stored(rtype, namespace, name)
            if not isinstance(body, dict):
                raise bad_request("the body of the request was in an unknown format")
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rtype.plural, rtype.group, name)
            body_name = (body.get("metadata") or {}).get("name")
            if body_name and body_name != name:
                raise bad_request(
                    f"the name of the object ({body_name}) does not match the name on "
                    f"the URL ({name})"
                )
            return self._replace(rtype, old, subresource, body, query)

    def _replace(
        self,
        rtype: ResourceType,
        old: dict[str, Any],
        subresource: str,
        body: dict[str, Any],
        query: Mapping[str, str],
        patch: bytes | None = None,
    ) -> Result:
        if subresource == "scale":
            replicas = (body.get("spec") or {}).get("replicas", 0)
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["replicas"] = replicas
            result = self._replace(rtype, old, "", new, query, patch)
            return Result(200, builtins.scale_of(dict(result.body)), result.warnings)
        if rtype.kind == "Event" and rtype.group:
            body = builtins.convert_event({**body, "apiVersion": "events.k8s.io/v1"}, "")
            core = self.registry.lookup("", "v1", "events")
            assert core is not None
            result = self._replace(core, old, subresource, body, query, patch)
            return Result(200, self.present(rtype, dict(result.body)), result.warnings)
        admitted = admit(
            rtype,
            body,
            old,
            subresource=subresource,
            field_validation=_validation(query),
            patch=patch,
        )
        obj = admitted.obj
        if subresource != "status":
            self._before_write(rtype, obj, old)
        elif not rtype.custom and rtype.schema is not None:
            obj.update(timestamps.normalize(rtype.schema, obj))
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if obj == old or dry_run(query):
            return Result(200, self.present(rtype, obj), admitted.warnings)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            removed = self.store.remove(rtype.storage_key, meta.get("namespace", ""), meta["name"])
            assert removed is not None
            self._after_delete(rtype, removed)
            return Result(200, self.present(rtype, {**removed, **obj}), admitted.warnings)
        stored = self.store.commit(rtype.storage_key, obj, "MODIFIED")
        self._after_write(rtype, stored)
        return Result(200, self.present(rtype, stored), admitted.warnings)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        subresource: str,
        raw: bytes,
        content_type: str,
        query: Mapping[str, str],
    ) -> Result:
        """Answer PATCH of an object or its status/scale subresource."""
        with self.store.lock:
            if (
                content_type.startswith(patching.APPLY)
                and not subresource
                and self.store.get(rtype.storage_key, namespace, name) is None
            ):
                # Server-side apply creates what does not exist yet.
                body = patching.apply_patch(rtype, {}, raw, content_type)
                if isinstance(body, dict):
                    body.setdefault("metadata", {})["name"] = name
                return self.create(rtype, namespace, body, query)
            old = self._stored(rtype, namespace, name)
            current = builtins.scale_of(old) if subresource == "scale" else self.present(rtype, old)
            patched = patching.apply_patch(rtype, current, raw, content_type)
            if not isinstance(patched, dict):
                raise bad_request("the patch did not produce an object")
            wanted_rv = (patched.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rtype.plural, rtype.group, name)
            return self._replace(rtype, old, subresource, patched, query, raw)

    # -- side effects ------------------------------------------------------------------------

    def _before_write(
        self, rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None
    ) -> None:
        if not rtype.custom and rtype.schema is not None:
            obj.update(timestamps.normalize(rtype.schema, obj))
        if rtype.kind == "Secret":
            builtins.fold_string_data(obj)
        if rtype.group == "apps" and rtype.kind == "Deployment":
            builtins.default_deployment(obj)
            builtins.simulate_deployment_status(obj, self.now())
        elif rtype.group == "apps" and rtype.kind == "StatefulSet":
            builtins.default_stateful_set(obj)
            builtins.simulate_stateful_set_status(obj, old)
        elif rtype.group == "apps" and rtype.kind == "DaemonSet":
            builtins.default_daemon_set(obj, old)
            builtins.simulate_daemon_set_status(obj, old)
        elif rtype.kind == "CustomResourceDefinition":
            builtins.default_crd(obj)
            builtins.crd_status(obj, self.now())
        elif rtype.kind == "Event":
            # core/v1 eventTime is a MicroTime without omitempty: a zero one is sent as null.
            obj.setdefault("eventTime", None)
        elif rtype.kind == "Namespace":
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj.setdefault("status", {}).setdefault("phase", "Active")
            labels = obj["metadata"].setdefault("labels", {})
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def _after_write(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if rtype.kind == "CustomResourceDefinition":
            self.registry.set_crd(obj["metadata"]["name"], types_from_crd(obj))
        elif rtype.kind == "Namespace" and obj["metadata"].get("resourceVersion"):
            sa_type = self.registry.lookup("", "v1", "serviceaccounts")
            assert sa_type is not None
            name = obj["metadata"]["name"]
            if not obj["metadata"].get("deletionTimestamp") and (
                self.store.get(sa_type.storage_key, name, "default") is None
            ):
                self.create(sa_type, name, {"metadata": {"name": "default"}}, {})

    # -- special subresources and reviews ----------------------------------------------------

    def create_token(
        self, namespace: str, name: str, body: Any, query: Mapping[str, str]
    ) -> Result:
        """Answer POST serviceaccounts/{name}/token (TokenRequest)."""
        sa_type = self.registry.lookup("", "v1", "serviceaccounts")
        assert sa_type is not None
        account = self._stored(sa_type, namespace, name)
        spec = dict((body or {}).get("spec") or {}) if isinstance(body, dict) else {}
        seconds = int(spec.get("expirationSeconds") or 3600)
        if seconds < 600:
            # Validated before the TokenRequest gets a name: the Status names "".
            raise invalid(
                "TokenRequest",
                "authentication.k8s.io",
                "",
                [
                    Cause(
                        "FieldValueInvalid",
                        "spec.expirationSeconds",
                        f"Invalid value: {seconds}: may not specify a duration less than 10 "
                        "minutes",
                    )
                ],
            )
        audiences = list(spec.get("audiences") or API_AUDIENCES)
        token, expires = self._issue_token(
            namespace,
            name,
            account["metadata"]["uid"],
            expiration_seconds=seconds,
            audiences=audiences,
            now=self._clock(),
        )
        return Result(
            201,
            {
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                # The ServiceAccount's uid; created now.
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": account["metadata"]["uid"],
                    "creationTimestamp": self.now(),
                },
                "spec": {
                    **spec,
                    "audiences": audiences,
                    "expirationSeconds": seconds,
                    "boundObjectRef": spec.get("boundObjectRef"),
                },
                "status": {"token": token, "expirationTimestamp": timestamp(expires)},
            },
        )

    def serviceaccount_uid(self, namespace: str, name: str) -> str | None:
        """Return the uid of a ServiceAccount, or None (for auth.Authenticator)."""
        obj = self.store.get("/serviceaccounts", namespace, name)
        return obj["metadata"].get("uid") if obj is not None else None


def _validation(query: Mapping[str, str]) -> str:
    value = query.get("fieldValidation") or "Warn"
    if value not in ("Strict", "Warn", "Ignore"):
        raise bad_request(
            f'fieldValidation "{value}" is invalid: must be one of "Ignore", "Warn", or "Strict"'
        )
    return value


def parse_json(raw: bytes) -> Any:
    """Decode a request body (JSON or YAML) or raise a 400."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        import yaml

        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise bad_request(f"the body of the request was in an unknown format: {exc}") from exc
