"""Throwaway PostgreSQL and Redis servers from Debian's packages, for the ``ha`` configuration.

Used by ``tests/deploy/test_postgres_redis.py`` (SPEC §12: the PostgreSQL + Redis configuration
runs in CI against real servers). Each server lives in a fresh temporary directory, listens on
127.0.0.1 on a free port and is stopped (and its directory removed) by ``stop()``.

PostgreSQL refuses to run as root, so when the tests run as root ``initdb``, ``pg_ctl`` and the
server run as the ``postgres`` user the Debian package creates, in a directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from tests.support.prometheus import _die_with_parent, free_port

# The Debian package installs versioned binaries off PATH; take the newest.
_PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
_PG_USER = "postgres"


class ServerError(RuntimeError):
    """A throwaway server could not be started."""


def postgres_bin() -> Path:
    """Return the directory of the newest installed PostgreSQL's binaries."""
    found = sorted(glob.glob(_PG_BIN_GLOB), key=lambda p: int(Path(p).parent.name))
    if not found:
        raise ServerError(
            "PostgreSQL is not installed; run: apt-get install -y postgresql redis-server"
        )
    return Path(found[-1])


class PostgresServer:
    """A PostgreSQL cluster created by ``initdb`` with one password-protected superuser."""

    def __init__(
        self, *, user: str = "sentinel", password: str = "s3cret:/@pw", db: str = ""
    ) -> None:
        self.user, self.password = user, password
        self.database = db or "sentinel"
        self.port = free_port()
        self.bin = postgres_bin()
        # mkdtemp under /tmp (world-traversable), not pytest's 0700 tmp_path: the postgres
        # user must reach it when we run as root.
        self.root = Path(tempfile.mkdtemp(prefix="sentinel-pg-"))
        self.data = self.root / "data"
        self.log_path = self.root / "postgres.log"
        self._as_root = os.geteuid() == 0

    def _run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = list(command)
        if self._as_root:
            argv = ["runuser", "-u", _PG_USER, "--", *argv]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise ServerError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def start(self) -> PostgresServer:
        """Run initdb, start the server and create the database; return self when it answers."""
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if self._as_root:
            entry = pwd.getpwnam(_PG_USER)
            for path in (self.root, password_file):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            f"--pwfile={password_file}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-sync",
        )
        password_file.unlink()
        # fsync off and a socket in our own directory: a disposable server, nothing shared.
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log_path),
            "-o",
            options,
            "-w",
            "-t",
            "30",
            "start",
        )
        self.execute(f"CREATE DATABASE {self.database}")
        return self

    def execute(
        self, sql: str, params: tuple[object, ...] = (), database: str = "postgres"
    ) -> list[tuple[object, ...]]:
        """Run one statement (autocommit) over TCP with the password; return its rows."""
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=database,
            autocommit=True,
            connect_timeout=10,
        ) as connection:
            cursor = connection.execute(sql, params or None)
            return list(cursor.fetchall()) if cursor.description else []

    @property
    def url(self) -> str:
        """Return the DATABASE_URL, with the password percent-encoded as users must."""
        from urllib.parse import quote

        return (
            f"postgres://{quote(self.user)}:{quote(self.password, safe='')}"
            f"@127.0.0.1:{self.port}/{self.database}"
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(ServerError, subprocess.TimeoutExpired):
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class RedisServer:
    """``redis-server`` in the foreground on a free port, without persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="sentinel-redis-"))
        self.log_path = self.root / "redis.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15) -> RedisServer:
        """Start the server; return self once it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerError("redis-server is not installed; run: apt-get install -y redis-server")
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [
                    binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--dir",
                    str(self.root),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerError(f"redis-server exited:\n{self.log_path.read_text()}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise ServerError(f"redis-server did not answer within {timeout} s")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
