"""The Django admin for RolloutAnalyses: list, detail with graphs, edits to the cluster.

Django's admin autodiscovery imports this module. ``AnalysisAdmin`` keeps the admin's list and
forms but never lets it write the mirror: every save and delete goes to the cluster through
``analyses.services`` and the row is written from the API server's answer. When the cluster
refuses or cannot be reached, nothing has been written (the services touch the mirror only after
the cluster accepted, and the admin's own save hooks write nothing) and the form is shown again
with the user's input and the reason. The extra pages and actions live in
``analyses.admin.views``; the forms in ``analyses.admin.forms``; the graphs in
``analyses.charts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import csrf_protect_m
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince
from django.views.decorators.http import require_POST
from django.views.generic import RedirectView

from accounts import access, provider_access
from analyses import services
from analyses.admin import backtest, compat, views
from analyses.admin import templates as template_pages
from analyses.admin.forms import (
    METRIC_FIELDSETS,
    AnalysisForm,
    MetricForm,
    MetricInlineFormSet,
    Problem,
    group_value,
    included_metric_forms,
    place_all,
    spec_from_forms,
    template_line,
)
from analyses.admin.metric_groups import METRIC_GROUPS, MetricGroup
from analyses.models import Analysis, AnalysisMetric
from analyses.numbers import number_html
from sentinel_core.spec import DEFAULT_INTERVAL, InvalidSpecError

# Where a refusal from the cluster is kept between the failed save and the second rendering.
_REFUSAL = "_sentinel_cluster_refusal"


class _ClusterRefusedSave(Exception):
    """Raised from the save hooks to abandon a save or delete; carries the reasons to show."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(problem.message for problem in problems))
        self.problems = tuple(problems)

    @classmethod
    def saying(cls, line: str) -> _ClusterRefusedSave:
        """Return a refusal of the whole form, for a reason that names no field."""
        return cls([Problem(None, None, line)])


class _TriedDraft(Exception):
    """Raised from ``save_related`` by *Try on past rollouts*: a job, not a save; its page."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


# The edit form's submit button that backtests the form's spec instead of saving it.
TRY_DRAFT = "_backtest"


class LifecycleFilter(admin.SimpleListFilter):
    """Live analyses by default; deleted ones stay reachable for their history."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("deleted", "Deleted (history kept)"), ("all", "All")]

    def choices(self, changelist: Any) -> Any:
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Analysis]) -> QuerySet[Analysis]:
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "all":
            return queryset
        return queryset.filter(deleted_at__isnull=True)


class AnalysisMetricInline(admin.StackedInline):
    model = AnalysisMetric
    form = MetricForm
    formset = MetricInlineFormSet
    # Stacked: every input has its visible label and its help text linked (aria-describedby)
    # by Django itself (screen readers, issue 14).
    fieldsets = METRIC_FIELDSETS
    # A spec needs at least one metric (the CRD's minItems).
    min_num = 1
    extra = 0
    verbose_name = "metric"
    verbose_name_plural = "metrics"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Only named by the read-only fieldsets; never form fields.
        return [f"{column}_shown" for column in _NUMBER_COLUMNS]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        parent = self.admin_site._registry.get(Analysis)
        if obj is None or parent is None or parent.has_change_permission(request, obj):
            return self.fieldsets
        # A read-only page (a deleted analysis) shows a model column with Django's formatting
        # and a form-only field as empty: name the display methods below instead.
        return [
            (title, {"fields": _shown_names(options["fields"])})
            for title, options in self.fieldsets
        ]

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        refusal = getattr(request, _REFUSAL, ())
        # The refusal's problems that name a metric's field go on that metric's form.
        return type(formset.__name__, (formset,), {"cluster_refusal": refusal})


# The metric's number columns, shown readable (analyses.numbers) on a read-only page.
_NUMBER_COLUMNS = ("max_value", "max_increase_percent", "max_increase_absolute", "min_samples_min")


def _shown_names(fields: Any) -> Any:
    """Return fieldset ``fields`` with each number column replaced by its display method."""
    if isinstance(fields, str):
        return f"{fields}_shown" if fields in _NUMBER_COLUMNS else fields
    return tuple(_shown_names(field) for field in fields)


def _number_display(column: str, label: str) -> Any:
    @admin.display(description=label)
    def show(inline: admin.StackedInline, metric: AnalysisMetric) -> str:
        value = getattr(metric, column)
        return "-" if value is None else number_html(value)

    return show


def _group_display(group: MetricGroup, field: str, label: str) -> Any:
    @admin.display(description=label)
    def show(inline: admin.StackedInline, metric: AnalysisMetric) -> Any:
        value = group.initial(group_value(metric, group.key)).get(field)
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "no"
        return number_html(value) if isinstance(value, float) else value

    return show


