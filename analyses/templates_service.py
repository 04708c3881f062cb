"""Read and write analysis templates in the cluster (docs/api.md#templates).

Templates have no mirror: they are few, and every read and write goes to the Kubernetes API
server, so what the REST API answers is what the operator reads. The errors are
``analyses.services``' own, so the REST API answers them as it answers an analysis's write:
409 for a stale ``resourceVersion`` (or a name taken), 400 with the API server's field paths,
503 when the cluster cannot be reached, 502 when it refuses the web app's own credentials.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from analyses.services import (
    ClusterRefused,
    ResourceConflict,
    ResourceRejected,
    kube_client,
    translated,
)
from sentinel_cluster import kube

_BASE = f"/apis/{kube.GROUP}/{kube.VERSION}"


@dataclass(frozen=True)
class Kind:
    """One of the two template kinds: its name and where its resources live."""

    name: str
    plural: str
    namespaced: bool

    def collection(self, namespace: str | None) -> str:
        """Return the collection's path; a namespaced kind's with ``namespace`` None: every
        namespace's (the admin's list without ``SENTINEL_NAMESPACES``)."""
        if self.namespaced and namespace is not None:
            return f"{_BASE}/namespaces/{quote(namespace or '')}/{self.plural}"
        return f"{_BASE}/{self.plural}"

    def path(self, namespace: str | None, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name)}"

    def key(self, namespace: str | None, name: str) -> str:
        """Name one template as the messages do: ``RolloutAnalysisTemplate shop/latency``."""
        return f"{self.name} {namespace}/{name}" if self.namespaced else f"{self.name} {name}"


NAMESPACED = Kind("RolloutAnalysisTemplate", "rolloutanalysistemplates", namespaced=True)
CLUSTER = Kind(
    "ClusterRolloutAnalysisTemplate", "clusterrolloutanalysistemplates", namespaced=False
)


class TemplateNotFound(Exception):
    """No such template in the cluster (a 404 of the REST API)."""


def list_templates(kind: Kind, namespace: str | None = None) -> list[dict[str, Any]]:
    """Return the templates of ``kind`` (in ``namespace`` when namespaced), ordered by name."""
    client = kube_client()
    with _translated(kind, namespace, "*"):
        items, _ = client.list_all(kind.collection(namespace))
    return sorted(items, key=lambda item: str((item.get("metadata") or {}).get("name") or ""))


def get_template(kind: Kind, namespace: str | None, name: str) -> dict[str, Any]:
    """Return one template; raise ``TemplateNotFound`` when there is none."""
    client = kube_client()
    with _translated(kind, namespace, name):
        try:
            return client.request("GET", kind.path(namespace, name))
        except kube.NotFound as exc:
            raise TemplateNotFound(f"No {kind.key(namespace, name)}.") from exc


def create_template(
    kind: Kind, namespace: str | None, name: str, spec: Mapping[str, Any]
) -> dict[str, Any]:
    """Create the template; the API server validates it (its CRD's schema and CEL rules)."""
    client = kube_client()
    metadata = {"name": name, **({"namespace": namespace} if kind.namespaced else {})}
    body = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": kind.name,
        "metadata": metadata,
        "spec": dict(spec),
    }
    with _translated(kind, namespace, name):
        try:
            return client.request("POST", kind.collection(namespace), body=body)
        except kube.Conflict as exc:
            raise ResourceConflict(
                f"A {kind.key(namespace, name)} already exists in the cluster."
            ) from exc
        except kube.NotFound as exc:
            # The only thing a create can miss is its namespace.
            raise ResourceRejected(
                f"Namespace {namespace} does not exist in the cluster.",
                {"namespace": [f"namespace {namespace!r} does not exist in the cluster"]},
            ) from exc


def replace_template(
    kind: Kind,
    namespace: str | None,
    name: str,
    spec: Mapping[str, Any],
    *,
    resource_version: str | None,
) -> dict[str, Any]:
    """Replace the spec if the template is still at ``resource_version`` (when given).

    A PUT of the whole object, so no field of the old spec survives; labels and annotations
    are kept as read. Without ``resource_version`` the write applies to the version just read
    (last writer wins, as ``kubectl replace`` after a ``get``).
    """
    current = get_template(kind, namespace, name)
    metadata = dict(current.get("metadata") or {})
    version = resource_version or str(metadata.get("resourceVersion") or "")
    metadata["resourceVersion"] = version
    body = {**current, "metadata": metadata, "spec": dict(spec)}
    client = kube_client()
    with _translated(kind, namespace, name):
        try:
            return client.request("PUT", kind.path(namespace, name), body=body)
        except (kube.Conflict, kube.NotFound) as exc:
            raise _changed(kind, namespace, name, version, exc) from exc


def delete_template(
    kind: Kind, namespace: str | None, name: str, *, resource_version: str | None
) -> None:
    """Delete the template, only if it is still at ``resource_version`` when one is given."""
    client = kube_client()
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if resource_version:
        options["preconditions"] = {"resourceVersion": resource_version}
    with _translated(kind, namespace, name):
        try:
            client.request("DELETE", kind.path(namespace, name), body=options)
        except kube.NotFound as exc:
            raise TemplateNotFound(f"No {kind.key(namespace, name)}.") from exc
        except kube.Conflict as exc:
            raise _changed(kind, namespace, name, resource_version or "", exc) from exc


def _changed(
    kind: Kind, namespace: str | None, name: str, version: str, exc: kube.KubeError
) -> ResourceConflict:
    what = kind.key(namespace, name)
    if isinstance(exc, kube.NotFound):
        return ResourceConflict(f"The {what} was deleted in the cluster.")
    return ResourceConflict(
        f"The {what} changed in the cluster since resourceVersion {version}; reload it and "
        "apply your change again."
    )


@contextlib.contextmanager
def _translated(kind: Kind, namespace: str | None, name: str) -> Iterator[None]:
    """The analyses' translation of the client's errors, and one answer of the templates' own."""
    with translated(f"the {kind.key(namespace, name)}"):
        try:
            yield
        except kube.NotFound as exc:
            # A collection the cluster does not serve: the template CRDs are not installed.
            raise ClusterRefused(
                f"The cluster does not serve {kind.plural} ({exc}); "
                "are the template CRDs installed?"
            ) from exc
