"""Real metric backends behind authentication, for the providers tests (docs/operations.md).

- ``Pki``: a throwaway CA, a server certificate for 127.0.0.1 and a client certificate, made
  with ``cryptography``.
- ``SecuredPrometheus``: the real Prometheus with ``--web.config.file`` (basic auth with a
  bcrypt hash, or TLS requiring a client certificate).
- ``VictoriaMetrics`` and ``VmAuth``: Debian's ``victoria-metrics`` scraping the same metrics
  app, and its ``vmauth`` in front requiring a bearer token.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testkit.lifecycle import StartStop
from testkit.ports import free_port
from testkit.processes import ChildProcess
from testkit.prometheus import PrometheusServer

VICTORIA_METRICS = "/usr/bin/victoria-metrics"
VMAUTH = "/usr/bin/vmauth"


def bcrypt_hash(password: str) -> str:
    """Return a bcrypt hash of ``password`` (Prometheus's basic_auth_users needs one).

    libxcrypt (Debian's libc crypt) makes it; no bcrypt package or htpasswd is needed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt

        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4))


@dataclass(frozen=True)
class Pki:
    """Paths of a CA, a 127.0.0.1 server certificate and a client certificate (PEM)."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    @classmethod
    def create(cls, directory: Path) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sentinel-test-ca")])
        ca = (
            _builder(ca_name, ca_name, ca_key)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        paths = {"ca": directory / "ca.crt"}
        paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        for role, usage in (
            ("server", ExtendedKeyUsageOID.SERVER_AUTH),
            ("client", ExtendedKeyUsageOID.CLIENT_AUTH),
        ):
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"sentinel-test-{role}")])
            builder = _builder(name, ca_name, key).add_extension(
                x509.ExtendedKeyUsage([usage]), critical=False
            )
            if role == "server":
                builder = builder.add_extension(
                    x509.SubjectAlternativeName(
                        [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                    ),
                    critical=False,
                )
            cert = builder.sign(ca_key, hashes.SHA256())
            paths[f"{role}_cert"] = directory / f"{role}.crt"
            paths[f"{role}_key"] = directory / f"{role}.key"
            paths[f"{role}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            paths[f"{role}_key"].write_bytes(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            paths[f"{role}_key"].chmod(0o600)
        return cls(**paths)


def _builder(subject: x509.Name, issuer: x509.Name, key: Any) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
    )


class SecuredPrometheus(PrometheusServer):
    """The real Prometheus with a ``--web.config.file``; its own session can get through."""

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[str],
        *,
        web_config: dict[str, Any],
        tls: bool = False,
        auth: tuple[str, str] | None = None,
        cert: tuple[str, str] | None = None,
        verify: str | bool = True,
    ) -> None:
        super().__init__(workdir, targets)
        web = self.workdir / "web.yml"
        web.write_text(yaml.safe_dump(web_config))
        self._child.argv.append(f"--web.config.file={web}")
        self._scheme = "https" if tls else "http"
        self._session.auth = auth
        self._session.cert = cert
        self._session.verify = verify
        # REQUESTS_CA_BUNDLE would override the session's CA file.
        self._session.trust_env = False

    @property
    def url(self) -> str:
        return f"{self._scheme}://127.0.0.1:{self.port}"


class _Server(StartStop):
    """A child process serving HTTP on a free port, ready when ``ready_path`` answers 200."""

    ready_path = "/health"

    def __init__(self, workdir: Path, argv: list[str], name: str) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._child = ChildProcess(
            [*argv, f"-httpListenAddr=127.0.0.1:{self.port}"],
            log=workdir / f"{name}.log",
            name=name,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        self._child.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._child.running:
                raise RuntimeError(f"{self._child.name} exited:\n{self._child.tail(20)}")
            try:
                if requests.get(self.url + self.ready_path, timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self._child.stop()
        raise RuntimeError(f"{self._child.name} was not ready within {timeout} s")

    def stop(self) -> None:
        self._child.stop(timeout=15)


class VictoriaMetrics(_Server):
    """Debian's single-node VictoriaMetrics scraping ``targets`` every second."""

    def __init__(self, workdir: Path, targets: Sequence[str], job: str = "metrics-app") -> None:
        scrape = workdir / "scrape.yml"
        workdir.mkdir(parents=True, exist_ok=True)
        scrape.write_text(
            yaml.safe_dump(
                {
                    "scrape_configs": [
                        {
                            "job_name": job,
                            "scrape_interval": "1s",
                            "static_configs": [{"targets": list(targets)}],
                        }
                    ]
                }
            )
        )
        super().__init__(
            workdir,
            [
                VICTORIA_METRICS,
                f"-storageDataPath={workdir / 'data'}",
                f"-promscrape.config={scrape}",
                "-retentionPeriod=1d",
                # Answer with the newest samples, as Prometheus does: the default hides the
                # last 30 s, and a cached answer would hide a changed value.
                "-search.latencyOffset=0s",
                "-search.disableCache",
                "-loggerLevel=WARN",
            ],
            "victoria-metrics",
        )

    def values(self, query: str) -> list[float]:
        answer = requests.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5)
        data = answer.json()["data"]
        return [float(item["value"][1]) for item in data["result"]]


class VmAuth(_Server):
    """``vmauth`` in front of ``upstream``, letting through only the given bearer tokens."""

    ready_path = "/-/healthy"

    def __init__(self, workdir: Path, upstream: str, tokens: Sequence[str]) -> None:
        config = workdir / "auth.yml"
        workdir.mkdir(parents=True, exist_ok=True)
        users = [{"bearer_token": token, "url_prefix": upstream} for token in tokens]
        config.write_text(yaml.safe_dump({"users": users}))
        super().__init__(workdir, [VMAUTH, f"-auth.config={config}", "-loggerLevel=WARN"], "vmauth")

    def start(self, timeout: float = 30.0) -> None:
        # vmauth has no readiness path of its own: any answer means it listens.
        self._child.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                requests.get(self.url + "/", timeout=1)
                return
            except requests.RequestException:
                time.sleep(0.05)
        self._child.stop()
        raise RuntimeError(f"vmauth was not listening within {timeout} s")
