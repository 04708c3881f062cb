"""The admin site of Rollout Sentinel: the product first, the framework after, titles in words.

``sentinel_site.settings`` installs ``sentinel_site.apps.SentinelAdminConfig`` in place of
``django.contrib.admin``, which makes ``SentinelAdminSite`` the default site
(``django.contrib.admin.site``) that every app registers with. Against Django's site it changes
four things:

- The index (``/admin/``) is the overview: counts by verdict, paused rollouts and analyses not
  ready, each a link to the filtered list (``analyses.admin.views.overview_context``), above the
  sections.
- Sections are ordered by what a platform engineer comes for (``SECTIONS``): analyses, then
  notifications, then who may do what (users, groups, namespace grants, API tokens); whatever
  else is registered follows, and django-q2's task tables come last, for superusers only.
- Every list page is titled by what it lists ("Analyses", not "Select analysis to change"), and
  every change page by the object ("Edit API token ab12cd34", or "Analysis shop/checkout" where
  a model admin says so through ``object_title``), in the heading and the browser's title alike.
- Site texts, the login form and its template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.urls import URLPattern, URLResolver, re_path
from django.utils.text import capfirst

from accounts.login_limits import ThrottledLoginForm
from analyses.models import Analysis

# django-q2's task tables (schedules, successful and failed tasks, the queue): the operator's
# plumbing, not what anyone opens the admin for.
PLUMBING_APP = "django_q"


@dataclass(frozen=True)
class Section:
    """One section of the index and the sidebar: a title and its models, in this order."""

    name: str
    # The app whose index page the section's title links to.
    app_label: str
    # (app label, model name) pairs; a model the user may not see is left out.
    models: tuple[tuple[str, str], ...]


SECTIONS: tuple[Section, ...] = (
    Section("Rollout analyses", "analyses", (("analyses", "analysis"),)),
    Section("Notifications", "notifications", (("notifications", "delivery"),)),
    Section(
        "Users and access",
        "auth",
        (
            ("auth", "user"),
            ("auth", "group"),
            ("accounts", "namespacegrant"),
            ("accounts", "apitoken"),
        ),
    ),
)


class SuperusersOnly:
    """A model admin mixin: the model exists for superusers alone (list, pages and sidebar)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser and super().has_module_permission(request)  # type: ignore[misc]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser and super().has_view_permission(request, obj)  # type: ignore[misc]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return request.user.is_superuser and super().has_add_permission(request, *args)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser and super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser and super().has_delete_permission(request, obj)  # type: ignore[misc]


class PlainTitles:
    """A model admin mixin: titles that name what the page shows, not what to do on it.

    A model admin may define ``object_title(request, obj, editable)`` to word its change
    page's title itself; ``default_object_title`` is used otherwise.
    """

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        title = capfirst(self.model._meta.verbose_name_plural)  # type: ignore[attr-defined]
        return super().changelist_view(request, {"title": title, **(extra_context or {})})  # type: ignore[misc]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        titles: dict[str, Any] = {}
        obj = self.get_object(request, object_id)  # type: ignore[attr-defined]
        if obj is not None:
            editable = self.has_change_permission(request, obj)  # type: ignore[attr-defined]
            word = getattr(super(), "object_title", default_object_title)
            titles = {"title": word(request, obj, editable), "subtitle": None}
        return super().change_view(  # type: ignore[misc]
            request, object_id, form_url, {**titles, **(extra_context or {})}
        )


def default_object_title(request: HttpRequest, obj: Model, editable: bool) -> str:
    """Return "Edit API token ab12cd34" for a user who may edit, "API token ab12cd34" else."""
    noun = obj._meta.verbose_name
    return f"Edit {noun} {obj}" if editable else f"{capfirst(noun)} {obj}"


