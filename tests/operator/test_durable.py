"""Bookkeeping after a status write waits out a database restart (``sentinel_operator.durable``).

The chaos soak found a pause whose history row and ``Paused`` message were lost because
PostgreSQL restarted in the second between the status write and the bookkeeping transaction
(docs/reliability.md). A real PostgreSQL is stopped while a Django process writes through
``durably``, and started again: the write lands once the server is back, in full.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import pytest

from testkit.databases import PostgresServer

_SCRIPT = """
import sys
import django
django.setup()
from django.core.management import call_command
from django.db import connection, transaction
from sentinel_operator.durable import durably

call_command("migrate", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE probe (n integer)")
print("ready", flush=True)
sys.stdin.readline()

def write():
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO probe VALUES (1)")
            cursor.execute("INSERT INTO probe VALUES (2)")

try:
    durably(write, what="the probe", patience=float(sys.argv[1]))
    print("written", flush=True)
except Exception as exc:
    print("failed", type(exc).__name__, flush=True)
"""


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def _writer(postgres: PostgresServer, patience: float) -> subprocess.Popen[str]:
    process = postgres.django_script(_SCRIPT, str(patience))
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", process.stderr
    return process


def test_a_write_during_a_database_restart_lands_once_the_server_is_back(
    postgres: PostgresServer,
) -> None:
    process = _writer(postgres, patience=60)
    try:
        assert process.stdin is not None and process.stdout is not None
        down = threading.Thread(target=postgres.restart, kwargs={"down_seconds": 3.0})
        down.start()
        # The write starts while the server is stopped (fast shutdown takes well under 3 s).
        process.stdin.write("\n")
        process.stdin.flush()
        down.join(timeout=90)
        assert process.stdout.readline().split() == ["written"], process.stderr
        rows = postgres.execute("SELECT n FROM probe ORDER BY n", database=postgres.database)
        # The transaction landed whole and once.
        assert rows == [(1,), (2,)]
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_database_that_stays_away_fails_the_write_after_the_patience(
    postgres: PostgresServer,
) -> None:
    process = _writer(postgres, patience=2)
    try:
        assert process.stdin is not None and process.stdout is not None
        postgres.stop()
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.stdout.readline().split() == ["failed", "OperationalError"]
    finally:
        process.kill()
        process.wait(timeout=30)
