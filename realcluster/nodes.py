"""The simulated nodes of ``python -m realcluster --nodes N``: their manifests and readiness.

``realcluster.__main__`` creates the Nodes once kube-apiserver is ready and kwok runs; kwok
(the ``node-initialize`` and ``node-heartbeat`` stages) makes them Ready and plays the pods
bound to them: Running and Ready at once, with an IP from the Node's ``podCIDR``. Each node
gets a /24 of a loopback /16 (``127.X.i.0/24``), so a process on this machine can listen on
every pod's IP (all of 127.0.0.0/8 reaches the loopback interface on Linux) and a Prometheus
with Kubernetes service discovery scrapes each pod at its own address (docs/realcluster.md,
"Pods on simulated nodes").

The Nodes carry kwok's taint (``kwok.x-k8s.io/node=fake:NoSchedule``): only pods that
tolerate it (and select ``type: kwok``) run there; every other pod stays Pending, as on the
control plane without nodes. The API server puts ``node.kubernetes.io/not-ready:NoSchedule``
on every new Node (``TaintNodesByCondition``) and only the node-lifecycle controller, which
does not run here, would take it off; :func:`ready` removes it once kwok reports the Node
Ready.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from realcluster.client import ApiClient

KWOK_KEY = "kwok.x-k8s.io/node"
KWOK_VALUE = "fake"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
NODE_LABELS = {"type": "kwok"}
NAME_PREFIX = "kwok-node-"
# One /24 per node in the cluster's /16.
MAX_NODES = 256
NODES_PATH = "/api/v1/nodes"


class NodeError(Exception):
    """The API server refused a Node (a bug here, or a foreign object with the same name)."""


def pod_network(port: int) -> ipaddress.IPv4Network:
    """The loopback /16 of the cluster serving on ``port``.

    Derived from the port so that two clusters on one machine (the suite runs several) give
    their pods different addresses, and a restart on the same port gives the same ones.
    """
    return ipaddress.IPv4Network(f"127.{20 + port % 200}.0.0/16")


def node_name(index: int) -> str:
    """The name of the ``index``-th simulated node."""
    return f"{NAME_PREFIX}{index}"


def manifest(index: int, network: ipaddress.IPv4Network) -> dict[str, Any]:
    """The Node object of the ``index``-th simulated node."""
    name = node_name(index)
    cidr = str(list(network.subnets(new_prefix=24))[index])
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "250"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_KEY: KWOK_VALUE, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                **NODE_LABELS,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "spec": {
            "podCIDR": cidr,
            "podCIDRs": [cidr],
            "taints": [{"key": KWOK_KEY, "value": KWOK_VALUE, "effect": "NoSchedule"}],
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def create(client: ApiClient, count: int, network: ipaddress.IPv4Network) -> None:
    """Create the first ``count`` nodes; those already there (a kept data dir) are left alone."""
    for index in range(count):
        code, body = client.request("POST", NODES_PATH, manifest(index, network))
        if code not in (201, 409):
            raise NodeError(f"creating Node {node_name(index)}: HTTP {code} {body[:300]}")


def ready(client: ApiClient, count: int) -> bool:
    """Whether all ``count`` nodes are Ready and schedulable; untaint each Ready one."""
    all_ready = True
    for index in range(count):
        node = client.get_json(f"{NODES_PATH}/{node_name(index)}")
        if node is None or not _condition_true(node, "Ready"):
            all_ready = False
            continue
        taints = node["spec"].get("taints") or []
        kept = [taint for taint in taints if taint.get("key") != NOT_READY_TAINT]
        if len(kept) != len(taints):
            # The resourceVersion makes the patch conditional: if kwok or the API server
            # changed the Node meanwhile, this answers 409 and the next poll tries again.
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": kept},
            }
            code, body = client.request(
                "PATCH",
                f"{NODES_PATH}/{node_name(index)}",
                patch,
                content_type="application/merge-patch+json",
            )
            if code not in (200, 409):
                raise NodeError(f"untainting Node {node_name(index)}: HTTP {code} {body[:300]}")
            all_ready = False
    return all_ready


def _condition_true(node: dict[str, Any], kind: str) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def describe(network: ipaddress.IPv4Network, count: int) -> str:
    """One phrase for the launcher's ready line."""
    return f"{count} kwok node{'s' if count != 1 else ''} (pod IPs in {network})"
