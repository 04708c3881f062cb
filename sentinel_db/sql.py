"""SQL written by hand on Django's connection: the one module that does, and why.

The operator's hot paths cost more in Django's query compilation than in the database
(docs/performance.md, "Cuts 7 and 8", "Cut 9", "Bookkeeping as plain SQL"): the dispatcher's
and the notification pump's read ten times a second, the claim of a pass, the watch's check of
each event, and the two writes of every evaluation (the mirror's status with the next due time,
the history rows). So these statements are built once and sent through a cursor, and what they
read is converted as the ORM would. Callers keep saying what to read or narrow in the ORM where
they can (``DueRead``, ``compare_and_set``); the statements are built from the models' own
metadata, so a column added to a model later is written as the ORM would write it.

The Django internals this leans on (Django 5.2), each undocumented or private:

- ``Query.get_compiler(using).as_sql()``: a queryset's SQL and parameters, compiled once
  (``DueRead``), and ``SQLCompiler.results_iter(results=[rows], tuple_expected=True)`` to
  convert rows a plain cursor read, as the queryset would have.
- ``SQLCompiler.compile(query.where)`` with ``EmptyResultSet`` / ``FullResultSet`` (what it
  raises for a WHERE that matches nothing / everything), and ``Query.alias_map`` (the tables a
  queryset joins): a queryset's WHERE inside a hand-written UPDATE (``compare_and_set``).
- ``Field.get_col(alias)``, ``connection.ops.get_db_converters(col)`` and
  ``Col.get_db_converters(connection)``: converting one column a plain cursor read
  (``from_db``).
- ``connection.features.max_query_params``: SQLite's parameter limit.

``tests/db/test_sql_internals.py`` checks each against the installed Django and fails naming
what moved, so an upgrade that changes them fails in ``make check`` instead of in the operator.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, NamedTuple, TypeVar

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Col
from django.db.models.sql.compiler import SQLCompiler

R = TypeVar("R", bound=tuple[Any, ...])

# Rows per statement where the database sets no parameter limit (PostgreSQL): a pass is the
# dispatcher's batch (200), so this only bounds a caller's unusually large one.
_MOST_ROWS = 500

# Stands for the poll's time while a read is compiled; found again among its parameters.
_MARKER = datetime(1999, 12, 31, 23, 59, 58, 654321, tzinfo=UTC)
_DUE_FIELD = models.DateTimeField()


class DueRead(Generic[R]):
    """A poller's read of its due rows: compiled by Django once, sent as plain SQL each pass.

    ``DueRead(read, row)(until)`` returns the rows of the queryset ``read(until)`` (a
    ``values_list``), converted as the ORM converts them, each made a ``row`` (a named tuple
    with the ``values_list``'s fields, in order; plain tuples without one), without building
    and compiling that queryset again on every pass: the dispatcher polls ten times a second,
    and the compilation cost more than the read. ``read`` is called once, with a marker time
    that must appear once among the compiled parameters; only that parameter changes between
    passes. A compiler belongs to its thread's database connection, so the SQL is compiled again
    if another thread's connection calls.
    """

    def __init__(
        self,
        read: Callable[[datetime], models.QuerySet[Any]],
        row: Callable[[tuple[Any, ...]], R] | None = None,
    ) -> None:
        self._read = read(_MARKER)
        self._row = row
        self._compiled: tuple[SQLCompiler, str, list[Any], int] | None = None

    def __call__(self, until: datetime) -> list[R]:
        compiler, sql, params, at = self._compile()
        params = list(params)
        params[at] = _at_db(until, compiler.connection)
        with compiler.connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
        rows = compiler.results_iter(results=[found], tuple_expected=True)
        make = self._row
        return [make(row) for row in rows] if make is not None else list(rows)  # type: ignore[misc]

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


def _at_db(at: datetime, connection: BaseDatabaseWrapper) -> Any:
    # As a DateTimeField lookup prepares its value (SQLite: UTC text; PostgreSQL: as is).
    return _DUE_FIELD.get_db_prep_value(at, connection=connection)


def compare_and_set(
    rows: models.QuerySet[Any], column: str, found: Sequence[tuple[Any, datetime]], to: datetime
) -> set[Any]:
    """Set ``column`` of each ``(pk, at)`` of ``found`` to ``to`` where it still holds ``at``.

    Return the primary keys moved. ``rows`` narrows what may move: its WHERE, compiled by
    Django, is the UPDATE's. The whole of ``found`` is ONE statement, ``UPDATE … WHERE
    <narrowing> AND ((id = %s AND column = %s) OR …) RETURNING id`` (more only past the
    database's parameter limit), not one per row. A narrowing that joins another table is
    refused (``ValueError``); one that can match nothing moves nothing.
    """
    model, using = rows.model, rows.db
    connection = connections[using]
    try:
        narrowing, narrowing_params = _narrowing(rows)
    except EmptyResultSet:
        return set()
    field = model._meta.get_field(column)
    quote = connection.ops.quote_name
    pk, due = quote(model._meta.pk.column), quote(field.column)
    head = f"UPDATE {quote(model._meta.db_table)} SET {due} = %s WHERE {narrowing}("
    tail = f") RETURNING {pk}"
    at_db = functools.partial(field.get_db_prep_value, connection=connection)
    per = _rows_per_statement(connection, len(narrowing_params))
    moved: set[Any] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(found), per):
            chunk = found[start : start + per]
            params: list[Any] = [at_db(to), *narrowing_params]
            for key, at in chunk:
                params += [key, at_db(at)]
            either = " OR ".join([f"({pk} = %s AND {due} = %s)"] * len(chunk))
            cursor.execute(head + either + tail, params)
            moved.update(row[0] for row in cursor.fetchall())
    return moved


def _narrowing(rows: models.QuerySet[Any]) -> tuple[str, list[Any]]:
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


def insert(model: type[models.Model], rows: Sequence[Mapping[str, Any]], *, returning: bool) -> Any:
    """INSERT ``rows`` (by attname) in one statement; return the first row's pk if ``returning``.

    Every concrete column is written, a column ``rows`` do not name with its field default, so
    a column added to the model later is filled as the ORM would fill it.
    """
    fields = _fields(model)
    params = [
        field.get_db_prep_save(
            row[field.attname] if field.attname in row else field.get_default(), connection
        )
        for row in rows
        for field in fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, len(rows), returning, connection.vendor), params)
        return cursor.fetchone()[0] if returning else None


@functools.cache
def _fields(model: type[models.Model]) -> tuple[models.Field[Any, Any], ...]:
    return tuple(field for field in model._meta.concrete_fields if not field.primary_key)


@functools.cache
def _insert_sql(model: type[models.Model], count: int, returning: bool, vendor: str) -> str:
    quote = connection.ops.quote_name
    fields = _fields(model)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)}"
        f" ({', '.join(quote(field.column) for field in fields)})"
        f" VALUES {', '.join([one] * count)}"
    )
    return sql + f" RETURNING {quote(model._meta.pk.column)}" if returning else sql


def update_returning(
    model: type[models.Model],
    assignments: Mapping[str, Any],
    where: Mapping[str, Any],
    *,
    null: tuple[str, ...] = (),
) -> Any:
    """UPDATE the row matching ``where`` (and ``null`` columns NULL); return its pk, or None.

    ``assignments`` are values by column name, prepared as the ORM saves them; ``where``'s are
    compared as given (keys, numbers). One statement with RETURNING, no model instance.
    """
    prepared = [
        model._meta.get_field(column).get_db_prep_save(value, connection)
        for column, value in assignments.items()
    ]
    sql = _update_sql(model, tuple(assignments), tuple(where), null, connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*prepared, *where.values()])
        found = cursor.fetchone()
    return found[0] if found else None


@functools.cache
def _update_sql(
    model: type[models.Model],
    columns: tuple[str, ...],
    where: tuple[str, ...],
    null: tuple[str, ...],
    vendor: str,
) -> str:
    """Return the UPDATE (one text per database vendor; both quote names alike, RETURNING too)."""
    quote = connection.ops.quote_name
    column = _column_name(model)
    assignments = ", ".join(f"{quote(column(c))} = %s" for c in columns)
    conditions = [f"{quote(column(c))} = %s" for c in where]
    conditions += [f"{quote(column(c))} IS NULL" for c in null]
    return (
        f"UPDATE {quote(model._meta.db_table)} SET {assignments}"
        f" WHERE {' AND '.join(conditions)} RETURNING {quote(model._meta.pk.column)}"
    )


def select_one(model: type[models.Model], columns: tuple[str, ...], key: str, value: Any) -> Any:
    """Return ``columns`` of the row whose unique ``key`` is ``value`` as a named tuple, or None.

    The values are as the cursor read them: convert one with ``from_db`` where its type matters.
    """
    with connection.cursor() as cursor:
        cursor.execute(_select_sql(model, columns, key, connection.vendor), [value])
        found = cursor.fetchone()
    return _row_type(model, columns)._make(found) if found is not None else None


@functools.cache
def _select_sql(model: type[models.Model], columns: tuple[str, ...], key: str, vendor: str) -> str:
    # ``key`` is unique: no ORDER BY, no LIMIT.
    quote = connection.ops.quote_name
    column = _column_name(model)
    listed = ", ".join(quote(column(c)) for c in columns)
    return f"SELECT {listed} FROM {quote(model._meta.db_table)} WHERE {quote(column(key))} = %s"


@functools.cache
def _row_type(model: type[models.Model], columns: tuple[str, ...]) -> type[NamedTuple]:
    return collections.namedtuple(f"{model.__name__}Row", columns)  # type: ignore[return-value]


def from_db(model: type[models.Model], column: str, value: Any) -> Any:
    """Return ``value`` as read by a plain cursor, converted as the ORM converts it.

    SQLite hands back a datetime column as a naive datetime (or text), PostgreSQL as an aware
    one; the backend's converters make both the aware datetime the ORM returns.
    """
    col = _col(model, column)
    converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
    for converter in converters:
        value = converter(value, col, connection)
    return value


@functools.cache
def _col(model: type[models.Model], column: str) -> Col:
    return model._meta.get_field(column).get_col(model._meta.db_table)  # type: ignore[union-attr]


def _column_name(model: type[models.Model]) -> Callable[[str], str]:
    def column(name: str) -> str:
        return model._meta.get_field(name).column  # type: ignore[union-attr]

    return column
