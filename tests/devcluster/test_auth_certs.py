"""devcluster.certs: the generated CA and serving certificate, checked by a real TLS handshake."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from devcluster.certs import TLSMaterial, ensure_tls


@contextmanager
def _tls_server(material: TLSMaterial) -> Iterator[int]:
    """Serve one TLS greeting per connection on a free port until the block ends."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(material.cert_file, material.key_file)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"hello")
            except (ssl.SSLError, OSError):
                pass  # a client that rejected our certificate

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def _greeting(port: int, cafile: Path, server_hostname: str) -> bytes:
    context = ssl.create_default_context(cafile=str(cafile))
    # What Python 3.13 turns on by default: RFC 5280 conformance (key identifiers, ...).
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=server_hostname) as tls,
    ):
        return tls.recv(5)


def test_python_ssl_verifies_the_server_by_ip_and_by_name(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path)
    with _tls_server(material) as port:
        assert _greeting(port, material.ca_file, "127.0.0.1") == b"hello"
        assert _greeting(port, material.ca_file, "localhost") == b"hello"


def test_verification_fails_for_a_host_not_in_the_certificate(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path, hosts=("127.0.0.1",))
    with _tls_server(material) as port, pytest.raises(ssl.SSLCertVerificationError):
        _greeting(port, material.ca_file, "localhost")


def test_verification_fails_against_another_devclusters_ca(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path / "one")
    other = ensure_tls(tmp_path / "two")
    assert other.ca_pem != material.ca_pem
    with _tls_server(material) as port, pytest.raises(ssl.SSLCertVerificationError):
        _greeting(port, other.ca_file, "127.0.0.1")


def test_certificates_have_the_extensions_strict_clients_require(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path, hosts=("127.0.0.1", "::1", "localhost", "devcluster.test"))
    ca = x509.load_pem_x509_certificate(material.ca_pem)
    server = x509.load_pem_x509_certificate(material.cert_file.read_bytes())

    ca_constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert ca_constraints.critical and ca_constraints.value.ca
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert ca.not_valid_after_utc - ca.not_valid_before_utc > dt.timedelta(days=3649)

    assert not server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "devcluster.test"]
    server.verify_directly_issued_by(ca)
    assert server.serial_number > 0  # Go rejects negative serial numbers


def test_private_keys_are_readable_by_the_owner_only(tmp_path: Path) -> None:
    material = ensure_tls(tmp_path)
    assert stat.S_IMODE(material.key_file.stat().st_mode) == 0o600
    assert material.ca_file.read_bytes() == material.ca_pem
    assert material.cert_file.name == "server.crt"
    assert material.key_file.name == "server.key"


def test_valid_material_is_reused_unchanged(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path)
    cert = first.cert_file.read_bytes()
    key = first.key_file.read_bytes()
    second = ensure_tls(tmp_path)
    assert second == first
    assert second.cert_file.read_bytes() == cert
    assert second.key_file.read_bytes() == key


def test_new_hosts_reissue_the_server_certificate_under_the_same_ca(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path, hosts=("127.0.0.1",))
    cert = first.cert_file.read_bytes()
    second = ensure_tls(tmp_path, hosts=("127.0.0.1", "localhost"))
    assert second.ca_pem == first.ca_pem
    assert second.cert_file.read_bytes() != cert
    with _tls_server(second) as port:
        assert _greeting(port, first.ca_file, "localhost") == b"hello"


def test_certificates_near_expiry_are_replaced(tmp_path: Path) -> None:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    first = ensure_tls(tmp_path, now=start)
    assert ensure_tls(tmp_path, now=start + dt.timedelta(days=3000)) == first
    assert ensure_tls(tmp_path, now=start + dt.timedelta(days=3000)).ca_pem == first.ca_pem
    renewed = ensure_tls(tmp_path, now=start + dt.timedelta(days=3640))
    assert renewed.ca_pem != first.ca_pem
    ca = x509.load_pem_x509_certificate(renewed.ca_pem)
    assert ca.not_valid_after_utc > start + dt.timedelta(days=7000)


def test_corrupt_files_are_regenerated(tmp_path: Path) -> None:
    first = ensure_tls(tmp_path)
    first.key_file.write_bytes(b"not a key")
    second = ensure_tls(tmp_path)
    assert second.ca_pem == first.ca_pem
    with _tls_server(second) as port:
        assert _greeting(port, second.ca_file, "127.0.0.1") == b"hello"
