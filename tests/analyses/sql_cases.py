"""Scenarios for the plain-SQL paths of the analyses app, run on SQLite and on PostgreSQL.

``sentinel_db.claims.claim`` and ``analyses.mirror.watch_can_skip`` write their SQL by hand
(docs/performance.md, "Cuts 7 and 8") and ``sentinel_db.sql.DueRead`` sends Django's SQL
without the ORM (docs/performance.md, "Cut 9"), so what the ORM did for them (adapt a
datetime to what the database stores, convert it back) is theirs to get right on each
database. Each scenario runs on whatever database Django is configured with and returns plain
data: ``tests/analyses/test_claims.py`` runs them on the test SQLite database and, through
``manage.py shell``, on a throwaway PostgreSQL server, and checks both answers alike.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from analyses import mirror
from analyses.models import Analysis
from sentinel_db import claims
from tests.analyses.resources import paused_status, resource

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
UNTIL = NOW + timedelta(minutes=2)


def due_rows(count: int, prefix: str) -> list[claims.Due]:
    """Create ``count`` live analyses due just before ``NOW``; return them as the poller reads."""
    # Whole seconds and fractions both: SQLite stores each as its own text.
    Analysis.objects.bulk_create(
        Analysis(
            namespace="ns-claim",
            name=f"{prefix}{index}",
            uid=f"{prefix}-{index}",
            created_at=NOW,
            next_due_at=NOW - timedelta(seconds=index % 7, microseconds=(index % 2) * 1_250),
        )
        for index in range(count)
    )
    rows = Analysis.objects.filter(name__startswith=prefix).order_by("pk")
    return list(rows.values_list("pk", "next_due_at"))


def _live() -> Any:
    return Analysis.objects.filter(deleted_at__isnull=True)


def claim_a_pass(count: int, prefix: str = "pass") -> dict[str, Any]:
    """Claim ``count`` due rows in one pass; return the statements it took and what moved."""
    found = due_rows(count, prefix)
    with CaptureQueriesContext(connection) as queries:
        claimed = claims.claim(_live(), "next_due_at", found, UNTIL)
    held = Analysis.objects.filter(name__startswith=prefix, next_due_at=UNTIL).count()
    return {
        "statements": len(queries),
        "claimed_in_order": claimed == found,
        "now_claimed": held,
    }


def claim_after_a_race() -> dict[str, Any]:
    """Claim six rows of which, since they were read, two moved and one was deleted."""
    found = due_rows(6, "race")
    moved, deleted = [found[1][0], found[4][0]], found[2][0]
    # A reconcile (or another replica's claim) rescheduled two; the watch deleted one.
    elsewhere = NOW + timedelta(seconds=30)
    Analysis.objects.filter(pk__in=moved).update(next_due_at=elsewhere)
    Analysis.objects.filter(pk=deleted).update(deleted_at=NOW)

    claimed = claims.claim(_live(), "next_due_at", found, UNTIL)

    by_pk = dict(Analysis.objects.filter(name__startswith="race").values_list("pk", "next_due_at"))
    return {
        "claimed": [found.index((pk, at)) for pk, at in claimed],
        "moved_kept": [by_pk[pk] == elsewhere for pk in moved],
        "deleted_kept": by_pk[deleted] == found[2][1],
        # A second pass with the same stale read claims nothing: each row is claimed once.
        "again": claims.claim(_live(), "next_due_at", found, UNTIL + timedelta(seconds=1)),
    }


def watch_skips() -> dict[str, bool]:
    """Ask ``watch_can_skip`` about events against a mirrored row; name each answer."""
    # Mirrored with lastEvaluationTime 2026-11-29T10:05:00Z, resourceVersion 100.
    mirror.upsert_from_resource(resource("skip", uid="uid-skip", status=paused_status()))
    mirror.upsert_from_resource(resource("fresh", uid="uid-fresh"))

    def event(
        uid: str = "uid-skip", version: str = "101", evaluated: str = "", generation: int = 1
    ) -> dict[str, Any]:
        obj = resource("skip", uid=uid, resource_version=version, generation=generation)
        obj["status"] = copy.deepcopy(paused_status())
        obj["status"]["lastEvaluationTime"] = evaluated or "2026-11-29T10:05:01Z"
        return obj

    answers = {
        "same_version": mirror.watch_can_skip(event(version="100")),
        "newer_evaluation": mirror.watch_can_skip(event()),
        "same_evaluation": mirror.watch_can_skip(event(evaluated="2026-11-29T10:05:00Z")),
        "older_evaluation": mirror.watch_can_skip(event(evaluated="2026-11-29T10:04:59Z")),
        "other_generation": mirror.watch_can_skip(event(generation=2)),
        "never_evaluated": mirror.watch_can_skip(event(uid="uid-fresh")),
        "unknown_uid": mirror.watch_can_skip(event(uid="uid-none")),
    }
    mirror.mark_deleted("shop", "skip", "uid-skip", now=NOW)
    answers["deleted"] = mirror.watch_can_skip(event(version="100"))
    return answers


def due_reads() -> dict[str, Any]:
    """Read due rows with ``claims.DueRead`` as the dispatcher does; compare with the ORM's read.

    Rows in two namespaces, one deleted, due times with and without fractions of a second, two
    due at the same time (the primary key breaks the tie), one never due (NULL).
    """
    offsets = [-7.5, -3, -3, -0.000001, 0, 0.25, 2, 60]
    for index, seconds in enumerate(offsets):
        Analysis.objects.create(
            namespace="ns-read" if index % 3 else "ns-other",
            name=f"read{index}",
            uid=f"read-{index}",
            created_at=NOW,
            next_due_at=NOW + timedelta(seconds=seconds),
            deleted_at=NOW if index == 5 else None,
        )
    Analysis.objects.create(namespace="ns-read", name="never", uid="read-never", created_at=NOW)

    def read(at: datetime, namespaces: tuple[str, ...] = (), limit: int = 200) -> Any:
        rows = Analysis.objects.due(at).filter(name__startswith="read")
        if namespaces:
            rows = rows.filter(namespace__in=namespaces)
        return rows.values_list("pk", "namespace", "name", "next_due_at", "uid")[:limit]

    cases = {
        "now": (NOW, (), 200),
        "ahead": (NOW + timedelta(seconds=0.5), (), 200),
        "later": (NOW + timedelta(minutes=5), (), 200),
        "before": (NOW - timedelta(minutes=5), (), 200),
        "scoped": (NOW + timedelta(seconds=3), ("ns-read",), 200),
        "limited": (NOW + timedelta(seconds=3), (), 3),
    }
    answers: dict[str, Any] = {}
    for label, (at, namespaces, limit) in cases.items():
        due = claims.DueRead(lambda until: read(until, namespaces, limit))  # noqa: B023
        with CaptureQueriesContext(connection) as queries:
            first, again = due(at), due(at + timedelta(microseconds=1))
        expected = [tuple(row) for row in read(at, namespaces, limit)]
        answers[label] = {
            "names": [row[2] for row in first],
            "as_the_orm_reads": first == expected,
            "aware": all(row[3].tzinfo is not None for row in first),
            "statements": len(queries),
            "stable": again == first,
        }
    return answers
