"""Providers through the reconciler (in this process) against devcluster and real backends.

The same analysis through Prometheus and through VictoriaMetrics behind vmauth reaches the same
verdicts; a provider the namespace may not use gets no request at all; and no secret value of
any provider appears anywhere a person or a scraper can look.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import Client

from analyses.models import Analysis, Evaluation
from sentinel_cluster import kube
from sentinel_operator.metrics import provider_metrics, scrape
from sentinel_operator.providers import Providers
from sentinel_operator.reconcile import Reconciler
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, events_for
from testkit.prometheus import PrometheusServer
from testkit.providers import Pki, SecuredPrometheus, VictoriaMetrics, VmAuth
from testkit.waiting import wait_until
from tests.providers.conftest import PASSWORD, ROTATED, TOKEN, USER

pytestmark = [pytest.mark.django_db, pytest.mark.clusters("dev")]

WRONG_PASSWORD = "pw-SECRET-wrong-0c1e77"


def reconciler_for(client: kube.KubeClient, path: Path, default_url: str) -> Reconciler:
    def count(provider: str, code: str, seconds: float) -> None:
        metrics = provider_metrics()
        metrics.requests.labels(provider, code).inc()
        metrics.latency.labels(provider).observe(seconds)

    providers = Providers(path=str(path), default_url=default_url, timeout=3.0, on_response=count)
    return Reconciler(client, providers, rng=random.Random(3), instance="test")


def create(client: kube.KubeClient, namespace: str, name: str, *metrics: dict[str, Any]) -> None:
    body = analysis_manifest(name, namespace, metrics=list(metrics), failure_limit=5)
    client.request("POST", kube.analyses_path(namespace), body=body)  # type: ignore[arg-type]


def deploy(client: kube.KubeClient, namespace: str) -> None:
    client.request(
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        body=deployment_manifest("checkout", namespace),
    )


def status(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return client.request("GET", kube.analysis_path(namespace, name)).get("status") or {}


def with_provider(metric: dict[str, Any], provider: str) -> dict[str, Any]:
    return {**metric, "provider": provider}


def test_victoria_metrics_reaches_the_verdicts_prometheus_reaches(
    kube_client: kube.KubeClient,
    namespace: str,
    tmp_path: Path,
    secrets_dir: Path,
    prometheus: PrometheusServer,
    victoria: VictoriaMetrics,
    vmauth: VmAuth,
    gauge: GaugeSetter,
    case: str,
) -> None:
    path = tmp_path / "providers.yaml"
    vm = {"name": "vm", "url": vmauth.url, "bearerTokenFile": str(secrets_dir / "token")}
    path.write_text(yaml.safe_dump({"providers": [vm]}))
    reconciler = reconciler_for(kube_client, path, prometheus.url)
    deploy(kube_client, namespace)
    metric = gauge_metric(case, 0.5)
    create(kube_client, namespace, "via-prometheus", metric)
    create(kube_client, namespace, "via-victoria", with_provider(metric, "vm"))
    query = metric["query"]
    verdicts: dict[str, list[tuple[str, str]]] = {"via-prometheus": [], "via-victoria": []}
    for value in (0.2, 0.9, 0.3):
        gauge(value)
        wait_until(lambda v=value: victoria.values(query) == [v], timeout=20, what="VM scraped")
        for name, seen in verdicts.items():
            reconciler.reconcile(namespace, name)
            got = status(kube_client, namespace, name)
            seen.append((got["lastVerdict"], got["metricResults"][0]["value"]))
    assert verdicts["via-prometheus"] == [("Pass", "0.2"), ("Fail", "0.9"), ("Pass", "0.3")]
    assert verdicts["via-victoria"] == verdicts["via-prometheus"]


@pytest.mark.server
def test_a_provider_the_namespace_may_not_use_is_never_asked(
    kube_client: kube.KubeClient,
    namespace: str,
    tmp_path: Path,
    prometheus: PrometheusServer,
    case: str,
) -> None:
    with FaultProxy(prometheus.url) as restricted, FaultProxy(prometheus.url) as default:
        path = tmp_path / "providers.yaml"
        only_payments = {"name": "restricted", "url": restricted.url, "namespaces": ["payments-*"]}
        path.write_text(yaml.safe_dump({"providers": [only_payments]}))
        reconciler = reconciler_for(kube_client, path, default.url)
        deploy(kube_client, namespace)
        metric = gauge_metric(case, 0.5)
        create(kube_client, namespace, "not-allowed", with_provider(metric, "restricted"))
        create(kube_client, namespace, "unknown", with_provider(metric, "nowhere"))
        for _ in range(2):
            for name in ("not-allowed", "unknown"):
                reconciler.reconcile(namespace, name)
        counts = (restricted.query_count, default.query_count)
    assert counts == (0, 0)
    for name, reason in (("not-allowed", "ProviderNotAllowed"), ("unknown", "UnknownProvider")):
        got = status(kube_client, namespace, name)
        ready = condition({"status": got}, "Ready")
        assert (ready["status"], ready["reason"]) == ("False", reason)
        assert "operator's configuration" in ready["message"]
        assert got["failures"] == 0 and "lastVerdict" not in got
        assert [e["reason"] for e in events_for(kube_client, namespace, name)] == [reason]
        rows = Evaluation.objects.filter(analysis__namespace=namespace, analysis__name=name)
        assert [(r.outcome, r.error_reason) for r in rows] == [("Error", reason)] * 2
    assert Analysis.objects.get(namespace=namespace, name="unknown").backoff_attempt == 0


def test_no_secret_appears_in_logs_status_events_history_api_admin_or_metrics(
    kube_client: kube.KubeClient,
    namespace: str,
    tmp_path: Path,
    secrets_dir: Path,
    pki: Pki,
    prometheus: PrometheusServer,
    basic_prometheus: SecuredPrometheus,
    mtls_prometheus: SecuredPrometheus,
    victoria: VictoriaMetrics,
    vmauth: VmAuth,
    admin_client: Client,
    caplog: pytest.LogCaptureFixture,
    gauge: GaugeSetter,
    case: str,
) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text(WRONG_PASSWORD)
    tls = {"caFile": str(pki.ca), "certFile": str(pki.client_cert), "keyFile": str(pki.client_key)}
    providers = [
        {
            "name": "basic",
            "url": basic_prometheus.url,
            "basicAuth": {"username": USER, "passwordFile": str(secrets_dir / "password")},
        },
        {
            "name": "basic-wrong",
            "url": basic_prometheus.url,
            "basicAuth": {"username": USER, "passwordFile": str(wrong)},
        },
        {"name": "mtls", "url": mtls_prometheus.url, "tls": tls},
        {"name": "mtls-no-cert", "url": mtls_prometheus.url, "tls": {"caFile": str(pki.ca)}},
        {"name": "vm", "url": vmauth.url, "bearerTokenFile": str(secrets_dir / "token")},
        {"name": "vm-bad-query", "url": vmauth.url, "bearerTokenFile": str(secrets_dir / "token")},
    ]
    path = tmp_path / "providers.yaml"
    path.write_text(yaml.safe_dump({"providers": providers}))
    caplog.set_level(logging.DEBUG)
    reconciler = reconciler_for(kube_client, path, prometheus.url)
    gauge(0.2)
    metric = gauge_metric(case, 0.5)
    for backend in (basic_prometheus, mtls_prometheus):
        backend.wait_for(metric["query"], lambda seen: seen == [0.2], timeout=20)
    wait_until(lambda: victoria.values(metric["query"]) == [0.2], timeout=20, what="VM scraped")
    deploy(kube_client, namespace)
    names = [p["name"] for p in providers]
    for name in names:
        m = with_provider(metric, name)
        if name == "vm-bad-query":
            m["query"] = "sum(("
        create(kube_client, namespace, f"ra-{name}", m)
        reconciler.reconcile(namespace, f"ra-{name}")
    # A rotated token is a secret too; the next evaluation uses it.
    (secrets_dir / "token").write_text(ROTATED)
    reconciler.reconcile(namespace, "ra-vm")
    # A broken new version is logged; the previous one stays.
    path.write_text("providers: [{name: x, url: 'ftp://" + PASSWORD + "'}]")
    reconciler.reconcile(namespace, "ra-vm")

    verdicts = {n: status(kube_client, namespace, f"ra-{n}").get("lastVerdict") for n in names}
    assert verdicts == {
        "basic": "Pass",
        "basic-wrong": None,
        "mtls": "Pass",
        "mtls-no-cert": None,
        "vm": "Pass",
        "vm-bad-query": None,
    }

    def get(url: str) -> str:
        answer = admin_client.get(url)
        assert answer.status_code == 200, url
        return answer.content.decode()

    for name in ("basic-wrong", "mtls-no-cert"):
        ready = condition({"status": status(kube_client, namespace, f"ra-{name}")}, "Ready")
        assert ready["reason"] == "MetricsUnavailable" and f"provider '{name}'" in ready["message"]
    places: dict[str, str] = {"operator logs": caplog.text}
    for name in names:
        key = f"ra-{name}"
        places[f"status of {key}"] = yaml.safe_dump(status(kube_client, namespace, key))
        places[f"events of {key}"] = yaml.safe_dump(events_for(kube_client, namespace, key))
        row = Analysis.objects.get(namespace=namespace, name=key)
        history = Evaluation.objects.filter(analysis=row).values()
        places[f"history of {key}"] = repr(list(history))
        api = f"/api/v1/analyses/{namespace}/{key}/"
        places[f"API {api}"] = get(api)
        places[f"API {api}evaluations/"] = get(f"{api}evaluations/")
        page = f"/admin/analyses/analysis/{row.pk}/change/"
        places[f"admin {page}"] = get(page)
    places["admin list"] = get("/admin/analyses/analysis/")
    places["API list"] = get("/api/v1/analyses/")
    places["/metrics"] = scrape().decode()
    # The admin form's provider select shows the metric's provider, chosen.
    vm_row = Analysis.objects.get(namespace=namespace, name="ra-vm")
    assert (
        '<option value="vm" selected>'
        in places[f"admin /admin/analyses/analysis/{vm_row.pk}/change/"]
    )
    assert 'sentinel_provider_requests_total{code="200",provider="vm"}' in places["/metrics"]
    assert "401" in places["status of ra-basic-wrong"]
    assert "providers not reloaded" in places["operator logs"]
    key_lines = [line for line in pki.client_key.read_text().splitlines() if "-----" not in line]
    secrets = [PASSWORD, WRONG_PASSWORD, TOKEN, ROTATED, *key_lines]
    leaks = [(where, s) for where, text in places.items() for s in secrets if s in text]
    assert leaks == []
