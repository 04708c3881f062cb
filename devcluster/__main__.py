"""Command line: ``python -m devcluster --port PORT --kubeconfig PATH [--data-dir DIR]``.

Serves the API over HTTPS until SIGTERM/SIGINT, writing the admin kubeconfig once ready.
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import shutil
import signal
import ssl
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import NoReturn

from devcluster.auth import Authenticator, load_or_create_key
from devcluster.certs import ensure_tls
from devcluster.faults import Faults
from devcluster.handlers import Cluster
from devcluster.kubeconfig import write as write_kubeconfig
from devcluster.resources import Registry
from devcluster.server import ApiServer, App
from devcluster.store import Store

ADMIN_TOKEN_FILE = "admin-token"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"devcluster: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m devcluster",
        description="Local Kubernetes API server for development and tests (docs/devcluster.md).",
    )
    parser.add_argument("--port", type=int, required=True, help="port to listen on (0: any)")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write it")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep state here")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument(
        "--watch-history", type=int, default=1000, help="events kept for resuming watches"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return parser


def _admin_token(data_dir: Path | None) -> str:
    if data_dir is None:
        return secrets.token_urlsafe(32)
    path = data_dir / ADMIN_TOKEN_FILE
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    # Created with mode 0600 in one step: never readable by others, not even for a moment.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token + "\n")
    return token


def _fail(message: str) -> int:
    sys.stderr.write(f"devcluster: {message}\n")
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run the server; return the process exit code."""
    args = _parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        return _fail(f"invalid port {args.port}")
    if args.watch_history < 1:
        return _fail("--watch-history must be at least 1")
    data_dir: Path | None = args.data_dir
    scratch: Path | None = None
    try:
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            tls_dir = data_dir / "tls"
        else:
            scratch = Path(tempfile.mkdtemp(prefix="devcluster-"))
            tls_dir = scratch / "tls"
        return _serve(args, data_dir, tls_dir)
    except OSError as exc:
        return _fail(str(exc))
    except ValueError as exc:  # a corrupt snapshot or key file in the data dir
        return _fail(f"cannot start from {data_dir}: {exc}")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _serve(args: argparse.Namespace, data_dir: Path | None, tls_dir: Path) -> int:
    hosts = tuple(dict.fromkeys([args.host, "127.0.0.1", "localhost"]))
    tls = ensure_tls(tls_dir, hosts)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls.cert_file), str(tls.key_file))
    token = _admin_token(data_dir)
    authenticator = Authenticator(load_or_create_key(data_dir), token)
    store = Store(data_dir, history_size=args.watch_history)
    cluster = Cluster(store, Registry(), issue_token=authenticator.issue_token)
    cluster.bootstrap()
    app = App(cluster=cluster, authenticator=authenticator, faults=Faults(), verbose=args.verbose)
    try:
        server = ApiServer((args.host, args.port), app, context)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return _fail(f"port {args.port} is already in use")
        raise
    port = server.server_address[1]
    app.address = f"{args.host}:{port}"
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2})
    thread.daemon = True
    thread.start()
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    write_kubeconfig(args.kubeconfig, f"https://{url_host}:{port}", tls.ca_pem, token)
    sys.stderr.write(f"devcluster: serving on https://{url_host}:{port}\n")
    while not stop.wait(0.5):
        pass
    store.close()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
