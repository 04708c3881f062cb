"""Forms of the admin's analysis page: the spec fields, the metrics inline, and the spec they make.

``analyses.admin.AnalysisAdmin`` uses ``AnalysisForm`` and ``MetricInlineFormSet``, then calls
``spec_from_forms`` to turn the validated forms into the custom resource's ``spec``, which goes
to the cluster through ``analyses.services``. The forms never save rows themselves: the mirror is
written from the API server's answer. The rules are ``sentinel_core.spec.parse_spec``'s (the
one source of them); the field checks here only give earlier, per-field messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from django import forms
from django.core.validators import MinValueValidator, RegexValidator

from analyses import access, provider_access, scope
from analyses.models import Analysis, AnalysisMetric
from sentinel_core.provider import DEFAULT_PROVIDER
from sentinel_core.spec import (
    DEFAULT_INTERVAL,
    DEFAULT_TARGET_KIND,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    AnalysisSpec,
    InvalidSpecError,
    check_interval,
    parse_duration,
    parse_spec,
)

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


class AnalysisForm(forms.ModelForm):
    """The spec fields of one analysis, plus the generation the user was looking at."""

    interval = forms.CharField(
        initial=DEFAULT_INTERVAL,
        max_length=32,
        help_text="How often to evaluate: a duration such as 30s, 1m or 1m30s (at least 5s).",
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
    # The metadata.generation the page showed; a different one at save time means someone
    # else edited the spec meanwhile, and saving would silently undo their edit.
    seen_generation = forms.IntegerField(widget=forms.HiddenInput, required=False)

    # Set by the admin on a second rendering, after the cluster refused the save.
    cluster_refusal: ClassVar[tuple[str, ...]] = ()
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
            "target_name": "Target Deployment",
            "failure_limit": "Failure limit",
            "failure_window": "Failure window",
        }
        help_texts = {
            "target_name": "A Deployment in the same namespace.",
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
            self.fields["failure_limit"].validators.append(MinValueValidator(1))
            self.fields["failure_limit"].widget.attrs["min"] = 1
        if self.instance.pk is not None:
            self.fields["interval"].initial = self.instance.spec.get("interval", DEFAULT_INTERVAL)
            self.fields["notify"].initial = ", ".join(self.instance.spec.get("notify") or [])
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
        try:
            check_interval(parse_duration(interval), interval)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return interval

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.cluster_refusal:
            raise forms.ValidationError(list(self.cluster_refusal))
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
    # Not a mirror column: read from and written to the spec (SPEC §10.1).
    "provider",
    "compare",
)

# One block per metric, grouped by what each group decides (SPEC §3.1, §3.2, §10.1): as one
# table row the inline outgrew the page once providers and compare joined the thresholds.
METRIC_FIELDSETS = (
    (None, {"fields": (("name", "provider"), "query")}),
    (
        "Thresholds",
        {"fields": (("max_value", "max_increase_percent", "max_increase_absolute"),)},
    ),
    ("Baseline", {"fields": (("baseline_before_rollout", "baseline_offset"),)}),
    ("Traffic guard", {"fields": (("min_samples_query", "min_samples_min"),)}),
    ("New pods against old pods", {"fields": ("compare",)}),
)


class MetricInlineFormSet(forms.BaseInlineFormSet):
    """The metrics of one analysis; at least one, names unique (the model's constraint)."""

    def add_fields(self, form: forms.Form, index: int | None) -> None:
        super().add_fields(form, index)
        form.fields["name"].validators.append(_DNS1123_LABEL)
        form.fields["query"].widget = forms.Textarea(
            attrs={"rows": 3, "cols": 48, "class": "sentinel-query", "spellcheck": "false"}
        )
        form.fields["max_value"].label = "Max value"
        form.fields["min_samples_query"].widget = forms.Textarea(
            attrs={"rows": 2, "cols": 32, "class": "sentinel-query", "spellcheck": "false"}
        )
        form.fields["baseline_offset"].widget.attrs["size"] = 6
        self._provider_field(form)
        form.fields["compare"].widget = forms.Textarea(
            attrs={"rows": 2, "cols": 32, "class": "sentinel-query", "spellcheck": "false"}
        )

    def _provider_field(self, form: forms.Form) -> None:
        """Offer the providers the analysis's namespace may use (SPEC §10.1).

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


class MetricForm(forms.ModelForm):
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
            "max_increase_percent": "Max increase %",
            "max_increase_absolute": "Max increase (absolute)",
            "baseline_offset": "Baseline offset",
            "baseline_before_rollout": "Baseline before rollout",
            "min_samples_query": "Min samples query",
            "min_samples_min": "Min samples",
            "compare": "Compare new vs old pods",
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
            "compare": (
                'Optional JSON, instead of max value and max increase: {"maxEffect": '
                '{"percent": 10}} judges the new pods against the old ones (SPEC 3.2).'
            ),
        }


def spec_from_forms(form: AnalysisForm, formsets: Sequence[forms.BaseFormSet]) -> AnalysisSpec:
    """Return the ``spec`` the validated forms describe; raise ``InvalidSpecError`` if broken.

    Metrics keep the order the user sees; rows marked for deletion are left out.
    """
    data = form.cleaned_data
    metrics: list[dict[str, Any]] = []
    for formset in formsets:
        if not isinstance(formset, MetricInlineFormSet):
            continue
        for metric_form in formset.forms:
            if not metric_form.has_changed() and metric_form.instance.pk is None:
                continue
            if metric_form.cleaned_data.get("DELETE"):
                continue
            metrics.append(_metric_spec(metric_form.cleaned_data))
    raw: dict[str, Any] = {
        "target": {"kind": DEFAULT_TARGET_KIND, "name": data["target_name"]},
        "metrics": metrics,
        "interval": data["interval"],
        "failureLimit": data["failure_limit"],
        "dryRun": bool(data.get("dry_run")),
    }
    if data.get("failure_window") is not None:
        raw["failureWindow"] = data["failure_window"]
    notify = [n.strip() for n in (data.get("notify") or "").split(",") if n.strip()]
    if notify:
        raw["notify"] = notify
    return parse_spec(raw)


def _metric_spec(metric: dict[str, Any]) -> dict[str, Any]:
    """Return one inline row as a ``spec.metrics[]`` entry, every filled-in field included.

    Both halves of a one-of are passed on when both are filled in, and half a guard when only
    half is: ``parse_spec`` then names the field exactly as the API server would.
    """
    out: dict[str, Any] = {"name": metric["name"], "query": metric["query"]}
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
    # An empty box is no compare; anything else goes to parse_spec as written.
    if metric.get("compare") not in (None, {}, ""):
        out["compare"] = metric["compare"]
    return out


def describe_invalid(error: InvalidSpecError) -> list[str]:
    """Return one line per broken rule, naming the field as the resource does."""
    return [f"{problem.field}: {problem.message}" for problem in error.errors]
