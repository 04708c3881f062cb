"""A dispatch pass's read and claim, the watch's skip check: plain SQL on SQLite and PostgreSQL.

``sentinel_db.claims.claim`` is one ``UPDATE … RETURNING`` per pass and ``mirror.watch_can_skip``
one ``SELECT`` per event (docs/performance.md, "Cuts 7 and 8"); ``claims.DueRead`` is the pass's
read, compiled by Django once (docs/performance.md, "Cut 9"). The scenarios are in
``tests.analyses.sql_cases``; here they run on the test SQLite database and on a real PostgreSQL
server (``testkit.databases.PostgresServer``, migrated, the scenarios run in ``manage.py shell``),
which must answer alike.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from django.db import connection

from analyses.models import Analysis
from sentinel_db import claims
from testkit.databases import PostgresServer
from tests.analyses import sql_cases

# A dispatcher pass (sentinel_operator.dispatcher.BATCH) fits one statement; 1,200 rows take
# three on either database (SQLite's 999 parameters hold 499 rows, PostgreSQL's cap is 500).
PASS, LARGE, LARGE_STATEMENTS = 200, 1_200, 3

RACE = {
    # Rows 1 and 4 were rescheduled and row 2 deleted since the read: only 0, 3 and 5 move.
    "claimed": [0, 3, 5],
    "moved_kept": [True, True],
    "deleted_kept": True,
    "again": [],
}

DUE_READS = {
    label: {
        "names": names,
        "as_the_orm_reads": True,
        "aware": True,
        # Two passes, one statement each: the read is never compiled into a second query.
        "statements": 2,
        "stable": True,
    }
    for label, names in {
        # read5 is deleted, read7 not due for a minute; read1 and read2 share a due time.
        "now": ["read0", "read1", "read2", "read3", "read4"],
        "ahead": ["read0", "read1", "read2", "read3", "read4"],
        "later": ["read0", "read1", "read2", "read3", "read4", "read6", "read7"],
        "before": [],
        "scoped": ["read1", "read2", "read4"],
        "limited": ["read0", "read1", "read2"],
    }.items()
}

SKIPS = {
    "same_version": True,
    "newer_evaluation": True,
    "same_evaluation": False,
    "older_evaluation": False,
    "other_generation": False,
    "never_evaluated": True,
    "unknown_uid": False,
    "deleted": False,
}


@pytest.mark.django_db
def test_a_pass_is_claimed_in_one_statement() -> None:
    # Was one UPDATE per row inside a transaction: 201 statements for this pass.
    assert sql_cases.claim_a_pass(PASS) == {
        "statements": 1,
        "claimed_in_order": True,
        "now_claimed": PASS,
    }


@pytest.mark.django_db
def test_a_pass_beyond_the_parameter_limit_is_claimed_in_chunks() -> None:
    outcome = sql_cases.claim_a_pass(LARGE, prefix="large")
    assert outcome == {
        "statements": LARGE_STATEMENTS,
        "claimed_in_order": True,
        "now_claimed": LARGE,
    }
    assert connection.features.max_query_params == 999


@pytest.mark.django_db
def test_rows_moved_or_deleted_since_the_read_are_neither_claimed_nor_changed() -> None:
    assert sql_cases.claim_after_a_race() == RACE


@pytest.mark.django_db
def test_a_narrowing_is_optional_but_cannot_join_another_table() -> None:
    found = sql_cases.due_rows(2, "narrow")
    # No narrowing at all (an empty WHERE): every found row is claimable.
    assert claims.claim(Analysis.objects.all(), "next_due_at", found, sql_cases.UNTIL) == found
    # A narrowing through the metrics' table is refused, not silently dropped or mis-compiled.
    joined = Analysis.objects.filter(metrics__name="errors")
    with pytest.raises(ValueError, match="joins another table"):
        claims.claim(joined, "next_due_at", found, sql_cases.UNTIL)
    # Nothing can match an empty queryset: no statement, nothing claimed.
    assert claims.claim(Analysis.objects.none(), "next_due_at", found, sql_cases.UNTIL) == []


@pytest.mark.django_db
def test_the_due_read_answers_as_the_orm_in_one_statement_a_pass() -> None:
    assert sql_cases.due_reads() == DUE_READS


@pytest.mark.django_db
def test_a_due_read_must_hold_the_poll_time_once() -> None:
    # Ignoring the time, or using it twice, would read the wrong rows after the first pass.
    for read in (
        lambda at: Analysis.objects.live().values_list("pk"),
        lambda at: Analysis.objects.filter(next_due_at__lte=at, created_at__lte=at).values_list(),
    ):
        with pytest.raises(RuntimeError, match="not one parameter"):
            claims.DueRead(read)(sql_cases.NOW)


@pytest.mark.django_db
def test_the_watch_skips_only_its_own_evaluations_of_the_live_row() -> None:
    assert sql_cases.watch_skips() == SKIPS


SCRIPT = textwrap.dedent(
    f"""
    import json
    from tests.analyses import sql_cases
    print(json.dumps({{
        "pass": sql_cases.claim_a_pass({PASS}),
        "large": sql_cases.claim_a_pass({LARGE}, prefix="large"),
        "race": sql_cases.claim_after_a_race(),
        "skips": sql_cases.watch_skips(),
        "reads": sql_cases.due_reads(),
    }}))
    """
)


@pytest.mark.server
def test_the_same_scenarios_answer_alike_on_postgres() -> None:
    with PostgresServer() as postgres:
        outcome: dict[str, Any] = postgres.printed_by(SCRIPT)
    assert outcome == {
        "pass": {"statements": 1, "claimed_in_order": True, "now_claimed": PASS},
        "large": {"statements": LARGE_STATEMENTS, "claimed_in_order": True, "now_claimed": LARGE},
        "race": RACE,
        "skips": SKIPS,
        "reads": DUE_READS,
    }
