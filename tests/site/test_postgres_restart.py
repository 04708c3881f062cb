"""A PostgreSQL restart costs no request and no reconcile: persistent connections are checked.

With ``DATABASE_URL=postgres://…`` Django keeps each connection for ``CONN_MAX_AGE`` seconds.
After the server restarts, such a connection is dead; without a health check the next request
(the web app: a 500) or the next django-q2 task (the operator: a reconcile that can neither
record its outcome nor reschedule, so its analysis waits for the 120 s dispatch claim) fails on
it. The chaos soak found this (``docs/reliability.md``). A real PostgreSQL is restarted between
two queries of one Django process that, like Django around each request and django-q2 before
each task, calls ``close_old_connections`` first.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.databases import PostgresServer

_SCRIPT = """
import sys
import django
django.setup()
from django.db import close_old_connections, connection

def query():
    close_old_connections()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]

print(query(), flush=True)
sys.stdin.readline()
try:
    print(query(), flush=True)
except Exception as exc:
    print(type(exc).__name__, str(exc).splitlines()[0], flush=True)
"""


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def test_the_first_query_after_a_database_restart_succeeds(postgres: PostgresServer) -> None:
    process = postgres.django_script(_SCRIPT)
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().strip() == "1", process.stderr
        postgres.restart()
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "1"
    finally:
        process.kill()
        process.wait(timeout=30)
