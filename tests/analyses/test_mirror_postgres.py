"""The mirror's robustness on PostgreSQL, which, unlike SQLite, enforces column sizes and ranges.

On SQLite a 1,024-character reason fits a 64-character column, so the failure the issue
describes (one long reason fails the upsert, the failed sync makes the watch relist, forever)
only shows on PostgreSQL. A real server (``testkit.databases.PostgresServer``), migrated with
``manage.py migrate``, then ``sync_all`` run in a ``manage.py shell`` on that database: the long
reason is cut, the object whose count is beyond the integer column is skipped, the rest are
mirrored and the sync returns.
"""

from __future__ import annotations

import textwrap

import pytest

from testkit.databases import PostgresServer

SCRIPT = textwrap.dedent(
    """
    import copy, json
    from datetime import UTC, datetime
    from analyses import mirror
    from analyses.models import Analysis
    from tests.analyses.resources import paused_status, resource

    long_reason = resource("long-reason", uid="uid-long", status=paused_status())
    for item in long_reason["status"]["conditions"]:
        item["reason"] = "R" * 1024
    huge = resource("huge", uid="uid-huge", status=paused_status())
    huge["status"]["failures"] = 2**40
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    result = mirror.sync_all(
        [long_reason, huge, resource("last", uid="uid-last")], listed_at=now, now=now
    )
    rows = {row.name: row.ready_reason for row in Analysis.objects.live()}
    print(json.dumps({"skipped": result.skipped, "created": result.created, "rows": rows}))
    """
)


@pytest.mark.server
def test_sync_all_on_postgres_cuts_long_reasons_and_skips_out_of_range_counts() -> None:
    with PostgresServer() as postgres:
        outcome = postgres.printed_by(SCRIPT)
    # "huge" (2**40 failures, beyond PostgreSQL's integer) is skipped; "last" has no status yet.
    assert outcome == {"skipped": 1, "created": 2, "rows": {"long-reason": "R" * 64, "last": ""}}


RACE_SCRIPT = textwrap.dedent(
    """
    import json, threading, time
    from datetime import UTC, datetime
    from django.db import connection, transaction
    from analyses import mirror
    from analyses.models import Analysis
    from sentinel_core.resource import AnalysisResource
    from tests.analyses.resources import resource

    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    inserted, commit = threading.Event(), threading.Event()

    errors = []

    def other_process():
        # Another writer mirrors the same uid and commits only after this one has tried.
        try:
            raw = resource("checkout", uid="uid-race", resource_version="99")
            first = AnalysisResource.read(raw)
            with transaction.atomic():
                mirror.upsert(first, now=now)
                inserted.set()
                commit.wait(10)
        except Exception as error:
            errors.append(repr(error))
        finally:
            inserted.set()
            connection.close()

    other = threading.Thread(target=other_process)
    other.start()
    inserted.wait(10)
    # The insert below waits on the uncommitted row's unique uid; let it start waiting first.
    threading.Timer(1.0, commit.set).start()
    read = AnalysisResource.read(resource("checkout", uid="uid-race", resource_version="100"))
    row, written = mirror.upsert(read, now=now)
    other.join()
    rows = list(Analysis.objects.filter(uid="uid-race").values_list("resource_version", flat=True))
    print(json.dumps({"written": written, "rows": rows, "errors": errors}))
    """
)


@pytest.mark.server
def test_an_insert_racing_another_writer_of_the_same_uid_mirrors_onto_its_row() -> None:
    # The soak's watch relist beside a resync on PostgreSQL: UniqueViolation on the uid, a
    # traceback and a failed relist, before the upsert took the committed row instead.
    with PostgresServer() as postgres:
        outcome = postgres.printed_by(RACE_SCRIPT)
    assert outcome == {"written": True, "rows": ["100"], "errors": []}
