"""Pin the Django internals ``sentinel_db.sql`` relies on, so an upgrade fails here loudly.

Each test names the private API it checks (the module's docstring says why each is used); when
one fails after a Django upgrade, find the new way in Django's ``db/models/sql/compiler.py``,
``db/models/sql/query.py`` or the backends and change ``sentinel_db/sql.py`` (the only user).
"""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

import django
import pytest
from django.core import exceptions
from django.db import connection
from django.db.models.expressions import Col
from django.db.models.sql.compiler import SQLCompiler
from django.db.models.sql.query import Query

from analyses.models import Analysis
from sentinel_db import sql

AT = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def test_django_is_the_5_2_series_sql_was_written_for() -> None:
    assert django.VERSION[:2] == (5, 2), (
        f"Django {django.get_version()}: re-check sentinel_db/sql.py against it"
    )


def test_the_compiler_still_compiles_and_converts_as_sql_calls_it() -> None:
    assert callable(getattr(Query, "get_compiler", None)), "Query.get_compiler is gone"
    for name in ("as_sql", "compile", "results_iter"):
        assert callable(getattr(SQLCompiler, name, None)), f"SQLCompiler.{name} is gone"
    results_iter = inspect.signature(SQLCompiler.results_iter).parameters
    assert {"results", "tuple_expected"} <= set(results_iter), (
        f"SQLCompiler.results_iter takes {list(results_iter)}, not results and tuple_expected"
    )
    assert list(inspect.signature(SQLCompiler.compile).parameters)[:2] == ["self", "node"]
    assert isinstance(Analysis.objects.all().query.alias_map, dict), "Query.alias_map changed"
    assert issubclass(exceptions.EmptyResultSet, Exception)
    assert issubclass(exceptions.FullResultSet, Exception)


def test_the_column_converters_are_still_found_where_from_db_looks() -> None:
    col = Analysis._meta.get_field("last_evaluation_at").get_col(Analysis._meta.db_table)
    assert isinstance(col, Col)
    assert callable(connection.ops.get_db_converters)
    assert callable(col.get_db_converters)
    assert hasattr(connection.features, "max_query_params")


@pytest.mark.django_db
def test_a_compiled_read_holds_its_time_once_and_converts_as_the_orm() -> None:
    # What DueRead assumes: a lookup's value is one parameter, prepared as the field prepares
    # it; results_iter gives the ORM's types back from a plain cursor's rows.
    Analysis.objects.create(
        uid="uid-1", namespace="shop", name="checkout", created_at=AT, next_due_at=AT
    )
    read = sql.DueRead(
        lambda at: Analysis.objects.filter(next_due_at__lte=at).values_list("name", "next_due_at")
    )
    assert read(AT + timedelta(seconds=1)) == [("checkout", AT)]
    assert read(AT - timedelta(seconds=1)) == []
    assert list(Analysis.objects.values_list("name", "next_due_at")) == [("checkout", AT)]


@pytest.mark.django_db
def test_where_clauses_compile_to_sql_or_raise_the_two_exceptions() -> None:
    everything = Analysis.objects.all().query
    with pytest.raises(exceptions.FullResultSet):
        everything.get_compiler(using="default").compile(everything.where)
    nothing = Analysis.objects.filter(pk__in=[]).query
    with pytest.raises(exceptions.EmptyResultSet):
        nothing.get_compiler(using="default").compile(nothing.where)
    live = Analysis.objects.filter(deleted_at__isnull=True).query
    text, params = live.get_compiler(using="default").compile(live.where)
    assert "IS NULL" in text and list(params) == []


@pytest.mark.django_db
def test_from_db_converts_a_plain_cursors_datetime_as_the_orm() -> None:
    Analysis.objects.create(
        uid="uid-2", namespace="shop", name="cart", created_at=AT, last_evaluation_at=AT
    )
    row = sql.select_one(Analysis, ("name", "last_evaluation_at"), "uid", "uid-2")
    assert row.name == "cart"
    assert sql.from_db(Analysis, "last_evaluation_at", row.last_evaluation_at) == AT
