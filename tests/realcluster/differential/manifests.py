"""The objects the differential script writes: every kind the product uses (docs/devcluster.md).

Namespaces are fixed (``diff-a`` for most work, ``diff-b`` for selectors and paging), as each
run starts on a fresh server. The RolloutAnalysis and the Event mirror what the operator
writes (sentinel_cluster.events), the Role what deploy/ grants.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from testkit.pod_server import KWOK_NODE_SELECTOR, KWOK_TOLERATION

REPO_ROOT = Path(__file__).resolve().parents[3]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"
GROUP = "sentinel.example.com"
RA_API = f"{GROUP}/v1alpha1"
NS = "diff-a"
NS_B = "diff-b"
SA = "sentinel"
SA_USER = f"system:serviceaccount:{NS}:{SA}"
WHEN = "2026-11-30T10:00:00Z"


def ra_path(namespace: str = NS, name: str | None = None) -> str:
    path = f"/apis/{GROUP}/v1alpha1/namespaces/{namespace}/rolloutanalyses"
    return f"{path}/{name}" if name else path


def rollout_analysis(name: str, namespace: str = NS, **spec: Any) -> dict[str, Any]:
    """A valid RolloutAnalysis (docs/status.md), ``spec`` overridden; server defaults kept."""
    body: dict[str, Any] = {
        "target": {"name": "checkout"},
        "metrics": [
            {
                "name": "p99",
                "query": "histogram_quantile(0.99, rate(http_duration_bucket[5m]))",
                "maxValue": 0.25,
            }
        ],
    }
    body.update(copy.deepcopy(spec))
    return {
        "apiVersion": RA_API,
        "kind": "RolloutAnalysis",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "checkout"}},
        "spec": body,
    }


def deployment(name: str, namespace: str = NS, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": image, "ports": [{"containerPort": 8080}]},
                        {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "1d"]},
                    ],
                    # The real cluster's pods run on its kwok node (docs/realcluster.md), so
                    # its rollouts complete as devcluster's do.
                    "tolerations": [KWOK_TOLERATION],
                    "nodeSelector": KWOK_NODE_SELECTOR,
                },
            },
        },
    }


def workload(kind: str, name: str, namespace: str = NS) -> dict[str, Any]:
    """A StatefulSet or a DaemonSet shaped as ``deployment``'s, which a RolloutAnalysis guards."""
    obj = deployment(name, namespace)
    obj["kind"] = kind
    # Scheduled on the real cluster's kwok node as the Deployment is: devcluster plays these
    # controllers' status as they write it once the pods run there (docs/devcluster.md).
    if kind == "StatefulSet":
        obj["spec"]["serviceName"] = name
    else:
        del obj["spec"]["replicas"]
    return obj


def event(analysis: str, namespace: str = NS) -> dict[str, Any]:
    """The core/v1 Event the operator records (sentinel_cluster.events.event_body)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{analysis}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": RA_API,
            "kind": "RolloutAnalysis",
            "name": analysis,
            "namespace": namespace,
        },
        "type": "Warning",
        "reason": "MetricFailed",
        "message": "p99 is 0.31, above 0.25",
        "count": 1,
        "firstTimestamp": WHEN,
        "lastTimestamp": WHEN,
        "source": {"component": "rollout-sentinel"},
        "reportingComponent": "rollout-sentinel",
        "reportingInstance": "rollout-sentinel",
    }


def lease(name: str, namespace: str = NS) -> dict[str, Any]:
    """The operator's leader-election Lease (MicroTime renewTime, as client-go writes it)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": "sentinel-0",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-11-30T10:00:00.000000Z",
            "renewTime": "2026-11-30T10:00:05.123456Z",
            "leaseTransitions": 0,
        },
    }


def config_map(name: str, namespace: str = NS, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "data": {"interval": "30s", "mode": "guard"},
    }


def secret(name: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {"user": "c2VudGluZWw="},
        "stringData": {"password": "s3cret"},
    }


def role(name: str, namespace: str = NS) -> dict[str, Any]:
    """Read analyses, write their status, patch Deployments: what deploy/ grants the operator."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [
            {
                "apiGroups": [GROUP],
                "resources": ["rolloutanalyses"],
                "verbs": ["get", "list", "watch"],
            },
            {
                "apiGroups": [GROUP],
                "resources": ["rolloutanalyses/status"],
                "verbs": ["update", "patch"],
            },
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        ],
    }


def role_binding(name: str, role_kind: str, role_name: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }


def cluster_role(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"app": "sentinel"}},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
        ],
    }


def cluster_role_binding(name: str, role_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role_name,
        },
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def service_account(name: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "sentinel"}},
    }


def to_yaml(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(objects), sort_keys=False)
