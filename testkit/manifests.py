"""Build the Kubernetes objects tests, benchmarks and the demo apply: one builder per kind.

``ra_manifest`` is the README's example analysis with any spec field replaced (the devcluster and
REST API suites); ``analysis_manifest`` spells out the fields the operator suites vary
(interval, failureLimit, dryRun) and reads the metrics app's gauge through ``gauge_metric``.
``deployment_manifest`` and ``namespace_manifest`` build the rest (``analysed_deployments``: a
Deployment and its analysis for each of several names); ``to_yaml`` renders objects
for ``kubectl apply -f -``. The API group, version and plural are the product's own
(``sentinel_cluster.kube``), never spelled out again here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from sentinel_cluster.kube import GROUP, PLURAL, VERSION

__all__ = [
    "API_VERSION",
    "CRD_NAME",
    "EXAMPLE_METRIC",
    "GROUP",
    "PLURAL",
    "VERSION",
    "analysis_manifest",
    "analysis_spec",
    "as_served",
    "deployment_manifest",
    "gauge_metric",
    "namespace_manifest",
    "ra_manifest",
    "to_yaml",
    "workload_manifest",
]

API_VERSION = f"{GROUP}/{VERSION}"
# The CRD's metadata.name, as `kubectl wait crd/...` and `kubectl get crd` name it.
CRD_NAME = f"{PLURAL}.{GROUP}"

# The README's metric: a p99 latency over a 5 minute rate window, 0.25 s at most.
EXAMPLE_METRIC: Mapping[str, Any] = {
    "name": "p99-latency",
    "query": "histogram_quantile(0.99, rate(http_request_duration_seconds_bucket[5m]))",
    "maxValue": 0.25,
}


def analysis_spec(target: str = "checkout", **fields: Any) -> dict[str, Any]:
    """Return the README's spec on Deployment ``target``; ``fields`` replace top-level keys."""
    spec: dict[str, Any] = {
        "target": {"kind": "Deployment", "name": target},
        "metrics": [dict(EXAMPLE_METRIC)],
    }
    spec.update(copy.deepcopy(fields))
    return spec


def rollout_analysis(name: str, namespace: str | None, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Return a RolloutAnalysis object with ``spec`` (no namespace: the caller's default)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": API_VERSION,
        "kind": "RolloutAnalysis",
        "metadata": metadata,
        "spec": spec,
    }


def ra_manifest(name: str, namespace: str | None = None, **spec_fields: Any) -> dict[str, Any]:
    """Return a valid RolloutAnalysis (the README's example) with ``spec_fields`` merged in."""
    spec = analysis_spec()
    spec.update(copy.deepcopy(spec_fields))
    return rollout_analysis(name, namespace, spec)


def analysis_manifest(
    name: str,
    namespace: str,
    *,
    target: str = "checkout",
    metrics: Sequence[Mapping[str, Any]],
    interval: str = "5s",
    failure_limit: int = 3,
    dry_run: bool = False,
    kind: str = "Deployment",
) -> dict[str, Any]:
    """Return a RolloutAnalysis with every field the operator acts on written out."""
    spec = {
        "target": {"kind": kind, "name": target},
        "metrics": [dict(metric) for metric in metrics],
        "interval": interval,
        "failureLimit": failure_limit,
        "dryRun": dry_run,
    }
    return rollout_analysis(name, namespace, spec)


def as_served(
    manifest: Mapping[str, Any],
    *,
    uid: str,
    resource_version: str,
    created: str,
    generation: int = 1,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return ``manifest`` as the API server returns it: with the fields the server sets."""
    served = copy.deepcopy(dict(manifest))
    served["metadata"].update(
        uid=uid, resourceVersion=resource_version, generation=generation, creationTimestamp=created
    )
    if status is not None:
        served["status"] = status
    return served


def gauge_metric(case: str, max_value: float, name: str = "value") -> dict[str, Any]:
    """Return a spec metric reading the metrics app's ``sentinel_test_value{case=...}``."""
    return {
        "name": name,
        "query": f'max(sentinel_test_value{{case="{case}"}})',
        "maxValue": max_value,
    }


def pause_record(*holders: str, paused_before: bool = False) -> dict[str, str]:
    """Return the annotations a pause by ``holders`` leaves on a Deployment, as the operator
    writes them (docs/status.md#pausing-each-kind): who holds it and whether it was paused before.
    """
    return {
        "sentinel.example.com/paused-by": ",".join(holders),
        "sentinel.example.com/paused-before": "true" if paused_before else "false",
        "sentinel.example.com/paused-at": "2026-11-29T10:05:00Z",
        "sentinel.example.com/pause-reason": f"{holders[0]}: p99-latency above 0.25",
    }


def deployment_manifest(
    name: str,
    namespace: str | None = None,
    image: str = "nginx:1.27",
    *,
    replicas: int = 1,
    container: str = "app",
    ports: Sequence[int] = (),
    annotations: Mapping[str, str] | None = None,
    paused: bool | None = None,
) -> dict[str, Any]:
    """Return a minimal valid apps/v1 Deployment, its Pods labelled ``app: name``."""
    metadata: dict[str, Any] = {"name": name, "labels": {"app": name}}
    if namespace is not None:
        metadata["namespace"] = namespace
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    pod: dict[str, Any] = {"name": container, "image": image}
    if ports:
        pod["ports"] = [{"containerPort": port} for port in ports]
    spec: dict[str, Any] = {"replicas": replicas}
    if paused is not None:
        spec["paused"] = paused
    spec["selector"] = {"matchLabels": {"app": name}}
    spec["template"] = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [pod]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


def analysed_deployments(
    names: Sequence[str], namespace: str, *, metrics: Sequence[Mapping[str, Any]], interval: str
) -> list[dict[str, Any]]:
    """Return a Deployment and an analysis of it (same name, ``metrics``) for each of ``names``."""
    manifests = []
    for name in names:
        manifests.append(deployment_manifest(name, namespace))
        manifests.append(
            analysis_manifest(name, namespace, target=name, metrics=metrics, interval=interval)
        )
    return manifests


def workload_manifest(
    kind: str,
    name: str,
    namespace: str | None = None,
    image: str = "nginx:1.27",
    *,
    replicas: int = 1,
    container: str = "app",
) -> dict[str, Any]:
    """Return a minimal valid apps/v1 Deployment, StatefulSet or DaemonSet (``app: name``).

    The StatefulSet rolls with ``RollingUpdate`` and names a headless Service of its own name
    (which need not exist to run its pods); the DaemonSet has no ``replicas``: it runs one pod
    per eligible node.
    """
    workload = deployment_manifest(name, namespace, image, replicas=replicas, container=container)
    workload["kind"] = kind
    spec = workload["spec"]
    if kind == "StatefulSet":
        spec["serviceName"] = name
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    elif kind == "DaemonSet":
        del spec["replicas"]
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    return workload


def namespace_manifest(name: str) -> dict[str, Any]:
    """Return a core/v1 Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def to_yaml(*objects: Mapping[str, Any]) -> str:
    """Render objects as a multi-document YAML stream for ``kubectl apply -f -``."""
    return yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False)
