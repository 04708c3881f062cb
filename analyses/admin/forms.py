"""Forms of the admin's analysis page: the spec fields, the metrics inline, and the spec they make.

``analyses.admin.AnalysisAdmin`` uses ``AnalysisForm`` and ``MetricInlineFormSet``, then calls
``spec_from_forms`` to turn the validated forms into the custom resource's ``spec``, which goes
to the cluster through ``analyses.services``. The forms never save rows themselves: the mirror is
written from the API server's answer. The rules are ``sentinel_core.spec.parse_spec``'s (the
one source of them); the field checks here only give earlier, per-field messages. When the
spec or the cluster refuses a save, ``place`` puts each reason on the form field that answers
for its path (``spec.metrics[1].compare.confidence`` is the second metric's Confidence), and the
forms show them there on the second rendering. A metric's optional objects (``compare``) are
edited as groups of labelled fields (``analyses.admin.metric_groups``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from django import forms
from django.core.validators import MinValueValidator, RegexValidator

from accounts import access, provider_access, scope
from analyses.admin.metric_groups import METRIC_GROUPS
from analyses.models import Analysis, AnalysisMetric
from sentinel_core.kinds import KINDS
from sentinel_core.provider import DEFAULT_PROVIDER
from sentinel_core.spec import (
    DEFAULT_FAILURE_LIMIT,
    DEFAULT_INTERVAL,
    DEFAULT_TARGET_KIND,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    AnalysisSpec,
    check_interval,
    parse_duration,
)
from sentinel_core.templates import TemplatedSpec, parse_analysis_spec

_DNS1123_LABEL = RegexValidator(
    DNS1123_LABEL,
    "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or "
    "digit.",
)
_DNS1123_SUBDOMAIN = RegexValidator(
    DNS1123_SUBDOMAIN,
    "Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit.",
)

# Shown when the spec was edited elsewhere (kubectl, the API) after this form was loaded.
STALE_FORM_MESSAGE = (
    "This analysis was changed in the cluster after you opened this page: reload it and make "
    "your change again."
)


@dataclass(frozen=True)
class Problem:
    """One reason a save was refused, placed on the form field that answers for it."""

    # A metric form's prefix ("metrics-0"); None for the analysis form.
    form: str | None
    # None: the form as a whole (shown above its fields).
    field: str | None
    message: str


# Where the analysis form answers for a spec path (the REST API's paths).
_ANALYSIS_FIELDS = {
    "namespace": "namespace",
    "name": "name",
    "spec.target": "target_name",
    "spec.target.name": "target_name",
    "spec.target.kind": "target_kind",
    "spec.interval": "interval",
    "spec.failureLimit": "failure_limit",
    "spec.failureWindow": "failure_window",
    "spec.dryRun": "dry_run",
    "spec.notify": "notify",
    "spec.falsePauseRate": "false_pause_rate",
    "spec.templates": "templates",
    "spec.args": "args",
}
# Where a metric form answers for a path inside ``spec.metrics[i]``.
_METRIC_FIELDS = {
    "name": "name",
    "query": "query",
    "provider": "provider",
    "maxValue": "max_value",
    "maxIncrease": "max_increase_percent",
    "maxIncrease.percent": "max_increase_percent",
    "maxIncrease.absolute": "max_increase_absolute",
    "baseline": "baseline_before_rollout",
    "baseline.beforeRollout": "baseline_before_rollout",
    "baseline.offset": "baseline_offset",
    "minSamples": "min_samples_query",
    "minSamples.query": "min_samples_query",
    "minSamples.min": "min_samples_min",
}
_METRIC_PATH = re.compile(r"^spec\.metrics\[(\d+)\](?:\.(.+))?$")
_NOTIFY_ITEM = re.compile(r"^spec\.notify\[\d+\]$")
# A path inside spec.templates or spec.args (``spec.args[1].value``): that list's field.
_LIST_ITEM = re.compile(r"^(spec\.(?:templates|args))[\[.]")
# How the templates field names a cluster template: ``cluster/NAME`` (a name has no slash).
CLUSTER_PREFIX = "cluster/"


def place(path: str, message: str, metric_forms: Sequence[forms.Form]) -> Problem:
    """Return the problem at ``path`` on the field answering for it.

    ``metric_forms`` are the forms the spec's metrics were built from, in order
    (``included_metric_forms``). A path no field answers for stays on the form as a whole,
    with its path, so the reader still learns which part of the resource it means.
    """
    match = _METRIC_PATH.match(path)
    if match is not None and int(match.group(1)) < len(metric_forms):
        form = metric_forms[int(match.group(1))]
        inner = match.group(2) or ""
        head = inner.split(".", 1)[0]
        group = next((g for g in METRIC_GROUPS if g.key == head), None)
        if group is not None:
            field: str | None = group.field_for(inner[len(head) + 1 :])
        else:
            field = _METRIC_FIELDS.get(inner)
        if field is not None and field in form.fields:
            return Problem(form.prefix, field, message)
        return Problem(form.prefix, None, f"{path}: {message}" if inner else message)
    listed = _LIST_ITEM.match(path)
    if listed is not None:
        return Problem(None, _ANALYSIS_FIELDS[listed.group(1)], f"{path}: {message}")
    field = _ANALYSIS_FIELDS.get("spec.notify" if _NOTIFY_ITEM.match(path) else path)
    if field is not None:
        return Problem(None, field, message)
    return Problem(None, None, f"{path}: {message}" if path else message)


def place_all(
    errors: Iterable[tuple[str, str]], metric_forms: Sequence[forms.Form]
) -> tuple[Problem, ...]:
    """Return ``place`` of every (path, message) pair."""
    return tuple(place(path, message, metric_forms) for path, message in errors)


def _add_problem(form: forms.Form, problem: Problem) -> None:
    if problem.field is not None and problem.field in form.fields:
        form.add_error(problem.field, problem.message)
    elif problem.field is not None:
        # A field this rendering shows read-only (a name, once created): say which.
        form.add_error(None, f"{problem.field}: {problem.message}")
    else:
        form.add_error(None, problem.message)


class AnalysisForm(forms.ModelForm):
    """The spec fields of one analysis, plus the generation the user was looking at."""

    target_kind = forms.ChoiceField(
        choices=[(kind, kind) for kind in KINDS],
        initial=DEFAULT_TARGET_KIND,
        # Left out of a post (a script, an older page): the CRD's default, Deployment.
        required=False,
        label="Target kind",
        help_text=(
            "What to pause: a Deployment (spec.paused), a StatefulSet (its rollingUpdate "
            "partition) or a DaemonSet (its updateStrategy); docs/status.md#pausing-each-kind."
        ),
    )

    # Left empty, the spec has none: the templates' value applies, else 30s (docs/templates.md).
    interval = forms.CharField(
        required=False,
        max_length=32,
        help_text=(
            "How often to evaluate: a duration such as 30s, 1m or 1m30s (at least 5s). Empty: "
            "the templates' interval, else 30s."
        ),
        widget=forms.TextInput(attrs={"placeholder": DEFAULT_INTERVAL, "size": 8}),
    )
    templates = forms.CharField(
        required=False,
        max_length=2600,
        label="Templates",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40, "spellcheck": "false"}),
        help_text=(
            "Templates whose metrics this analysis evaluates, one per line, in order: "
            "cluster/NAME for a cluster template, NAME for one of this namespace "
            "(docs/templates.md). Its own metrics below are then optional."
        ),
    )
    args = forms.CharField(
        required=False,
        max_length=20000,
        label="Arguments",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40, "spellcheck": "false"}),
        help_text=(
            "The templates' arguments, one per line as NAME=VALUE (spaces around either are "
            "dropped); one value serves every template that declares the name."
        ),
    )
    notify = forms.CharField(
        required=False,
        max_length=700,
        label="Notify",
        help_text=(
            "Notification channels by name, comma-separated (at most 10); the operator's "
            "SENTINEL_NOTIFY_CONFIG defines them."
        ),
    )
    false_pause_rate = forms.FloatField(
        required=False,
        label="False pause rate",
        help_text=(
            "The budget per rollout of the sequential metrics: the chance that a good rollout "
            "is paused by them at any point; more than 0, at most 0.2, 0.05 if empty."
        ),
        widget=forms.NumberInput(attrs={"step": "any", "size": 6, "placeholder": "0.05"}),
    )
    # The metadata.generation the page showed; a different one at save time means someone
    # else edited the spec meanwhile, and saving would silently undo their edit.
    seen_generation = forms.IntegerField(widget=forms.HiddenInput, required=False)

    # Set by the admin on a second rendering, after the spec or the cluster refused the save.
    cluster_refusal: ClassVar[tuple[Problem, ...]] = ()
    # Set by the admin: the user saving, whose right to create in the namespace is checked.
    sentinel_user: ClassVar[Any] = None

    class Meta:
        model = Analysis
        fields = (
            "namespace",
            "name",
            "target_name",
            "interval",
            "failure_limit",
            "failure_window",
            "dry_run",
        )
        labels = {
            "target_name": "Target name",
            "failure_limit": "Failure limit",
            "failure_window": "Failure window",
        }
        help_texts = {
            "target_name": "A workload of the kind above, in the same namespace.",
            "failure_limit": "Consecutive failed evaluations that pause the rollout.",
            "failure_window": (
                "Optional, at least the failure limit: pause at failure-limit failures among the "
                "last this many Pass or Fail evaluations instead of consecutive ones."
            ),
            "dry_run": "Evaluate and report, but never pause the rollout.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "namespace" in self.fields:
            self.fields["namespace"].validators.append(_DNS1123_LABEL)
        if "name" in self.fields:
            self.fields["name"].validators.append(_DNS1123_SUBDOMAIN)
        if "target_name" in self.fields:
            self.fields["target_name"].required = True
            self.fields["target_name"].validators.append(_DNS1123_SUBDOMAIN)
        if "failure_limit" in self.fields:
            field = self.fields["failure_limit"]
            field.validators.append(MinValueValidator(1))
            field.widget.attrs.update(min=1, placeholder=str(DEFAULT_FAILURE_LIMIT))
            # Left empty, the spec has none: the templates' limit applies, else 3.
            field.required = False
            field.initial = None
            field.help_text = (
                f"{field.help_text} Empty: the templates' limit, else {DEFAULT_FAILURE_LIMIT}."
            )
        if self.instance.pk is not None:
            spec = self.instance.spec or {}
            # The spec as written, not the mirror's column (which holds the default applied).
            self.initial["failure_limit"] = spec.get("failureLimit")
            self.fields["interval"].initial = spec.get("interval", "")
            self.fields["templates"].initial = "\n".join(
                template_line(ref) for ref in spec.get("templates") or [] if isinstance(ref, dict)
            )
            self.fields["args"].initial = "\n".join(
                f"{arg.get('name', '')}={arg.get('value', '')}"
                for arg in spec.get("args") or []
                if isinstance(arg, dict)
            )
            self.fields["target_kind"].initial = self.instance.target_kind
            self.fields["notify"].initial = ", ".join(self.instance.spec.get("notify") or [])
            self.fields["false_pause_rate"].initial = self.instance.spec.get("falsePauseRate")
            self.fields["seen_generation"].initial = self.instance.generation

    def clean_namespace(self) -> str:
        namespace: str = self.cleaned_data["namespace"]
        if not scope.in_scope(namespace):
            raise forms.ValidationError(scope.outside_message(namespace))
        if self.instance.pk is None and not access.allows(
            self.sentinel_user, access.Verb.CREATE, namespace
        ):
            raise forms.ValidationError(f"You may not create analyses in namespace {namespace}.")
        return namespace

    def clean_interval(self) -> str:
        interval: str = self.cleaned_data["interval"].strip()
        if not interval:
            return ""
        try:
            check_interval(parse_duration(interval), interval)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return interval

    def clean_templates(self) -> list[dict[str, Any]] | None:
        """Return ``spec.templates`` as the lines say; None when the post left the field out."""
        if self._omitted("templates"):
            return None
        refs: list[dict[str, Any]] = []
        for line in self.cleaned_data["templates"].splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith(CLUSTER_PREFIX):
                refs.append({"name": line[len(CLUSTER_PREFIX) :].strip(), "clusterScope": True})
            else:
                refs.append({"name": line})
        return refs

    def clean_args(self) -> list[dict[str, str]] | None:
        """Return ``spec.args`` as the lines say; None when the post left the field out."""
        if self._omitted("args"):
            return None
        given: list[dict[str, str]] = []
        for number, line in enumerate(self.cleaned_data["args"].splitlines(), start=1):
            if not line.strip():
                continue
            name, equals, value = line.partition("=")
            if not equals or not name.strip():
                raise forms.ValidationError(f"Line {number} is not NAME=VALUE: {line.strip()!r}.")
            given.append({"name": name.strip(), "value": value.strip()})
        return given

    def _omitted(self, name: str) -> bool:
        # A post without the field at all (a script, a page from before it existed) keeps the
        # spec's value; a field sent empty clears it.
        widget = self.fields[name].widget
        return widget.value_omitted_from_data(self.data, self.files, self.add_prefix(name))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for problem in self.cluster_refusal:
            if problem.form is None:
                _add_problem(self, problem)
        seen = cleaned.get("seen_generation")
        if self.instance.pk is not None and seen is not None and seen != self.instance.generation:
            raise forms.ValidationError(STALE_FORM_MESSAGE)
        return cleaned


# The metrics inline's columns, in the order of a spec.metrics[] entry.
METRIC_FIELDS = (
    "name",
    "query",
    "max_value",
    "max_increase_percent",
    "max_increase_absolute",
    "baseline_offset",
    "baseline_before_rollout",
    "min_samples_query",
    "min_samples_min",
    # Not a mirror column: read from and written to the spec's metric.
    "provider",
)

# One block per metric, grouped by what each group decides (docs/status.md and
# docs/analysis.md explain them): as one table row the inline outgrew the page once providers
# and compare joined the thresholds. The optional objects (compare) come last, one group each.
METRIC_FIELDSETS = (
    (None, {"fields": (("name", "provider"), "query")}),
    (
        "Thresholds",
        {"fields": (("max_value", "max_increase_percent", "max_increase_absolute"),)},
    ),
    ("Baseline", {"fields": (("baseline_before_rollout", "baseline_offset"),)}),
    ("Traffic guard", {"fields": (("min_samples_query", "min_samples_min"),)}),
    *(group.fieldset() for group in METRIC_GROUPS),
)


class MetricInlineFormSet(forms.BaseInlineFormSet):
    """The metrics of one analysis; at least one, names unique (the model's constraint)."""

    # Set by the admin on a second rendering: the refusal's problems, some on metric forms.
    cluster_refusal: ClassVar[tuple[Problem, ...]] = ()

    def clean(self) -> None:
        super().clean()
        by_prefix = {form.prefix: form for form in self.forms}
        lost = []
        for problem in self.cluster_refusal:
            if problem.form is None:
                continue
            form = by_prefix.get(problem.form)
            if form is not None:
                _add_problem(form, problem)
            else:
                lost.append(problem.message)
        if lost:
            # Never let a refusal pass unseen (the save would be tried again): say it here.
            raise forms.ValidationError(lost)

    def add_fields(self, form: forms.Form, index: int | None) -> None:
        super().add_fields(form, index)
        form.fields["name"].validators.append(_DNS1123_LABEL)
        form.fields["query"].widget = forms.Textarea(
            attrs={"rows": 3, "cols": 48, "class": "sentinel-query", "spellcheck": "false"}
        )
        form.fields["min_samples_query"].widget = forms.Textarea(
            attrs={"rows": 2, "cols": 32, "class": "sentinel-query", "spellcheck": "false"}
        )
        form.fields["baseline_offset"].widget.attrs["size"] = 6
        self._provider_field(form)

    def _provider_field(self, form: forms.Form) -> None:
        """Offer the providers the analysis's namespace may use (docs/api.md, providers).

        A new analysis has no namespace yet: every provider is offered and the save refuses
        one the chosen namespace may not use. A provider the spec names but the namespace may
        no longer use stays selectable, so the page shows what the spec says.
        """
        parent = self.instance
        namespace = parent.namespace if parent is not None and parent.pk is not None else None
        names = list(provider_access.allowed(namespace) if namespace else provider_access.known())
        current = ""
        if parent is not None and parent.pk is not None and form.instance.pk is not None:
            for item in (parent.spec or {}).get("metrics") or []:
                if isinstance(item, dict) and item.get("name") == form.instance.name:
                    current = str(item.get("provider") or "")
        current = current or DEFAULT_PROVIDER
        if current not in names:
            names.append(current)
        field = form.fields["provider"]
        field.choices = [(name, name) for name in names]
        field.initial = current


def _group_fields() -> type[forms.Form]:
    """Return a form class declaring every group's fields, for ``MetricForm`` to inherit."""
    declared: dict[str, Any] = {}
    for group in METRIC_GROUPS:
        declared.update(group.form_fields())
    return type("MetricGroupFields", (forms.Form,), declared)


class MetricForm(_group_fields(), forms.ModelForm):  # type: ignore[misc]
    """One metric: the mirror's columns, the provider, and the groups (compare) as fields."""

    provider = forms.ChoiceField(
        required=False,
        label="Provider",
        help_text=(
            "Where the query runs: a provider of the operator's configuration that this "
            "namespace may use."
        ),
    )

    class Meta:
        model = AnalysisMetric
        fields = METRIC_FIELDS
        labels = {
            "max_value": "Max value",
            "max_increase_percent": "Max increase %",
            "max_increase_absolute": "Max increase (absolute)",
            "baseline_offset": "Baseline offset",
            "baseline_before_rollout": "Baseline before rollout",
            "min_samples_query": "Min samples query",
            "min_samples_min": "Min samples",
        }
        help_texts = {
            "query": "PromQL; the largest sample of the result is compared with the limits.",
            "max_value": "Optional once a max increase is given.",
            "max_increase_percent": (
                "How far above its baseline the value may go, in percent; or give the absolute "
                "increase instead (one of the two, with a baseline)."
            ),
            "max_increase_absolute": "How far above its baseline the value may go, in its unit.",
            "baseline_offset": "Compare with the query's value this long ago (1h, 30m).",
            "baseline_before_rollout": (
                "Or compare with its value when the target's current rollout began."
            ),
            "min_samples_query": (
                "Optional PromQL guard, e.g. the request count: below the minimum the verdict "
                "is Inconclusive."
            ),
            "min_samples_min": "The least the guard query must return.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A sequential metric has no query (exactly one of the two).
        self.fields["query"].required = False
        if self.instance.pk is not None:
            for group in METRIC_GROUPS:
                for name, value in group.initial(group_value(self.instance, group.key)).items():
                    self.initial[name] = value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for group in METRIC_GROUPS:
            group.check(self, was_on=bool(self.initial.get(group.toggle)))
        return cleaned


def group_value(metric: AnalysisMetric, key: str) -> object:
    """Return a group's object of ``metric``: its mirror column (``compare``, ``sequential``)."""
    return getattr(metric, key, None)


def spec_from_forms(
    form: AnalysisForm, formsets: Sequence[forms.BaseFormSet]
) -> AnalysisSpec | TemplatedSpec:
    """Return the ``spec`` the validated forms describe; raise ``InvalidSpecError`` if broken.

    Metrics keep the order the user sees; rows marked for deletion are left out. ``interval``
    and ``failureLimit`` are written only when filled in, so a template's values (or the
    defaults the operator applies) are never frozen into the spec by a save
    (docs/templates.md). ``templates`` and ``args`` are the form's; a post that leaves either
    field out keeps the analysis's own.
    """
    data = form.cleaned_data
    metrics = [_metric_spec(f.cleaned_data) for f in included_metric_forms(formsets)]
    raw: dict[str, Any] = {
        "target": {
            "kind": data.get("target_kind") or DEFAULT_TARGET_KIND,
            "name": data["target_name"],
        },
        "dryRun": bool(data.get("dry_run")),
    }
    if metrics:
        raw["metrics"] = metrics
    unset = []
    if data.get("interval"):
        raw["interval"] = data["interval"]
    else:
        unset.append("interval")
    if data.get("failure_limit") is not None:
        raw["failureLimit"] = data["failure_limit"]
    else:
        unset.append("failureLimit")
    if data.get("failure_window") is not None:
        raw["failureWindow"] = data["failure_window"]
    notify = [n.strip() for n in (data.get("notify") or "").split(",") if n.strip()]
    if notify:
        raw["notify"] = notify
    if data.get("false_pause_rate") is not None:
        raw["falsePauseRate"] = data["false_pause_rate"]
    current = form.instance.spec if form.instance is not None else None
    for key in ("templates", "args"):
        value = data.get(key)
        if value is None and isinstance(current, dict) and key in current:
            raw[key] = current[key]
        elif value:
            raw[key] = value
    if "metrics" not in raw and not raw.get("templates"):
        # Neither: parse_spec names spec.metrics as the field to fill in.
        raw["metrics"] = []
    parsed = parse_analysis_spec(raw)
    if isinstance(parsed, AnalysisSpec) and unset:
        return FormSpec(
            **{f.name: getattr(parsed, f.name) for f in fields(parsed)}, unset=tuple(unset)
        )
    return parsed


@dataclass(frozen=True)
class FormSpec(AnalysisSpec):
    """A parsed spec written without the fields the form left empty (``interval``,
    ``failureLimit``): ``AnalysisSpec.to_dict`` writes the defaults out, which would then hide
    the values of templates named later (docs/templates.md)."""

    unset: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        written = super().to_dict()
        for key in self.unset:
            written.pop(key, None)
        return written


def template_line(ref: dict[str, Any]) -> str:
    """Return one ``spec.templates`` entry as the templates field writes it."""
    name = str(ref.get("name") or "")
    return f"{CLUSTER_PREFIX}{name}" if ref.get("clusterScope") else name


def included_metric_forms(formsets: Sequence[forms.BaseFormSet]) -> list[forms.Form]:
    """Return the metric forms the spec is built from, in the order of ``spec.metrics``.

    New rows left empty and rows marked for deletion are left out.
    """
    included = []
    for formset in formsets:
        if not isinstance(formset, MetricInlineFormSet):
            continue
        for metric_form in formset.forms:
            if not metric_form.has_changed() and metric_form.instance.pk is None:
                continue
            if metric_form.cleaned_data.get("DELETE"):
                continue
            included.append(metric_form)
    return included


def _metric_spec(metric: dict[str, Any]) -> dict[str, Any]:
    """Return one inline row as a ``spec.metrics[]`` entry, every filled-in field included.

    Both halves of a one-of are passed on when both are filled in, and half a guard when only
    half is: ``parse_spec`` then names the field exactly as the API server would.
    """
    out: dict[str, Any] = {"name": metric["name"]}
    # Left out when empty: a sequential metric has none, and a metric with neither is told
    # that the query is required unless sequential is given.
    if (metric.get("query") or "").strip():
        out["query"] = metric["query"]
    if metric.get("max_value") is not None:
        out["maxValue"] = metric["max_value"]
    pairs = (("percent", "max_increase_percent"), ("absolute", "max_increase_absolute"))
    increase = {key: metric[column] for key, column in pairs if metric.get(column) is not None}
    if increase:
        out["maxIncrease"] = increase
    baseline: dict[str, Any] = {}
    if (metric.get("baseline_offset") or "").strip():
        baseline["offset"] = metric["baseline_offset"].strip()
    if metric.get("baseline_before_rollout"):
        baseline["beforeRollout"] = True
    if baseline:
        out["baseline"] = baseline
    guard: dict[str, Any] = {}
    if (metric.get("min_samples_query") or "").strip():
        guard["query"] = metric["min_samples_query"].strip()
    if metric.get("min_samples_min") is not None:
        guard["min"] = metric["min_samples_min"]
    if guard:
        out["minSamples"] = guard
    if metric.get("provider") and metric["provider"] != DEFAULT_PROVIDER:
        out["provider"] = metric["provider"]
    for group in METRIC_GROUPS:
        value = group.to_spec(metric)
        if value is not None:
            out[group.key] = value
    return out
