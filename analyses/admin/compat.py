"""The one place the admin leans on Django internals, and why.

``ModelAdmin.changeform_view`` and ``delete_view`` run a POST inside ``transaction.atomic``.
With SQLite's IMMEDIATE transactions that would hold the database's only write lock while the
Kubernetes API server answers, stalling the operator's writes; and the admin's saves write
nothing to the database themselves (the cluster first, then the mirror in short transactions of
its own, see ``analyses.services``). So the analysis admin calls the bodies those public views
wrap, ``_changeform_view`` and ``_delete_view``, without the transaction; and after a save it
makes the admin's in-memory object the mirror row the services wrote (``adopt_row``), which sets
``Model._state`` as ``Model.from_db`` would.

These are Django 5.2's private names. ``tests/ui/test_admin_compat.py`` checks each assumption
against the installed Django and fails with the name of what moved, so an upgrade that breaks
them fails loudly in ``make test`` instead of at a user's save.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest, HttpResponse


def changeform_without_transaction(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    object_id: str | None,
    form_url: str,
    extra_context: dict[str, Any] | None,
) -> HttpResponse:
    """Run the admin's add/change view without Django's wrapping transaction."""
    return model_admin._changeform_view(request, object_id, form_url, extra_context)


def delete_without_transaction(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    object_id: str,
    extra_context: dict[str, Any] | None,
) -> HttpResponse:
    """Run the admin's delete view without Django's wrapping transaction."""
    return model_admin._delete_view(request, object_id, extra_context)


def adopt_row(obj: models.Model, row: models.Model) -> None:
    """Make ``obj`` (the admin's unsaved instance) the saved ``row``, for the admin's redirect."""
    for field in type(row)._meta.concrete_fields:
        setattr(obj, field.attname, getattr(row, field.attname))
    obj._state.adding = False
    obj._state.db = row._state.db
