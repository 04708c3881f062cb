"""The benchmark's own read access to the operator's database: SQLite or PostgreSQL.

``bench.operator_throughput`` reads the history rows straight from the database (the lag of
every due time) and, for the capacity phase, moves every ``next_due_at`` with one UPDATE. The
operator's database is a SQLite file by default or a PostgreSQL database for the scale-out run
(``--database-url``); this hides the two drivers' differences (placeholders, time values).
``migrate`` and ``manage`` run ``manage.py`` on such a database (``manage`` for
``bench.api_pages`` and ``bench.soak_stack``, which set up the web side). Nothing here is
imported by product code or tests.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults


class BenchDb:
    """One connection to the operator's database, in autocommit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = url.startswith(("postgres://", "postgresql://"))
        if self.postgres:
            import psycopg

            self._pg = psycopg.connect(url, autocommit=True)
        else:
            self._lite = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
            self._lite.execute("PRAGMA busy_timeout=30000")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``?`` placeholders) and return its rows, times as aware datetimes."""
        values = [self._param(value) for value in params]
        if self.postgres:
            with self._pg.cursor() as cursor:
                cursor.execute(sql.replace("?", "%s"), values)  # type: ignore[arg-type]
                found = cursor.fetchall() if cursor.description else []
        else:
            with self._lite:
                found = self._lite.execute(sql, values).fetchall()
        return [tuple(self._value(value) for value in row) for row in found]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            (self._pg if self.postgres else self._lite).close()

    def _param(self, value: Any) -> Any:
        if isinstance(value, datetime) and not self.postgres:
            # Django stores aware datetimes in SQLite as naive UTC text in this form.
            return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
        return value

    @staticmethod
    def _value(value: Any) -> Any:
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == " ":
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(value).replace(tzinfo=UTC)
        return value


def migrate(url: str) -> None:
    """Apply the migrations to the (empty) database at ``url``."""
    env = with_defaults(dict(os.environ, DATABASE_URL=url))
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "-v0"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def manage(env: dict[str, str], *args: str) -> str:
    """Run ``manage.py`` with ``args`` in ``env``; return its output, raise when it fails."""
    done = subprocess.run(
        [sys.executable, str(MANAGE), *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"
