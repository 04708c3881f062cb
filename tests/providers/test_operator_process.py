"""``runoperator`` with SENTINEL_PROVIDERS_FILE: the settings reach every worker.

A metric through VictoriaMetrics behind vmauth is evaluated by the operator's own workers;
/metrics counts its requests per provider, and a broken new version of the file is counted
while the previous one keeps working.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sentinel_cluster import kube
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import get_analysis, wait_condition
from testkit.operator import OperatorProcess, StartOperator
from testkit.providers import VictoriaMetrics, VmAuth
from testkit.waiting import wait_until
from tests.providers.conftest import TOKEN

pytestmark = pytest.mark.clusters("dev")


def sample(process: OperatorProcess, line_start: str) -> float | None:
    for line in process.metrics_text().splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_operator_evaluates_through_a_named_provider_and_counts_it(
    start_operator: StartOperator,
    kube_client: kube.KubeClient,
    namespace: str,
    tmp_path: Path,
    secrets_dir: Path,
    victoria: VictoriaMetrics,
    vmauth: VmAuth,
    gauge: GaugeSetter,
    case: str,
) -> None:
    path = tmp_path / "providers.yaml"
    vm = {"name": "vm", "url": vmauth.url, "bearerTokenFile": str(secrets_dir / "token")}
    path.write_text(yaml.safe_dump({"providers": [vm]}))
    metric = {**gauge_metric(case, 0.5), "provider": "vm"}
    gauge(0.2)
    wait_until(lambda: victoria.values(metric["query"]) == [0.2], timeout=20, what="VM scraped")
    operator = start_operator(
        prometheus_url="http://127.0.0.1:9",
        namespaces=[namespace],
        env={"SENTINEL_PROVIDERS_FILE": str(path)},
    )
    kube_client.request(
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        body=deployment_manifest("checkout", namespace),
    )
    body = analysis_manifest("ra", namespace, metrics=[metric], interval="5s")
    kube_client.request("POST", kube.analyses_path(namespace), body=body)  # type: ignore[arg-type]
    wait_condition(kube_client, namespace, "ra", "Healthy", "WithinThresholds", timeout=30)
    counted = 'sentinel_provider_requests_total{code="200",provider="vm"}'
    assert (sample(operator, counted) or 0) >= 1
    assert sample(operator, "sentinel_provider_request_duration_seconds_count{") is not None
    assert TOKEN not in operator.metrics_text()

    wait_until(
        lambda: len(operator.evaluations(namespace, "ra")) >= 3,
        timeout=30,
        what=f"3 evaluations\n{operator.log}",
    )
    path.write_text("providers: [{name: vm, url: 'ftp://nowhere'}]\n")
    wait_until(
        # Once per worker process that evaluated since: each holds its own clients.
        lambda: (sample(operator, "sentinel_config_reload_failures_total") or 0) >= 1,
        timeout=30,
        what=f"the reload failure counted\n{operator.log}",
    )
    before = sample(operator, counted) or 0
    wait_until(lambda: (sample(operator, counted) or 0) > before, timeout=30, what="vm asked")
    ready = [c for c in get_analysis(kube_client, namespace, "ra")["status"]["conditions"]]
    assert {c["type"]: c["reason"] for c in ready}["Ready"] == "Evaluating"
    assert "providers not reloaded, the previous version stays in force" in operator.log
