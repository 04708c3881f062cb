"""What the notifications end-to-end tests share: the operator's notify settings, the analysis
they apply, the delivery rows they read, and ``NotifyE2E``, the fixtures they all take with the
steps they all begin with (the ``notify_e2e`` fixture of this package's conftest).

Used by ``test_webhook_e2e``, ``test_smtp_e2e``, ``test_transitions_e2e`` and
``test_sabotage_channel``: a ``runoperator`` asking Prometheus through the fault proxy, a
Deployment ``checkout`` and an analysis ``checkout`` on the test's gauge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import wait_condition
from testkit.operator import OperatorProcess, StartOperator

PUBLIC_URL = "https://sentinel.example.test"


def notify_env(path: Path, **extra: str) -> dict[str, str]:
    return {
        "SENTINEL_NOTIFY_CONFIG": str(path),
        "SENTINEL_PUBLIC_URL": PUBLIC_URL,
        "SENTINEL_NOTIFY_RETRY_AFTER": "1s",
        **extra,
    }


def checkout(namespace: str, case: str, *, notify: list[str]) -> dict[str, Any]:
    manifest = analysis_manifest(
        "checkout", namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=2
    )
    manifest["spec"]["notify"] = notify
    return manifest


def deliveries(operator: OperatorProcess) -> list[dict[str, Any]]:
    return operator.query("SELECT * FROM notifications_delivery ORDER BY id")


@dataclass(frozen=True)
class NotifyE2E:
    """The fixtures of one notifications end-to-end test, and the steps they begin with."""

    start_operator: StartOperator
    kube_cluster: Cluster
    kube_client: kube.KubeClient
    namespace: str
    gauge: GaugeSetter
    fault_proxy: FaultProxy
    case: str
    notify_config: Callable[..., Path]

    def operator(
        self, *channels: dict[str, Any], env: Mapping[str, str] | None = None, **options: Any
    ) -> OperatorProcess:
        """Start an operator on the namespace with ``channels`` in its notify config.

        ``env`` adds to (or overrides) ``notify_env``; ``options`` go to ``start_operator``.
        """
        config = self.notify_config(*channels)
        return self.start_operator(
            prometheus_url=self.fault_proxy.url,
            namespaces=[self.namespace],
            env=notify_env(config, **(env or {})),
            **options,
        )

    def apply_checkout(self, *, notify: list[str]) -> None:
        """Apply the Deployment and its analysis, notifying the ``notify`` channels."""
        kubectl_apply(self.kube_cluster, deployment_manifest("checkout", self.namespace))
        kubectl_apply(self.kube_cluster, checkout(self.namespace, self.case, notify=notify))

    def wait_condition(self, type_: str, reason: str, *, timeout: float = 15.0) -> dict[str, Any]:
        """Wait until the analysis's condition ``type_`` has ``reason``; return the resource."""
        return wait_condition(
            self.kube_client, self.namespace, "checkout", type_, reason, timeout=timeout
        )
