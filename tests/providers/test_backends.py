"""Each provider's client against real backends behind real authentication.

The providers file is described in docs/operations.md#metric-providers.

Prometheus with basic auth, Prometheus requiring a client certificate, VictoriaMetrics behind
vmauth requiring a bearer token, and the fault proxy's recording hop for the tenant header and
the error taxonomy: every request goes through ``Providers``, as the reconciler's do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.prometheus import PrometheusServer
from testkit.providers import Pki, SecuredPrometheus, VictoriaMetrics, VmAuth
from testkit.waiting import wait_until
from tests.providers.conftest import PASSWORD, ROTATED, TOKEN, USER

NAMESPACE = "payments"


def write_providers(path: Path, *providers: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"providers": list(providers)}, sort_keys=False))
    return path


def client(providers: Providers, name: str) -> PrometheusClient:
    picked = providers.pick(name, NAMESPACE)
    assert isinstance(picked, PrometheusClient), picked
    return picked


def show(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str, value: float) -> str:
    metrics_app.set(case, value)
    query = f'max(sentinel_test_value{{case="{case}"}})'
    prometheus.wait_for(query, lambda seen: seen == [value], timeout=15)
    return query


def test_basic_auth_answers_and_a_wrong_password_is_unavailable_naming_the_401(
    tmp_path: Path,
    secrets_dir: Path,
    basic_prometheus: SecuredPrometheus,
    metrics_app: MetricsApp,
    case: str,
) -> None:
    query = show(metrics_app, basic_prometheus, case, 0.25)
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password")
    path = write_providers(
        tmp_path / "providers.yaml",
        {
            "name": "thanos-basic",
            "url": basic_prometheus.url,
            "basicAuth": {"username": USER, "passwordFile": str(secrets_dir / "password")},
        },
        {
            "name": "thanos-wrong",
            "url": basic_prometheus.url,
            "basicAuth": {"username": USER, "passwordFile": str(wrong)},
        },
        {"name": "thanos-none", "url": basic_prometheus.url},
    )
    providers = Providers(path=str(path), default_url="http://127.0.0.1:9")
    good = client(providers, "thanos-basic").measure("m", query)
    assert (good.error, good.value) == (None, 0.25)
    for name in ("thanos-wrong", "thanos-none"):
        refused = client(providers, name).measure("m", query)
        assert refused.error == MeasurementError.UNAVAILABLE
        assert f"provider '{name}'" in refused.message and "401" in refused.message
        assert PASSWORD not in refused.message and "not-the-password" not in refused.message


def test_mutual_tls_answers_with_the_client_certificate_and_not_without(
    tmp_path: Path, pki: Pki, mtls_prometheus: SecuredPrometheus, metrics_app: MetricsApp, case: str
) -> None:
    query = show(metrics_app, mtls_prometheus, case, 3.5)
    tls = {"caFile": str(pki.ca), "certFile": str(pki.client_cert), "keyFile": str(pki.client_key)}
    path = write_providers(
        tmp_path / "providers.yaml",
        {"name": "mimir-mtls", "url": mtls_prometheus.url, "tls": tls},
        {"name": "mimir-no-cert", "url": mtls_prometheus.url, "tls": {"caFile": str(pki.ca)}},
    )
    providers = Providers(path=str(path), default_url="http://127.0.0.1:9")
    good = client(providers, "mimir-mtls").measure("m", query)
    assert (good.error, good.value) == (None, 3.5)
    refused = client(providers, "mimir-no-cert").measure("m", query)
    assert refused.error == MeasurementError.UNAVAILABLE
    assert "provider 'mimir-no-cert'" in refused.message
    key_line = pki.client_key.read_text().splitlines()[1]
    assert key_line not in refused.message


def test_victoria_metrics_behind_vmauth_answers_what_prometheus_answers(
    tmp_path: Path,
    secrets_dir: Path,
    prometheus: PrometheusServer,
    victoria: VictoriaMetrics,
    vmauth: VmAuth,
    metrics_app: MetricsApp,
    case: str,
) -> None:
    query = show(metrics_app, prometheus, case, 7.0)
    wait_until(lambda: victoria.values(query) == [7.0], timeout=20, what=f"VM has {query}")
    wrong = tmp_path / "wrong-token"
    wrong.write_text("tok-not-accepted")
    path = write_providers(
        tmp_path / "providers.yaml",
        {"name": "vm", "url": vmauth.url, "bearerTokenFile": str(secrets_dir / "token")},
        {"name": "vm-wrong", "url": vmauth.url, "bearerTokenFile": str(wrong)},
    )
    providers = Providers(path=str(path), default_url=prometheus.url)
    from_prometheus = client(providers, "default").measure("m", query)
    from_victoria = client(providers, "vm").measure("m", query)
    assert from_victoria.error is None
    assert (from_victoria.value, from_victoria.series) == (
        from_prometheus.value,
        from_prometheus.series,
    )
    refused = client(providers, "vm-wrong").measure("m", query)
    assert refused.error == MeasurementError.UNAVAILABLE
    # vmauth 1.79 refuses an unknown token with 400 (later versions say 401).
    assert refused.message == "provider 'vm-wrong': Prometheus answered HTTP 400 Bad Request"
    assert "tok-not-accepted" not in refused.message


@pytest.mark.server
def test_tenant_header_and_a_rotated_token_reach_the_recording_hop(
    tmp_path: Path, secrets_dir: Path, vmauth: VmAuth, victoria: VictoriaMetrics
) -> None:
    with FaultProxy(vmauth.url) as hop:
        path = write_providers(
            tmp_path / "providers.yaml",
            {
                "name": "mimir-payments",
                "url": hop.url,
                "headers": {"X-Scope-OrgID": "payments"},
                "bearerTokenFile": str(secrets_dir / "token"),
                "namespaces": [NAMESPACE],
            },
        )
        providers = Providers(path=str(path), default_url="http://127.0.0.1:9")
        assert client(providers, "mimir-payments").measure("m", "vector(1)").value == 1.0
        (secrets_dir / "token").write_text(ROTATED + "\n")
        # The next evaluation batch refreshes first, as the reconciler does.
        assert providers.refresh() is True
        assert client(providers, "mimir-payments").measure("m", "vector(2)").value == 2.0
        seen = [(r.authorization, r.headers.get("X-Scope-OrgID")) for r in hop.requests]
    assert seen == [(f"Bearer {TOKEN}", "payments"), (f"Bearer {ROTATED}", "payments")]


def test_an_invalid_new_version_keeps_the_previous_one_and_is_counted(
    tmp_path: Path, secrets_dir: Path, prometheus: PrometheusServer
) -> None:
    failures: list[int] = []
    path = write_providers(tmp_path / "providers.yaml", {"name": "a", "url": prometheus.url})
    providers = Providers(
        path=str(path),
        default_url=prometheus.url,
        on_reload_failure=lambda: failures.append(1),
    )
    assert providers.names == ("default", "a")
    path.write_text("providers:\n  - name: a\n    url: ftp://nowhere\n")
    assert providers.refresh() is False
    assert failures == [1] and providers.names == ("default", "a")
    # Reported once per new version, not at every batch.
    assert providers.refresh() is False and failures == [1]
    write_providers(path, {"name": "b", "url": prometheus.url, "namespaces": ["other"]})
    assert providers.refresh() is True
    assert providers.names == ("default", "b")
    refused = providers.pick("b", NAMESPACE)
    assert isinstance(refused, Measurement)
    assert refused.error == MeasurementError.PROVIDER_NOT_ALLOWED
    unknown = providers.pick("a", NAMESPACE)
    assert isinstance(unknown, Measurement) and unknown.error == MeasurementError.UNKNOWN_PROVIDER


@pytest.mark.parametrize("fault", ["fail", "html", "truncated", "slow", "huge"])
def test_the_error_taxonomy_holds_for_a_provider_with_credentials(
    tmp_path: Path, secrets_dir: Path, fault_proxy: FaultProxy, fault: str
) -> None:
    path = write_providers(
        tmp_path / "providers.yaml",
        {
            "name": "cortex",
            "url": fault_proxy.url,
            "headers": {"X-Scope-OrgID": "t1"},
            "bearerTokenFile": str(secrets_dir / "token"),
            "timeout": "500ms",
        },
    )
    providers = Providers(path=str(path), default_url=fault_proxy.url, max_bytes=64 * 1024)
    action = {
        "fail": lambda: fault_proxy.fail(502),
        "html": fault_proxy.html,
        "truncated": fault_proxy.truncated,
        "slow": lambda: fault_proxy.slow(2.0),
        "huge": lambda: fault_proxy.huge(1024 * 1024),
    }[fault]
    action()
    measured = client(providers, "cortex").measure("m", "vector(1)")
    assert measured.error == MeasurementError.UNAVAILABLE
    assert measured.message.startswith("provider 'cortex': ")
    assert TOKEN not in measured.message
    assert fault_proxy.query_count == 1


def test_a_worker_built_while_the_file_is_broken_keeps_default_and_recovers(
    tmp_path: Path, prometheus: PrometheusServer
) -> None:
    failures: list[int] = []
    path = tmp_path / "providers.yaml"
    path.write_text("providers: [{name: a, url: 'ftp://x'}]\n")
    providers = Providers(
        path=str(path), default_url=prometheus.url, on_reload_failure=lambda: failures.append(1)
    )
    assert providers.names == ("default",) and failures == [1]
    assert client(providers, "default").measure("m", "vector(1)").value == 1.0
    write_providers(path, {"name": "a", "url": prometheus.url})
    assert providers.refresh() is True and providers.names == ("default", "a")
