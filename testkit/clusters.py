"""What every cluster launcher offers, and what the kit does with any of them.

``Cluster`` is the surface shared by ``testkit.devcluster.DevCluster`` and the real control plane's
launcher (docs/realcluster.md), so one fixture can be parametrized over both: start/stop/restart,
the admin kubeconfig, the server URL and CA, the admin's bearer token, a ``kubectl`` runner and an
official ``kubernetes`` client. Fault hooks are not part of it: only devcluster has them.

The functions below work on any ``Cluster``: apply the CRD and wait until it is served, apply
objects with kubectl, read one back, give a ``KubeClient``, and issue a ServiceAccount token with
a kubeconfig of its own. Fixtures in ``tests/support`` and the package conftests, ``bench`` and
the demo call them.
"""

from __future__ import annotations

import base64
import contextlib
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import yaml

from sentinel_cluster import kube
from testkit.manifests import PLURAL, to_yaml
from testkit.paths import CRD_PATHS
from testkit.waiting import wait_until

if TYPE_CHECKING:
    import kubernetes.client


class Cluster(Protocol):
    """A Kubernetes API server run by the caller: the launcher surface the fixtures rely on."""

    @property
    def workdir(self) -> Path:
        """The launcher's scratch directory (kubeconfig, CA file, logs, kubectl's cache)."""

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig, written once the server is ready."""

    @property
    def url(self) -> str:
        """The server's https:// URL."""

    @property
    def ca_file(self) -> Path:
        """The CA certificate that verifies the server, as a PEM file."""

    @property
    def admin_token(self) -> str:
        """The admin's bearer token."""

    def start(self, timeout: float = 30) -> None:
        """Start the server and return once it answers."""

    def stop(self) -> None:
        """Stop the server and every process it started."""

    def restart(self) -> None:
        """Stop and start again on the same port (and data, where it keeps any)."""

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        token: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against the server, as admin or as ``token``."""

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """Return an official ``kubernetes`` client, as admin or as ``token``."""


C = TypeVar("C", bound=Cluster)

# ``make(name, crd=False)``: start an empty cluster (the ``new_cluster`` fixture's factory).
NewCluster = Callable[..., Cluster]


def wait_crd_served(cluster: Cluster, timeout: float = 20) -> None:
    """Wait until ``kubectl get rolloutanalyses`` and ``kubectl explain`` (of the analysis and
    of a template) answer.

    The real API server publishes a CRD's OpenAPI (what ``explain`` and client-side
    validation read) a few seconds after it serves the resource, after an apply and again
    after every restart; a cluster handed to a test is one where both answer.
    """
    wait_until(
        lambda: cluster.kubectl("get", PLURAL, "-A", check=False).returncode == 0,
        timeout=timeout,
        what="the CRD is served",
    )
    for explained in ("rolloutanalysis.spec", "clusterrolloutanalysistemplate.spec"):
        wait_until(
            lambda explained=explained: (
                cluster.kubectl("explain", explained, check=False).returncode == 0
            ),
            timeout=timeout,
            what=f"the CRDs' OpenAPI is published (kubectl explain {explained})",
        )


def apply_crd(cluster: Cluster, timeout: float = 20) -> None:
    """Apply the analysis CRD and the two template CRDs with kubectl; wait until all are served."""
    cluster.kubectl("apply", *(f"--filename={path}" for path in CRD_PATHS))
    wait_crd_served(cluster, timeout)


def start_with_crd(cluster: C, timeout: float = 20) -> C:
    """Start ``cluster`` and apply the CRD (stopping it again if that fails); return it."""
    cluster.start()
    try:
        apply_crd(cluster, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def running_with_crd(cluster: C, timeout: float = 20) -> Iterator[C]:
    """Start ``cluster``, apply the CRD, yield it; stop it on the way out."""
    start_with_crd(cluster, timeout)
    try:
        yield cluster
    finally:
        cluster.stop()


def kube_client(cluster: Cluster, **options: Any) -> kube.KubeClient:
    """Return the product's ``KubeClient`` on the cluster's admin kubeconfig."""
    return kube.KubeClient(kube.load_api_client(str(cluster.kubeconfig)), **options)


def kubectl_apply(cluster: Cluster, *objects: Mapping[str, Any]) -> None:
    """Apply ``objects`` with ``kubectl apply -f -``."""
    cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects))


def kubectl_json(cluster: Cluster, *args: str) -> dict[str, Any]:
    """Run ``kubectl get ARGS -o yaml`` and return the object."""
    return dict(yaml.safe_load(cluster.kubectl("get", *args, "-o", "yaml").stdout))


def create_token(cluster: Cluster, name: str, namespace: str) -> str:
    """Return a fresh token of ServiceAccount ``namespace/name`` (``kubectl create token``)."""
    return cluster.kubectl("create", "token", name, "-n", namespace).stdout.strip()


def kubeconfig_for_token(cluster: Cluster, token: str, path: Path) -> Path:
    """Write a kubeconfig with the admin's server and CA but authenticating as ``token``."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "devcluster", "cluster": server}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "devcluster", "user": "sa"}}],
        "current-context": "sa",
    }
    # The CA really is the admin's: kubectl and the Python client verify the server with it.
    assert base64.b64decode(server["certificate-authority-data"]).startswith(b"-----BEGIN")
    path.write_text(yaml.safe_dump(config))
    return path