class SentinelAdminSite(admin.AdminSite):
    site_header = "Rollout Sentinel"
    site_title = "Rollout Sentinel"
    # The index's heading and title: the overview is its first content.
    index_title = "Overview"
    index_template = "admin/analyses/index.html"
    # Failed logins are counted per username and address (accounts.login_limits).
    login_form = ThrottledLoginForm
    # Django's login page with the level-one heading it lacks (screen readers, issue 14).
    login_template = "admin/analyses/login.html"

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        """Register as Django does, each model admin with ``PlainTitles`` (and
        ``SuperusersOnly`` for django-q2's tables) mixed in ahead of its own class."""
        models = [model_or_iterable] if isinstance(model_or_iterable, type) else model_or_iterable
        for model in models:
            base = admin_class or admin.ModelAdmin
            mixins: tuple[type, ...] = (PlainTitles,)
            if model._meta.app_label == PLUMBING_APP:
                mixins = (SuperusersOnly, PlainTitles)
            wrapped = type(base.__name__, (*mixins, base), {"__module__": base.__module__})
            super().register(model, wrapped, **options)

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        """Return the sections in ``SECTIONS`` order, then the other apps, django-q2 last.

        An app's own index page (``app_label`` given) keeps Django's list of that app.
        """
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps
        return arrange(apps, SECTIONS)

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """Render the overview (for users who may see analyses) above the sections."""
        context = dict(extra_context or {})
        analyses = self._registry.get(Analysis)
        if analyses is not None and analyses.has_view_or_change_permission(request):
            # Imported here: this site is built before the apps' admin modules are imported,
            # and any module of ``analyses.admin`` registers the analysis admin with it.
            from analyses.admin.views import overview_context

            context.update(overview_context(request))
        return super().index(request, context)

    def get_urls(self) -> list[URLResolver | URLPattern]:
        """Return Django's admin URLs, after the old addresses of the models that moved app."""
        return [
            re_path(rf"^analyses/(?P<model>{'|'.join(MOVED_TO_ACCOUNTS)})/", moved_to_accounts),
            *super().get_urls(),
        ]


# API tokens and namespace grants belonged to the analyses app until they moved to ``accounts``
# (docs/architecture.md): a bookmark of their old admin pages still finds them.
MOVED_TO_ACCOUNTS = ("apitoken", "namespacegrant")


def moved_to_accounts(request: HttpRequest, model: str) -> HttpResponse:
    """Redirect ``…/admin/analyses/<model>/…`` to the same page under ``…/admin/accounts/``."""
    old = f"/analyses/{model}/"
    target = request.get_full_path().replace(old, f"/accounts/{model}/", 1)
    return HttpResponsePermanentRedirect(target)


def arrange(apps: Sequence[dict[str, Any]], sections: Sequence[Section]) -> list[dict[str, Any]]:
    """Return Django's ``apps`` (the app list) regrouped into ``sections``, then the rest.

    Models a section does not name stay in their app's own entry, after the sections; an app
    left empty disappears; django-q2 comes last.
    """
    by_key = {
        (app["app_label"], model["object_name"].lower()): model
        for app in apps
        for model in app["models"]
    }
    placed: set[tuple[str, str]] = set()
    arranged: list[dict[str, Any]] = []
    for section in sections:
        models = [by_key[key] for key in section.models if key in by_key]
        if not models:
            continue
        placed.update(key for key in section.models if key in by_key)
        own = next((app for app in apps if app["app_label"] == section.app_label), None)
        arranged.append(
            {
                "name": section.name,
                "app_label": section.app_label,
                "app_url": own["app_url"] if own else models[0]["admin_url"],
                "has_module_perms": True,
                "models": models,
            }
        )
    rest = []
    for app in apps:
        label = app["app_label"]
        models = [m for m in app["models"] if (label, m["object_name"].lower()) not in placed]
        if models:
            rest.append({**app, "models": models})
    rest.sort(key=lambda app: app["app_label"] == PLUMBING_APP)
    return arranged + rest