for _column in _NUMBER_COLUMNS:
    _label = MetricForm.base_fields[_column].label or _column
    setattr(AnalysisMetricInline, f"{_column}_shown", _number_display(_column, _label))
# The groups' fields are the form's alone; read-only, Django looks them up on the inline.
for _group in METRIC_GROUPS:
    for _name, _field in _group.form_fields().items():
        setattr(AnalysisMetricInline, _name, _group_display(_group, _name, str(_field.label)))


@admin.register(Analysis)
class AnalysisAdmin(admin.ModelAdmin):
    form = AnalysisForm
    inlines = [AnalysisMetricInline]
    list_display = (
        "namespace",
        "name",
        "target",
        "verdict",
        "failures_of_limit",
        "paused_badge",
        "last_evaluation",
    )
    list_display_links = ("name",)
    list_filter = (LifecycleFilter, "namespace", "last_verdict", "paused", "ready")
    search_fields = ("name", "namespace", "target_name")
    # Bulk actions would bypass the cluster-first delete; deletion is one analysis at a time.
    actions = None
    list_per_page = 50
    save_on_top = False

    # -- list columns ----------------------------------------------------------------------

    @admin.display(description="target", ordering="target_name")
    def target(self, obj: Analysis) -> str:
        return obj.target_name

    @admin.display(description="verdict", ordering="last_verdict")
    def verdict(self, obj: Analysis) -> str:
        return verdict_badge(obj)

    @admin.display(description="failures")
    def failures_of_limit(self, obj: Analysis) -> str:
        tone = "fail" if obj.failures >= obj.failure_limit else ("warn" if obj.failures else "")
        return format_html(
            '<span class="sentinel-failures {}">{} / {}</span>',
            tone,
            obj.failures,
            obj.failure_limit,
        )

    @admin.display(description="paused", ordering="-paused")
    def paused_badge(self, obj: Analysis) -> str:
        # Not paused is the normal state: nothing to show, rather than a red cross.
        if not obj.paused:
            return ""
        return mark_safe('<span class="sentinel-badge paused">Paused</span>')

    @admin.display(description="last evaluation", ordering="last_evaluation_at")
    def last_evaluation(self, obj: Analysis) -> str:
        if obj.last_evaluation_at is None:
            return mark_safe('<span class="sentinel-muted">never</span>')
        return format_html(
            '<time datetime="{}" title="{} UTC">{} ago</time>',
            obj.last_evaluation_at.isoformat(),
            obj.last_evaluation_at.strftime("%Y-%m-%d %H:%M:%S"),
            timesince(obj.last_evaluation_at),
        )

    def object_title(self, request: HttpRequest, obj: Analysis, editable: bool) -> str:
        # The page is the analysis's status first and its spec form after: one title for both
        # (see sentinel_site.admin_site.PlainTitles).
        return f"Analysis {obj}"

    # -- permissions: model permissions say what, accounts.access says where ---------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Analysis]:
        # Outside SENTINEL_NAMESPACES or the user's namespaces, an analysis does not exist.
        return access.visible(request.user, super().get_queryset(request))

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        # A malformed id is "no such analysis", like an unknown one.
        if not str(object_id).isdigit():
            return None
        return super().get_object(request, object_id, from_field)

    def has_change_permission(self, request: HttpRequest, obj: Analysis | None = None) -> bool:
        # A deleted analysis is history: shown, never edited.
        return (
            super().has_change_permission(request, obj)
            and not (obj and obj.is_deleted)
            and (obj is None or access.allows(request.user, access.Verb.UPDATE, obj.namespace))
        )

    def has_perm_to_act(self, request: HttpRequest) -> bool:
        """Return whether the user holds the model permission resume and evaluate need."""
        return super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Analysis | None = None) -> bool:
        return (
            super().has_delete_permission(request, obj)
            and not (obj and obj.is_deleted)
            and (obj is None or access.allows(request.user, access.Verb.DELETE, obj.namespace))
        )

    # -- forms -----------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Analysis | None = None) -> Any:
        evaluation = ["interval", "failure_limit", "failure_window", "dry_run", "notify"]
        evaluation.append("false_pause_rate")
        if obj is None or self.has_change_permission(request, obj):
            evaluation.append("seen_generation")
        return [
            ("Resource", {"fields": ["namespace", "name", "target_kind", "target_name"]}),
            # spec.templates and spec.args (docs/templates.md): metrics written once, elsewhere.
            ("Templates", {"fields": ["templates", "args"]}),
            ("Evaluation", {"fields": evaluation}),
        ]

    @admin.display(description="target kind")
    def target_kind(self, obj: Analysis) -> str:
        # Read-only pages, as interval: spec.target.kind.
        return obj.target_kind

    @admin.display(description="interval")
    def interval(self, obj: Analysis) -> str:
        # Shown when the page is read-only; the form's own field is used when editing. The CRD
        # has no default for it (docs/resource.md): absent means the templates' or 30s.
        return str(
            obj.spec.get("interval") or f"not set ({DEFAULT_INTERVAL} unless a template sets it)"
        )

    @admin.display(description="templates")
    def templates(self, obj: Analysis) -> str:
        # Read-only pages, as interval: spec.templates as the form's field writes them.
        return ", ".join(template_line(ref) for ref in _dicts(obj.spec.get("templates")))

    @admin.display(description="arguments")
    def args(self, obj: Analysis) -> str:
        # Read-only pages, as interval: spec.args as NAME=VALUE.
        return ", ".join(f"{a.get('name')}={a.get('value')}" for a in _dicts(obj.spec.get("args")))

    @admin.display(description="notify")
    def notify(self, obj: Analysis) -> str:
        # Read-only pages, as interval: the channel names of spec.notify.
        return ", ".join(str(n) for n in obj.spec.get("notify") or [])

    @admin.display(description="false pause rate")
    def false_pause_rate(self, obj: Analysis) -> str:
        # Read-only pages, as interval: spec.falsePauseRate, empty when the default applies.
        return str(obj.spec.get("falsePauseRate") or "")

    def get_readonly_fields(self, request: HttpRequest, obj: Analysis | None = None) -> Any:
        # Kubernetes names are immutable: renaming is deleting and creating.
        return ("namespace", "name") if obj is not None else ()

    def get_form(
        self, request: HttpRequest, obj: Analysis | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, change, **kwargs)
        extra: dict[str, Any] = {"sentinel_user": request.user}
        refusal = getattr(request, _REFUSAL, ())
        if refusal:
            extra["cluster_refusal"] = refusal
        return type(form.__name__, (form,), extra)

    # -- pages -----------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        site = self.admin_site
        return [
            # The overview's address before it became the index; old bookmarks still work.
            path(
                "overview/",
                RedirectView.as_view(pattern_name="admin:index", permanent=True),
                name="analyses_analysis_overview",
            ),
            # Templates have no model of their own (no mirror): their pages live here.
            path(
                "templates/",
                site.admin_view(self._templates),
                name="analyses_templates",
            ),
            path(
                "templates/cluster/<str:name>/",
                site.admin_view(self._cluster_template),
                name="analyses_clustertemplate",
            ),
            path(
                "templates/namespaced/<str:namespace>/<str:name>/",
                site.admin_view(self._template),
                name="analyses_template",
            ),
            path(
                "<path:object_id>/resume/",
                site.admin_view(require_POST(self._resume)),
                name="analyses_analysis_resume",
            ),
            path(
                "<path:object_id>/evaluate/",
                site.admin_view(require_POST(self._evaluate)),
                name="analyses_analysis_evaluate",
            ),
            path(
                "backtest/<int:job_id>/",
                site.admin_view(self._backtest_draft),
                name="analyses_analysis_backtest_draft",
            ),
            path(
                "<path:object_id>/backtest/",
                site.admin_view(require_POST(self._backtest)),
                name="analyses_analysis_backtest",
            ),
            path(
                "<path:object_id>/backtest/<int:job_id>/",
                site.admin_view(self._backtest_job),
                name="analyses_analysis_backtest_job",
            ),
            *super().get_urls(),
        ]

    def _templates(self, request: HttpRequest) -> HttpResponse:
        return template_pages.list_view(self, request)

    def _cluster_template(self, request: HttpRequest, name: str) -> HttpResponse:
        return template_pages.cluster_view(self, request, name)

    def _template(self, request: HttpRequest, namespace: str, name: str) -> HttpResponse:
        return template_pages.namespaced_view(self, request, namespace, name)

    def _backtest(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return backtest.start(self, request, object_id)

    def _backtest_job(self, request: HttpRequest, object_id: str, job_id: int) -> HttpResponse:
        return backtest.page(self, request, object_id, str(job_id))

    def _backtest_draft(self, request: HttpRequest, job_id: int) -> HttpResponse:
        return backtest.draft_page(self, request, job_id)

    def _resume(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return views.resume(self, request, object_id)

    def _evaluate(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return views.evaluate(self, request, object_id)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {
            "overview_url": reverse("admin:index"),
            "templates_url": template_pages.list_url(),
        }
        return super().changelist_view(request, {**context, **(extra_context or {})})

    @csrf_protect_m
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        if object_id is not None:
            obj = self.get_object(request, object_id)
            if obj is not None and self.has_view_or_change_permission(request, obj):
                context.update(views.detail_context(self, request, obj))
                context["resolved_metrics"] = template_pages.resolved_metrics(obj)
        # Outside Django's wrapping transaction: see analyses.admin.compat for why.
        try:
            try:
                return compat.changeform_without_transaction(
                    self, request, object_id, form_url, context
                )
            except _ClusterRefusedSave as refused:
                # Render the user's input again with the cluster's answer as the form's error
                # (see AnalysisForm.clean).
                setattr(request, _REFUSAL, refused.problems)
                return compat.changeform_without_transaction(
                    self, request, object_id, form_url, context
                )
        except _TriedDraft as tried:
            # Nothing was saved or logged: the draft is a backtest job; follow it.
            return HttpResponseRedirect(tried.url)

    # -- writes: to the cluster, never straight to the mirror ------------------------------

    def save_model(
        self, request: HttpRequest, obj: Analysis, form: forms.ModelForm, change: bool
    ) -> None:
        # Nothing yet: the spec is complete only with the metrics inline (save_related).
        pass

    def save_related(
        self,
        request: HttpRequest,
        form: forms.ModelForm,
        formsets: Sequence[forms.BaseFormSet],
        change: bool,
    ) -> None:
        assert isinstance(form, AnalysisForm)
        obj: Analysis = form.instance
        # Each refusal's reasons go on the fields they name, as the REST API names them.
        metric_forms = included_metric_forms(formsets)
        try:
            spec = spec_from_forms(form, formsets)
            refused = provider_access.refusals(obj.namespace, [m.provider for m in spec.metrics])
            if refused:
                pairs = [(field, line) for field, lines in refused.items() for line in lines]
                raise _ClusterRefusedSave(place_all(pairs, metric_forms))
            if TRY_DRAFT in request.POST:
                # Validated as a save would be (edit or create rights, the allow-list), then
                # not saved: the edit form's draft, or the add form's of an analysis to come.
                raise _TriedDraft(backtest.start_draft(request, obj, spec.to_dict()))
            if change:
                row = services.update_analysis(obj, spec)
            else:
                row = services.create_analysis(obj.namespace, obj.name, spec)
        except InvalidSpecError as exc:
            pairs = [(error.field, error.message) for error in exc.errors]
            raise _ClusterRefusedSave(place_all(pairs, metric_forms)) from exc
        except services.ResourceRejected as exc:
            pairs = [(field, line) for field, lines in exc.field_errors.items() for line in lines]
            problems = (Problem(None, None, exc.message), *place_all(pairs, metric_forms))
            raise _ClusterRefusedSave(problems) from exc
        except services.ServiceError as exc:
            raise _ClusterRefusedSave.saying(views.describe_failure(exc)) from exc
        compat.adopt_row(obj, row)

    def construct_change_message(
        self, request: HttpRequest, form: forms.ModelForm, formsets: Any, add: bool = False
    ) -> list[dict[str, Any]]:
        # The inline formsets were never saved (the mirror follows the cluster), so only the
        # main form's changes are described; metric edits show up as a change of "metrics".
        message = super().construct_change_message(request, form, [], add)
        if not add and any(formset.has_changed() for formset in formsets):
            for entry in message:
                if "changed" in entry:
                    entry["changed"]["fields"].append("metrics")
                    break
            else:
                message.append({"changed": {"fields": ["metrics"]}})
        return message

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Only the resource is deleted; the mirror row and its history stay for the retention,
        # so Django's list of cascaded rows (and their delete permissions) does not apply.
        names = [f"RolloutAnalysis {obj} in the cluster (its history is kept)" for obj in objs]
        return names, {"analyses": len(names)}, set(), []

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        # Django logs before deleting; here the entry waits until the cluster has deleted
        # (delete_model), so a refused deletion leaves no "deleted" entry behind.
        return []

    def delete_model(self, request: HttpRequest, obj: Analysis) -> None:
        try:
            services.delete_analysis(obj)
        except services.ServiceError as exc:
            raise _ClusterRefusedSave.saying(views.describe_failure(exc)) from exc
        super().log_deletions(request, [obj])

    @csrf_protect_m
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Outside a transaction for the same reason as changeform_view.
        try:
            return compat.delete_without_transaction(self, request, object_id, extra_context)
        except _ClusterRefusedSave as refused:
            for problem in refused.problems:
                messages.error(request, f"Not deleted. {problem.message}")
            return HttpResponseRedirect(reverse("admin:analyses_analysis_change", args=[object_id]))


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value or [] if isinstance(item, dict)]


def verdict_badge(obj: Analysis) -> str:
    """Return the verdict as a coloured badge, with the Ready reason when not ready."""
    verdict = obj.last_verdict or "None"
    label = obj.last_verdict or "not evaluated"
    badge = format_html('<span class="sentinel-badge verdict-{}">{}</span>', verdict.lower(), label)
    if obj.deleted_at is not None:
        return format_html('{} <span class="sentinel-tag">deleted</span>', badge)
    if not obj.ready and obj.ready_reason:
        return format_html(
            '{} <span class="sentinel-tag notready" title="Ready=False">{}</span>',
            badge,
            obj.ready_reason,
        )
    return badge
