"""Pin the Django internals ``analyses.admin.compat`` relies on, so an upgrade fails here loudly.

Each test names the private API it checks; when one fails after a Django upgrade, find the new
way in Django's ``contrib/admin/options.py`` and change ``admin_compat`` (the only user).
"""

from __future__ import annotations

import inspect

import django
from django.contrib.admin import ModelAdmin
from django.db.models.base import ModelState

from analyses.admin import compat as admin_compat
from analyses.models import Analysis
from tests.ui import factories


def test_django_is_the_5_2_series_admin_compat_was_written_for() -> None:
    assert django.VERSION[:2] == (5, 2), (
        f"Django {django.get_version()}: re-check analyses/admin/compat.py against it"
    )


def test_public_views_still_wrap_the_private_bodies_in_a_transaction() -> None:
    for public, private in (
        (ModelAdmin.changeform_view, "_changeform_view"),
        (ModelAdmin.delete_view, "_delete_view"),
    ):
        source = inspect.getsource(public)
        assert "transaction.atomic" in source, f"{public.__name__} no longer opens a transaction"
        assert f"self.{private}(" in source, f"{public.__name__} no longer calls {private}"


def test_private_bodies_take_the_arguments_admin_compat_passes() -> None:
    changeform = inspect.signature(ModelAdmin._changeform_view)
    assert list(changeform.parameters) == [
        "self",
        "request",
        "object_id",
        "form_url",
        "extra_context",
    ]
    delete = inspect.signature(ModelAdmin._delete_view)
    assert list(delete.parameters) == ["self", "request", "object_id", "extra_context"]


def test_adopt_row_makes_an_unsaved_instance_the_saved_row(db: None) -> None:
    row = factories.analysis("checkout")
    obj = Analysis(namespace=row.namespace, name=row.name)
    assert obj._state.adding and obj.pk is None

    admin_compat.adopt_row(obj, row)

    assert isinstance(obj._state, ModelState)
    assert (obj.pk, obj.uid, obj._state.adding, obj._state.db) == (
        row.pk,
        row.uid,
        False,
        "default",
    )
