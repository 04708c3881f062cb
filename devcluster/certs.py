"""TLS material for devcluster: a private CA and a serving certificate signed by it.

The devcluster server (``devcluster.server``) calls :func:`ensure_tls` at start-up and
writes the CA into the admin kubeconfig, so kubectl and the Python client verify the
server exactly as they would verify a real cluster. The files are reused when present
and still valid, so a ``--data-dir`` keeps the same CA across restarts.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import ipaddress
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = dt.timedelta(days=3650)
SERVER_VALIDITY = dt.timedelta(days=3650)
# Certificates expiring sooner than this are replaced, so a long-lived data dir never
# serves a certificate that lapses during a test run.
RENEW_BEFORE = dt.timedelta(days=30)
# Backdated so clients whose clock is a little behind still accept a fresh certificate.
BACKDATE = dt.timedelta(hours=1)

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVER_CERT = "server.crt"
SERVER_KEY = "server.key"


@dataclass(frozen=True)
class TLSMaterial:
    """Paths of the generated files and the CA certificate in PEM form."""

    ca_pem: bytes
    ca_file: Path
    cert_file: Path
    key_file: Path


def ensure_tls(
    directory: Path,
    hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    *,
    now: dt.datetime | None = None,
) -> TLSMaterial:
    """Return the CA and serving certificate in ``directory``, creating them if needed.

    Existing files are kept when the CA and server certificate are valid at ``now`` for
    at least ``RENEW_BEFORE``, the server certificate is signed by the CA, matches its
    key and covers every host. A server certificate that no longer fits is re-issued by
    the same CA when its key is present; otherwise a new CA is made as well.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    moment = now if now is not None else dt.datetime.now(dt.UTC)
    with _locked(directory):
        ca = _load_ca(directory, moment)
        if ca is None:
            ca = _new_ca(moment)
            _write(directory / CA_KEY, _key_pem(ca[1]), private=True)
            _write(directory / CA_CERT, ca[0].public_bytes(serialization.Encoding.PEM))
        ca_cert, ca_key = ca
        if not _server_is_valid(directory, ca_cert, hosts, moment):
            cert, key = _new_server_cert(ca_cert, ca_key, hosts, moment)
            _write(directory / SERVER_KEY, _key_pem(key), private=True)
            _write(directory / SERVER_CERT, cert.public_bytes(serialization.Encoding.PEM))
    return TLSMaterial(
        ca_pem=(directory / CA_CERT).read_bytes(),
        ca_file=directory / CA_CERT,
        cert_file=directory / SERVER_CERT,
        key_file=directory / SERVER_KEY,
    )


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    # Two servers started on one data dir must not interleave half-written key pairs.
    with open(directory / ".tls.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600 if private else 0o644)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _fresh(cert: x509.Certificate, moment: dt.datetime) -> bool:
    return cert.not_valid_before_utc <= moment and moment + RENEW_BEFORE < cert.not_valid_after_utc


def _load_ca(
    directory: Path, moment: dt.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    try:
        cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
    except (OSError, ValueError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        return None
    if cert.public_key() != key.public_key() or not _fresh(cert, moment):
        return None
    return cert, key


def _server_is_valid(
    directory: Path, ca_cert: x509.Certificate, hosts: Sequence[str], moment: dt.datetime
) -> bool:
    try:
        cert = x509.load_pem_x509_certificate((directory / SERVER_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / SERVER_KEY).read_bytes(), None)
        cert.verify_directly_issued_by(ca_cert)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return False
    if cert.public_key() != key.public_key() or not _fresh(cert, moment):
        return False
    covered = set(san.get_values_for_type(x509.IPAddress)) | set(
        san.get_values_for_type(x509.DNSName)
    )
    return all(_general_name(host).value in covered for host in hosts)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Return the KeyUsage of an ECDSA certificate: signing only, and certs and CRLs for a CA."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _new_ca(moment: dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devcluster"),
            x509.NameAttribute(NameOID.COMMON_NAME, "devcluster-ca"),
        ]
    )
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - BACKDATE)
        .not_valid_after(moment + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _new_server_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    hosts: Sequence[str],
    moment: dt.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = min(moment + SERVER_VALIDITY, ca_cert.not_valid_after_utc)
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devcluster"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "devcluster-apiserver"),
                ]
            )
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName([_general_name(h) for h in dict.fromkeys(hosts)]),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key
