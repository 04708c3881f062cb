"""A fresh namespace per test: created before, deleted after, named so it never repeats.

Tests isolate themselves by namespace on a shared cluster (each operator watches only its
test's namespaces, ``SENTINEL_NAMESPACES``). The ``namespace`` fixtures of ``tests/support`` and
the package conftests, and the shared operator's namespace pool, are built on these.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from sentinel_cluster import kube
from testkit.manifests import namespace_manifest


def unique_name(prefix: str) -> str:
    """Return ``prefix-`` and ten random hex digits: a valid, unused namespace name."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_namespace(client: kube.KubeClient, name: str) -> str:
    """Create namespace ``name``; return it."""
    client.request("POST", "/api/v1/namespaces", body=namespace_manifest(name))
    return name


def delete_namespace(client: kube.KubeClient, name: str) -> None:
    """Delete namespace ``name`` without waiting; a namespace already gone is fine."""
    # A test that stopped the cluster took the namespace with it.
    with contextlib.suppress(kube.KubeError):
        client.request("DELETE", f"/api/v1/namespaces/{name}")


@contextlib.contextmanager
def fresh_namespace(client: kube.KubeClient, prefix: str) -> Iterator[str]:
    """Create a uniquely named namespace, yield its name, delete it afterwards."""
    name = create_namespace(client, unique_name(prefix))
    try:
        yield name
    finally:
        delete_namespace(client, name)
