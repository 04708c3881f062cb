"""The demo's status log: read the analysis and its Deployment, print what changed.

``demo.runner`` calls ``read_snapshot`` every couple of seconds with a kubernetes client and
prints ``describe_change`` when it returns a line. Only the verdict, the failure count, the
Ready condition and the Deployment's pause count as changes; the measured value changes on
every evaluation and is shown alongside.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sentinel_cluster.kube import GROUP, PLURAL, VERSION


@dataclass(frozen=True)
class Snapshot:
    """What the log shows of one analysis and its target at one moment."""

    exists: bool
    verdict: str = "-"
    failures: int = 0
    failure_limit: int = 0
    value: str = "-"
    ready: str = "-"
    paused: bool = False

    def key(self) -> tuple[object, ...]:
        """Return the fields whose change is worth a line."""
        return (self.exists, self.verdict, self.failures, self.ready, self.paused)


def snapshot_of(analysis: dict[str, Any] | None, deployment_paused: bool) -> Snapshot:
    """Return the snapshot of a RolloutAnalysis object (None: not found)."""
    if analysis is None:
        return Snapshot(exists=False, paused=deployment_paused)
    spec = analysis.get("spec") or {}
    status = analysis.get("status") or {}
    results = status.get("metricResults") or []
    ready = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    return Snapshot(
        exists=True,
        verdict=str(status.get("lastVerdict") or "-"),
        failures=int(status.get("failures") or 0),
        failure_limit=int(spec.get("failureLimit") or 0),
        value=_value(results[0].get("value")) if results else "-",
        ready=f"{ready.get('status')}/{ready.get('reason')}" if ready else "-",
        paused=deployment_paused,
    )


def read_snapshot(api: k8s.ApiClient, namespace: str, name: str) -> Snapshot:
    """Read the analysis ``namespace/name`` and the Deployment of the same name."""
    custom = k8s.CustomObjectsApi(api)
    try:
        analysis = custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name, _request_timeout=5
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
        analysis = None
    try:
        deployment = k8s.AppsV1Api(api).read_namespaced_deployment(
            name, namespace, _request_timeout=5
        )
        paused = bool(deployment.spec.paused)
    except ApiException as exc:
        if exc.status != 404:
            raise
        paused = False
    return snapshot_of(analysis, paused)


def describe_change(previous: Snapshot | None, current: Snapshot) -> str | None:
    """Return the log line for ``current`` if it differs from ``previous``, else None."""
    if previous is not None and previous.key() == current.key():
        return None
    if not current.exists:
        return "analysis not found"
    return (
        f"verdict={current.verdict:<12} failures={current.failures}/{current.failure_limit}  "
        f"p99={current.value:<6} ready={current.ready:<22} "
        f"deployment={'PAUSED' if current.paused else 'running'}"
    )


def _value(raw: object) -> str:
    try:
        return f"{float(str(raw)):.3f}"
    except ValueError:
        return str(raw)
