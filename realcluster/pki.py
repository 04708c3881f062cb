"""Credentials for the real control plane, generated once per data dir.

Called by ``realcluster.__main__`` before it starts kube-apiserver: a private CA, the
apiserver's serving certificate signed by it, the ServiceAccount token signing key pair
(``--service-account-signing-key-file`` / ``--service-account-key-file`` and the controller
manager's ``--service-account-private-key-file``), and the static token file that gives the
admin (group ``system:masters``), kube-controller-manager, kube-scheduler and kwok their
bearer tokens. Bearer tokens rather than client certificates, so the admin kubeconfig has the
same shape as devcluster's and ``api_client(token=...)`` works the same way on both clusters.

Everything is reused when present, so a ``--data-dir`` keeps its CA, tokens and issued
ServiceAccount tokens valid across restarts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=3650)
# Backdated so a client whose clock is a little behind still accepts a fresh certificate.
BACKDATE = dt.timedelta(hours=1)
# The names in-cluster clients would use, plus the first address of the service range, as a
# kubeadm-made certificate has them; loopback for everything on this machine.
SERVICE_IP = "10.0.0.1"
SERVING_NAMES = (
    "127.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    SERVICE_IP,
)
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
# The scheduler's identity has its bootstrap ClusterRoleBinding in every cluster. kwok plays the
# kubelets of many nodes at once (the Node authorizer allows one node per identity), so it acts
# as an administrator under a name of its own, as kwok's own clusters set it up.
SCHEDULER_USER = "system:kube-scheduler"
KWOK_USER = "kwok"


@dataclass(frozen=True)
class Pki:
    """Paths of the generated files and the bearer tokens."""

    directory: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path
    sa_pub: Path
    token_file: Path
    admin_token: str
    controller_manager_token: str
    scheduler_token: str
    kwok_token: str

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate, as the kubeconfig embeds it."""
        return self.ca_cert.read_bytes()


def ensure(directory: Path) -> Pki:
    """Create whatever is missing in ``directory`` and return the full set."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    pki = Pki(
        directory=directory,
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
        token_file=directory / "tokens.csv",
        admin_token=_token(directory / "admin.token"),
        controller_manager_token=_token(directory / "controller-manager.token"),
        scheduler_token=_token(directory / "scheduler.token"),
        kwok_token=_token(directory / "kwok.token"),
    )
    now = dt.datetime.now(dt.UTC)
    if not (pki.ca_cert.exists() and pki.ca_key.exists()):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        _write(pki.ca_key, _private_pem(ca_key), private=True)
        _write(pki.ca_cert, _ca_certificate(ca_key, now).public_bytes(serialization.Encoding.PEM))
        # A new CA invalidates any serving certificate signed by an older one.
        pki.serving_cert.unlink(missing_ok=True)
    if not (pki.serving_cert.exists() and pki.serving_key.exists()):
        ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        _write(pki.serving_key, _private_pem(key), private=True)
        cert = _serving_certificate(ca_cert, ca_key, key, now)
        _write(pki.serving_cert, cert.public_bytes(serialization.Encoding.PEM))
    if not (pki.sa_key.exists() and pki.sa_pub.exists()):
        # RSA as kubeadm makes it: every consumer of ServiceAccount tokens verifies RS256.
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write(pki.sa_key, _private_pem(sa_key), private=True)
        public = sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        _write(pki.sa_pub, public)
    # Rewritten every time from the token files, so the format is always the current one.
    lines = [
        f'{pki.admin_token},admin,realcluster-admin,"system:masters"',
        f"{pki.controller_manager_token},{CONTROLLER_MANAGER_USER},{CONTROLLER_MANAGER_USER}",
        f"{pki.scheduler_token},{SCHEDULER_USER},{SCHEDULER_USER}",
        f'{pki.kwok_token},{KWOK_USER},{KWOK_USER},"system:masters"',
    ]
    _write(pki.token_file, ("\n".join(lines) + "\n").encode(), private=True)
    return pki


def _token(path: Path) -> str:
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    _write(path, (token + "\n").encode(), private=True)
    return token


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    # Atomic, so a launcher killed half-way never leaves a truncated key that a restart trusts.
    temporary = path.with_name(path.name + ".tmp")
    mode = 0o600 if private else 0o644
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rollout-sentinel realcluster"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _ca_certificate(key: ec.EllipticCurvePrivateKey, now: dt.datetime) -> x509.Certificate:
    name = _name("realcluster-ca")
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def _serving_certificate(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
) -> x509.Certificate:
    names: list[x509.GeneralName] = []
    for host in SERVING_NAMES:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    return (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + VALIDITY, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
