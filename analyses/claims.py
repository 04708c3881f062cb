"""Claim due rows with a compare-and-set on their due column, give claims back, and poll.

The two pollers of the operator call these: ``sentinel_operator.dispatcher`` on
``Analysis.next_due_at`` and ``notifications.pump`` on ``Delivery.next_attempt_at``. A claim
moves a row's due time forward to ``until`` only if it still holds the time the poller read; so
a row is queued once even when two passes (or two replicas during a leader change) see it, and a
task lost with its worker is queued again when the claim runs out. When the queue refuses a
claimed row, ``release`` makes it due again at once, unless something else moved it meanwhile.
``poll`` is the loop both run on the leader, and ``DueRead`` the read each of their passes
starts with.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import close_old_connections, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.sql.compiler import SQLCompiler

# (primary key, the due time as read)
Due = tuple[int, datetime]

# Rows per statement where the database sets no parameter limit (PostgreSQL): a pass is the
# dispatcher's batch (200), so this only bounds a caller's unusually large one.
_MOST_ROWS = 500


# Stands for the poll's time while a read is compiled; found again among its parameters.
_MARKER = datetime(1999, 12, 31, 23, 59, 58, 654321, tzinfo=UTC)


class DueRead:
    """A poller's read of its due rows: compiled by Django once, sent as plain SQL each pass.

    ``DueRead(read)(until)`` returns the rows of the queryset ``read(until)`` (a
    ``values_list``), converted as the ORM converts them, without building and compiling that
    queryset again on every pass: the dispatcher polls ten times a second, and the compilation
    cost more than the read (docs/performance.md, "Cut 9"). ``read`` is called once, with a
    marker time that must appear once among the compiled parameters; only that parameter changes
    between passes. A compiler belongs to its thread's database connection, so the SQL is
    compiled again if another thread's connection calls.
    """

    def __init__(self, read: Callable[[datetime], models.QuerySet[Any]]) -> None:
        self._read = read(_MARKER)
        self._compiled: tuple[SQLCompiler, str, list[Any], int] | None = None

    def __call__(self, until: datetime) -> list[tuple[Any, ...]]:
        compiler, sql, params, at = self._compile()
        params = list(params)
        params[at] = _at_db(until, compiler.connection)
        with compiler.connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
        return list(compiler.results_iter(results=[found], tuple_expected=True))

    def _compile(self) -> tuple[SQLCompiler, str, list[Any], int]:
        connection = connections[self._read.db]
        if self._compiled is not None and self._compiled[0].connection is connection:
            return self._compiled
        compiler = self._read.query.get_compiler(using=self._read.db)
        sql, params = compiler.as_sql()
        marker = _at_db(_MARKER, connection)
        places = [index for index, param in enumerate(params) if param == marker]
        if len(places) != 1:
            raise RuntimeError(f"DueRead: the poll's time is not one parameter of {sql!r}")
        self._compiled = (compiler, sql, list(params), places[0])
        return self._compiled


_DUE_FIELD = models.DateTimeField()


def _at_db(at: datetime, connection: BaseDatabaseWrapper) -> Any:
    # As a DateTimeField lookup prepares its value (SQLite: UTC text; PostgreSQL: as is).
    return _DUE_FIELD.get_db_prep_value(at, connection=connection)


def claim(
    rows: models.QuerySet[models.Model], column: str, found: Sequence[Due], until: datetime
) -> list[Due]:
    """Move ``column`` of each of ``found`` to ``until`` unless it changed; return those moved.

    ``rows`` narrows what may be claimed (live analyses, pending deliveries): its WHERE, compiled
    by Django, is the UPDATE's, so a caller says it in the ORM as it reads. The whole pass is
    ONE statement, ``UPDATE … WHERE <narrowing> AND ((id = %s AND column = %s) OR …) RETURNING
    id`` (more only past the database's parameter limit), not one per row (docs/performance.md,
    "Cuts 7 and 8"); each row is still a compare-and-set on the time it was read with. The
    order of ``found`` is kept.
    """
    if not found:
        return []
    model, using = rows.model, rows.db
    connection = connections[using]
    try:
        narrowing, narrowing_params = _narrowing(rows)
    except EmptyResultSet:
        return []
    field = model._meta.get_field(column)
    quote = connection.ops.quote_name
    pk, due = quote(model._meta.pk.column), quote(field.column)  # type: ignore[union-attr]
    head = f"UPDATE {quote(model._meta.db_table)} SET {due} = %s WHERE {narrowing}("
    tail = f") RETURNING {pk}"
    at_db = functools.partial(field.get_db_prep_value, connection=connection)  # type: ignore[union-attr]
    per = _rows_per_statement(connection, len(narrowing_params))
    moved: set[int] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(found), per):
            chunk = found[start : start + per]
            params: list[Any] = [at_db(until), *narrowing_params]
            for key, at in chunk:
                params += [key, at_db(at)]
            either = " OR ".join([f"({pk} = %s AND {due} = %s)"] * len(chunk))
            cursor.execute(head + either + tail, params)
            moved.update(int(row[0]) for row in cursor.fetchall())
    return [(key, at) for key, at in found if key in moved]


def _narrowing(rows: models.QuerySet[models.Model]) -> tuple[str, list[Any]]:
    """Return the WHERE of ``rows`` as SQL ending in "AND " (or ""), and its parameters.

    Raise ``EmptyResultSet`` when it can match nothing. Only a narrowing on the table's own
    columns fits a plain UPDATE of that table: one that joins another is refused.
    """
    query = rows.query
    if len(query.alias_map) > 1:
        raise ValueError(
            f"claims: the narrowing of {rows.model.__name__} joins another table; "
            "claim() can only narrow by the claimed table's own columns."
        )
    try:
        sql, params = query.get_compiler(using=rows.db).compile(query.where)
    except FullResultSet:
        return "", []
    return f"({sql}) AND ", list(params)


def _rows_per_statement(connection: BaseDatabaseWrapper, fixed: int) -> int:
    """Return how many rows one UPDATE may hold: two parameters each, within the limit."""
    limit = connection.features.max_query_params
    if limit is None:
        return _MOST_ROWS
    # SQLite's 999 (Django's own figure): ``until``, the narrowing's, then two per row.
    return max(1, min(_MOST_ROWS, (limit - 1 - fixed) // 2))


def release(
    rows: models.QuerySet[models.Model], column: str, claimed: Sequence[Due], until: datetime
) -> None:
    """Make each of ``claimed`` due again at the time it was read, if it still holds the claim."""
    with transaction.atomic():
        for pk, at in claimed:
            rows.filter(pk=pk, **{column: until}).update(**{column: at})


def poll(
    stop: threading.Event,
    *,
    is_leader: Callable[[], bool],
    one_pass: Callable[[], bool],
    interval: float,
    log: logging.Logger,
    failed: str,
) -> None:
    """Run ``one_pass`` every ``interval`` until ``stop`` is set, while this replica leads.

    ``one_pass`` returns whether more are due at once (a full batch): then it runs again without
    waiting. A failed pass (a database hiccup) is logged as ``failed`` on ``log`` and retried
    after a second; it never ends the loop.
    """
    while not stop.is_set():
        busy = False
        if is_leader():
            try:
                busy = one_pass()
            except Exception:
                log.exception(failed)
                close_old_connections()
                stop.wait(1.0)
        if not busy:
            stop.wait(interval)
