"""Session fixtures: the real backends behind authentication, started once, stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.metrics_app import MetricsApp
from testkit.providers import Pki, SecuredPrometheus, VictoriaMetrics, VmAuth, bcrypt_hash

# Distinct values, so that a grep finds exactly where one leaked.
PASSWORD = "pw-SECRET-basic-7f3a9e"
TOKEN = "tok-SECRET-bearer-91c2d4"
ROTATED = "tok-SECRET-rotated-55d0b8"
USER = "sentinel"


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def basic_prometheus(
    metrics_app: MetricsApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredPrometheus]:
    """Prometheus requiring basic auth (USER / PASSWORD) on every path."""
    server = SecuredPrometheus(
        tmp_path_factory.mktemp("prometheus-basic"),
        [metrics_app.target],
        web_config={"basic_auth_users": {USER: bcrypt_hash(PASSWORD)}},
        auth=(USER, PASSWORD),
    )
    with server:
        yield server


@pytest.fixture(scope="session")
def mtls_prometheus(
    metrics_app: MetricsApp, pki: Pki, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredPrometheus]:
    """Prometheus over TLS requiring a client certificate signed by the test CA."""
    server = SecuredPrometheus(
        tmp_path_factory.mktemp("prometheus-mtls"),
        [metrics_app.target],
        web_config={
            "tls_server_config": {
                "cert_file": str(pki.server_cert),
                "key_file": str(pki.server_key),
                "client_auth_type": "RequireAndVerifyClientCert",
                "client_ca_file": str(pki.ca),
            }
        },
        tls=True,
        cert=(str(pki.client_cert), str(pki.client_key)),
        verify=str(pki.ca),
    )
    with server:
        yield server


@pytest.fixture(scope="session")
def victoria(
    metrics_app: MetricsApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VictoriaMetrics]:
    with VictoriaMetrics(tmp_path_factory.mktemp("victoria"), [metrics_app.target]) as server:
        yield server


@pytest.fixture(scope="session")
def vmauth(victoria: VictoriaMetrics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmAuth]:
    """vmauth in front of VictoriaMetrics: TOKEN and ROTATED get through, nothing else."""
    with VmAuth(tmp_path_factory.mktemp("vmauth"), victoria.url, [TOKEN, ROTATED]) as server:
        yield server


@pytest.fixture
def secrets_dir(tmp_path: Path, pki: Pki) -> Path:
    """The secret files a providers file names, as Secrets mounted as files would be."""
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "password").write_text(PASSWORD + "\n")
    (directory / "token").write_text(TOKEN + "\n")
    return directory
