"""What a provider's client takes from the process environment, against real servers.

The environment is read once when the client is built, not per query
(docs/operations.md#metric-providers): a proxy from ``HTTP_PROXY`` unless ``NO_PROXY`` names the
host, ``REQUESTS_CA_BUNDLE`` when the provider has no ``caFile``, and netrc credentials when it
has no ``basicAuth``. Each test fails if the client stops reading the environment altogether
(``trust_env`` off without resolving it first).
"""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sentinel_core.measurement import MeasurementError
from sentinel_operator.providers import Providers
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.prometheus import PrometheusServer
from testkit.providers import Pki, SecuredPrometheus
from tests.providers.conftest import PASSWORD, USER
from tests.providers.test_backends import client, show, write_providers

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No proxy, CA bundle or netrc from the machine running the tests."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    return monkeypatch


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_proxy_from_the_environment_carries_the_query_and_no_proxy_goes_direct(
    tmp_path: Path,
    clean_environment: pytest.MonkeyPatch,
    prometheus: PrometheusServer,
    fault_proxy: FaultProxy,
) -> None:
    # The fault proxy forwards an absolute-form request to Prometheus as a forward proxy does;
    # the ".invalid" host resolves nowhere (RFC 6761), so only the proxy can answer for it.
    clean_environment.setenv("HTTP_PROXY", fault_proxy.url)
    clean_environment.setenv("NO_PROXY", "127.0.0.1")
    port = urlsplit(prometheus.url).port
    path = write_providers(
        tmp_path / "providers.yaml",
        {"name": "behind-proxy", "url": f"http://prometheus.invalid:{port}"},
        {"name": "no-proxy", "url": prometheus.url},
    )
    providers = Providers(path=str(path), default_url=prometheus.url)

    proxied = client(providers, "behind-proxy").measure("m", "vector(7)")
    assert (proxied.error, proxied.value) == (None, 7.0), proxied.message
    assert [seen.path for seen in fault_proxy.requests] == ["/api/v1/query"]

    direct = client(providers, "no-proxy").measure("m", "vector(8)")
    assert (direct.error, direct.value) == (None, 8.0), direct.message
    assert fault_proxy.query_count == 1, "NO_PROXY names 127.0.0.1: no query via the proxy"


def test_requests_ca_bundle_verifies_a_provider_without_a_ca_file_and_a_ca_file_wins(
    tmp_path: Path,
    clean_environment: pytest.MonkeyPatch,
    pki: Pki,
    mtls_prometheus: SecuredPrometheus,
    metrics_app: MetricsApp,
    case: str,
) -> None:
    query = show(metrics_app, mtls_prometheus, case, 4.5)
    other = Pki.create(tmp_path / "other-pki")
    # The bundle is the CA that signed the server's certificate; the pinned provider's own
    # caFile is another CA, so it fails if the bundle were preferred to it.
    clean_environment.setenv("REQUESTS_CA_BUNDLE", str(pki.ca))
    certificate = {"certFile": str(pki.client_cert), "keyFile": str(pki.client_key)}
    path = write_providers(
        tmp_path / "providers.yaml",
        {"name": "bundle", "url": mtls_prometheus.url, "tls": certificate},
        {
            "name": "pinned",
            "url": mtls_prometheus.url,
            "tls": {**certificate, "caFile": str(other.ca)},
        },
    )
    providers = Providers(path=str(path), default_url="http://127.0.0.1:9")

    verified = client(providers, "bundle").measure("m", query)
    assert (verified.error, verified.value) == (None, 4.5), verified.message
    refused = client(providers, "pinned").measure("m", query)
    assert refused.error == MeasurementError.UNAVAILABLE
    assert "provider 'pinned'" in refused.message and "certificate" in refused.message.lower()


def test_netrc_credentials_go_to_a_provider_without_basic_auth_only(
    tmp_path: Path,
    clean_environment: pytest.MonkeyPatch,
    secrets_dir: Path,
    fault_proxy: FaultProxy,
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-pass\n")
    clean_environment.setenv("NETRC", str(netrc))
    path = write_providers(
        tmp_path / "providers.yaml",
        {"name": "from-netrc", "url": fault_proxy.url},
        {
            "name": "own-basic",
            "url": fault_proxy.url,
            "basicAuth": {"username": USER, "passwordFile": str(secrets_dir / "password")},
        },
    )
    providers = Providers(path=str(path), default_url=fault_proxy.url)

    for name in ("from-netrc", "own-basic"):
        answer = client(providers, name).measure("m", "vector(1)")
        assert (answer.error, answer.value) == (None, 1.0), answer.message
    assert [seen.authorization for seen in fault_proxy.requests] == [
        _basic("netrc-user", "netrc-pass"),
        _basic(USER, PASSWORD),
    ]
