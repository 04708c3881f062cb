"""Throwaway PostgreSQL and Redis servers from Debian's packages, for the ``ha`` configuration.

Used by ``tests/deploy/test_postgres_redis.py`` (docs/operations.md: the PostgreSQL + Redis
configuration runs in CI against real servers) and by ``bench.operator_throughput --redis`` (Redis
as django-q2's broker); ``PostgresServer.django_script`` starts a process of the site on the server
for the tests that restart it under a live connection. Each server lives in a fresh temporary
directory (or one the caller names), listens on 127.0.0.1 on a free port and is stopped (and its
temporary directory removed) by ``stop()``.

PostgreSQL refuses to run as root, so when the tests run as root ``initdb``, ``pg_ctl`` and the
server run as the ``postgres`` user the Debian package creates, in a directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testkit.lifecycle import StartStop
from testkit.paths import MANAGE, REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess, check_may_start
from testkit.site_env import with_defaults

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


class PostgresServer(StartStop):
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

    def start(self) -> None:
        """Run initdb, start the server and create the database."""
        check_may_start([str(self.bin / "postgres")], "PostgreSQL")
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
        self._start_server()
        self.execute(f"CREATE DATABASE {self.database}")

    def _start_server(self) -> None:
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

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server (fast shutdown: clients are disconnected), wait, start it again.

        The data directory, port and password stay; the chaos soak (``bench.soak``) uses it.
        """
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down_seconds)
        self._start_server()

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

    def django_script(self, script: str, *args: str, **env: str) -> subprocess.Popen[str]:
        """Start ``python -c script`` with the site's settings on this server's database.

        ``args`` follow the script on its command line, ``env`` adds to this process's
        environment. Standard input, output and error are text pipes, so that a test can step the
        script around a restart line by line; the caller kills the process.
        """
        return subprocess.Popen(
            [sys.executable, "-c", script, *args],
            cwd=REPO_ROOT,
            env=with_defaults(
                dict(
                    os.environ,
                    DATABASE_URL=self.url,
                    DJANGO_SETTINGS_MODULE="sentinel_site.settings",
                    **env,
                )
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``manage.py args`` on this server's database; its output is captured as text."""
        return subprocess.run(
            [sys.executable, str(MANAGE), *args],
            env={**os.environ, "DATABASE_URL": self.url},
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )

    def printed_by(self, script: str) -> Any:
        """Migrate the database, run ``script`` in ``manage.py shell``, return its last line's JSON.

        How a test runs product code on PostgreSQL: the test process's own database is SQLite.
        """
        migrated = self.manage("migrate", "--no-input", "-v0")
        if migrated.returncode != 0:
            raise ServerError(f"migrate failed on {self.database}: {migrated.stderr}")
        ran = self.manage("shell", "-c", script)
        if ran.returncode != 0:
            raise ServerError(f"the script failed on {self.database}: {ran.stderr}")
        return json.loads(ran.stdout.strip().splitlines()[-1])

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


class RedisServer(StartStop):
    """``redis-server`` in the foreground on a free port, without persistence."""

    def __init__(self, root: Path | None = None) -> None:
        self.port = free_port()
        # A directory of the caller's is kept after stop(); a temporary one is removed.
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="sentinel-redis-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / "redis.log"
        self._child: ChildProcess | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (None once stopped)."""
        return self._child.pid if self._child is not None else None

    def start(self, timeout: float = 15) -> None:
        """Start the server and wait until it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerError("redis-server is not installed; run: apt-get install -y redis-server")
        self._child = ChildProcess(
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
            log=self.log_path,
            name="redis-server",
        )
        self._child.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._child.running:
                raise ServerError(f"redis-server exited:\n{self.log_path.read_text()}")
            if self.ping():
                return
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
        child, self._child = self._child, None
        if child is not None:
            child.stop(timeout=10)
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)
