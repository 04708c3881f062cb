"""Optional objects of a metric, edited as labelled fields instead of raw JSON: ``compare``,
``sequential``.

A ``MetricGroup`` is one optional object of a ``spec.metrics[]`` entry: a tick box that turns it
on, one labelled form field per key (nested keys dotted, ``maxEffect.percent``), the fieldset
the metrics inline shows it in, how its fields are filled from the mirror's dict, the object it
writes into the spec, and which of its fields answers for a ``parse_spec`` error under it.
``analyses.admin.forms`` builds ``MetricForm``'s fields, the inline's fieldsets, the spec and
the error mapping from ``METRIC_GROUPS``; another judgment of a metric is one more group there.

The form checks only what a field's type needs (a number is a number); the rules and their
messages are ``parse_spec``'s, as in the REST API, mapped back onto these fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django import forms

from sentinel_core.kinds import CONTROLLER_REVISION_HASH_LABEL
from sentinel_core.metric_kinds.compare import (
    DEFAULT_BY,
    DEFAULT_CONFIDENCE,
    DEFAULT_LOOKBACK,
    DEFAULT_MIN_SAMPLES,
    DEFAULT_WORSE,
)
from sentinel_core.metric_kinds.sequential import DEFAULT_MIN_EVENTS as SEQUENTIAL_MIN_EVENTS
from sentinel_core.metric_kinds.sequential import MAX_SELECTOR_LENGTH
from sentinel_core.values import format_value

# Shown on the tick box of a group left off while some of its fields were filled in.
UNTICKED_MESSAGE = "Tick this box to use the values below, or clear them."


@dataclass(frozen=True)
class GroupField:
    """One key of a group and the form field that edits it."""

    # The key inside the group's object, nested keys dotted: "maxEffect.percent".
    key: str
    # The form field's name, unique within a metric's form: "compare_max_effect_percent".
    name: str
    make: Callable[[], forms.Field]
    # What a field that always sends a value (a select) sends untouched: not "filled in".
    untouched: object = None


@dataclass(frozen=True)
class MetricGroup:
    """One optional object of a metric (``compare``), its tick box and its labelled fields."""

    # The object's key in the metric ("compare").
    key: str
    # The fieldset's heading in the metrics inline.
    title: str
    toggle_label: str
    toggle_help: str
    fields: tuple[GroupField, ...]
    # The fieldset's lines: form field names side by side.
    rows: tuple[tuple[str, ...], ...]

    @property
    def toggle(self) -> str:
        """Return the tick box's form field name: not the model's column of the same key."""
        return f"{self.key}_on"

    def form_fields(self) -> dict[str, forms.Field]:
        """Return the tick box and every field, by form field name, for a form class."""
        toggle = forms.BooleanField(
            required=False, label=self.toggle_label, help_text=self.toggle_help
        )
        return {self.toggle: toggle, **{field.name: field.make() for field in self.fields}}

    def fieldset(self) -> tuple[str, dict[str, Any]]:
        """Return the inline's fieldset: the tick box, then the fields in ``rows``."""
        return (self.title, {"fields": (self.toggle, *self.rows)})

    def initial(self, raw: object) -> dict[str, Any]:
        """Return the form's initial values for ``raw`` (the group's object), or none."""
        if not isinstance(raw, Mapping) or not raw:
            return {}
        values: dict[str, Any] = {self.toggle: True}
        for field in self.fields:
            value = _dig(raw, field.key)
            if value is not None:
                values[field.name] = value
        return values

    def filled(self, cleaned: Mapping[str, Any]) -> bool:
        """Return whether any of the group's fields holds a value the user gave."""
        return any(
            _given(cleaned.get(field.name)) and cleaned.get(field.name) != field.untouched
            for field in self.fields
        )

    def to_spec(self, cleaned: Mapping[str, Any]) -> dict[str, Any] | None:
        """Return the group's object from a form's cleaned data; None when it is off.

        Empty fields are left out, so ``parse_spec`` applies the defaults as the CRD does.
        """
        if not cleaned.get(self.toggle):
            return None
        out: dict[str, Any] = {}
        for field in self.fields:
            value = cleaned.get(field.name)
            if not _given(value):
                continue
            *parents, last = field.key.split(".")
            target = out
            for parent in parents:
                target = target.setdefault(parent, {})
            target[last] = value.strip() if isinstance(value, str) else value
        return out

    def check(self, form: forms.Form, was_on: bool) -> None:
        """Refuse fields filled in while the box is unticked, unless it was just unticked.

        Unticking a group the metric had switches it off and its fields are ignored; filling
        fields in without ticking the box is a slip that would otherwise be silently dropped.
        """
        cleaned = form.cleaned_data
        if not cleaned.get(self.toggle) and not was_on and self.filled(cleaned):
            form.add_error(self.toggle, UNTICKED_MESSAGE)

    def field_for(self, path: str) -> str:
        """Return the form field answering for ``path`` (relative to the group's object).

        ``maxEffect`` (the one-of itself) is its first field; the object itself, or a key
        the group has no field for, is the tick box.
        """
        for field in self.fields:
            if field.key == path:
                return field.name
        for field in self.fields:
            if path and field.key.startswith(f"{path}."):
                return field.name
        return self.toggle


def _dig(raw: Mapping[str, Any], dotted: str) -> Any:
    value: Any = raw
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _given(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


class _NumberInput(forms.NumberInput):
    """A number input showing a float as written in the spec: ``10``, not ``10.0``."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, float):
            return format_value(value)
        return super().format_value(value)


def _number(label: str, help_text: str, placeholder: str = "") -> Callable[[], forms.Field]:
    def make() -> forms.Field:
        attrs = {"step": "any", "size": 8}
        if placeholder:
            attrs["placeholder"] = placeholder
        return forms.FloatField(
            required=False,
            label=label,
            help_text=help_text,
            widget=_NumberInput(attrs=attrs),
        )

    return make


def _text(label: str, help_text: str, placeholder: str, size: int) -> Callable[[], forms.Field]:
    def make() -> forms.Field:
        return forms.CharField(
            required=False,
            max_length=64,
            label=label,
            help_text=help_text,
            widget=forms.TextInput(
                attrs={"placeholder": placeholder, "size": size, "spellcheck": "false"}
            ),
        )

    return make


def _worse() -> forms.Field:
    return forms.ChoiceField(
        required=False,
        initial=DEFAULT_WORSE,
        label="Worse is",
        choices=[
            ("increase", "Higher (latencies, error rates)"),
            ("decrease", "Lower (success rates, throughput)"),
        ],
        help_text="Which direction of the new pods' values counts against them.",
    )


def _whole(label: str, help_text: str, default: int) -> Callable[[], forms.Field]:
    def make() -> forms.Field:
        return forms.IntegerField(
            required=False,
            label=label,
            help_text=f"{help_text}; {default} if empty.",
            widget=forms.NumberInput(attrs={"placeholder": str(default), "size": 6}),
        )

    return make


COMPARE = MetricGroup(
    key="compare",
    title="New pods against old pods",
    toggle_label="Compare new pods with old pods",
    toggle_help=(
        "Judge the new pods' values against the old pods' at the same moment, instead of a "
        "max value or max increase (docs/analysis.md explains the test and its settings)."
    ),
    fields=(
        GroupField(
            "by",
            "compare_by",
            _text(
                "Label telling them apart",
                "The series label that tells new pods from old; if empty, "
                f"{DEFAULT_BY} for a Deployment, {CONTROLLER_REVISION_HASH_LABEL} for a "
                "StatefulSet or DaemonSet.",
                DEFAULT_BY,
                20,
            ),
        ),
        GroupField("worse", "compare_worse", _worse, untouched=DEFAULT_WORSE),
        GroupField(
            "maxEffect.percent",
            "compare_max_effect_percent",
            _number(
                "Max effect %",
                "How much worse the new pods' median may be, in percent of the old pods'; or "
                "give the absolute effect instead (one of the two, or neither).",
            ),
        ),
        GroupField(
            "maxEffect.absolute",
            "compare_max_effect_absolute",
            _number(
                "Max effect (absolute)",
                "How much worse the new pods' median may be, in the metric's unit.",
            ),
        ),
        GroupField(
            "confidence",
            "compare_confidence",
            _number(
                "Confidence",
                "Fail only when the new pods are worse with p below 1 - confidence; more than "
                f"0.5 and less than 1, {DEFAULT_CONFIDENCE:g} if empty.",
                f"{DEFAULT_CONFIDENCE:g}",
            ),
        ),
        GroupField(
            "lookback",
            "compare_lookback",
            _text(
                "Lookback",
                "The samples: the query over this range at the analysis's interval; "
                f"{DEFAULT_LOOKBACK} if empty.",
                DEFAULT_LOOKBACK,
                6,
            ),
        ),
        GroupField(
            "minSamples",
            "compare_min_samples",
            _whole(
                "Min samples per side",
                "Fewer samples on either side make the verdict Inconclusive",
                DEFAULT_MIN_SAMPLES,
            ),
        ),
    ),
    rows=(
        ("compare_by", "compare_worse"),
        ("compare_max_effect_percent", "compare_max_effect_absolute"),
        ("compare_confidence", "compare_lookback", "compare_min_samples"),
    ),
)


def _selector(label: str, help_text: str, placeholder: str) -> Callable[[], forms.Field]:
    def make() -> forms.Field:
        return forms.CharField(
            required=False,
            max_length=MAX_SELECTOR_LENGTH,
            label=label,
            help_text=help_text,
            widget=forms.Textarea(
                attrs={
                    "rows": 2,
                    "cols": 48,
                    "class": "sentinel-query",
                    "spellcheck": "false",
                    "placeholder": placeholder,
                }
            ),
        )

    return make


SEQUENTIAL = MetricGroup(
    key="sequential",
    title="Sequential judgment on counts",
    toggle_label="Judge new pods against old pods on counts",
    toggle_help=(
        "Instead of a query: the share of bad events on each side, step by step since the "
        "rollout began, with a false-pause budget per rollout (the analysis's false pause "
        "rate). Give bad and total counters, or a histogram and a boundary; leave the query "
        "empty (docs/analysis.md explains the test)."
    ),
    fields=(
        GroupField(
            "bad",
            "sequential_bad",
            _selector(
                "Bad events (counter)",
                "A counter's series selector counting the bad events.",
                'http_requests_total{app="checkout", code=~"5.."}',
            ),
        ),
        GroupField(
            "total",
            "sequential_total",
            _selector(
                "All events (counter)",
                "A counter's series selector counting all events.",
                'http_requests_total{app="checkout"}',
            ),
        ),
        GroupField(
            "histogram",
            "sequential_histogram",
            _selector(
                "Or a histogram",
                "A histogram's base name with its selector; all events are its _count.",
                'http_request_duration_seconds{app="checkout"}',
            ),
        ),
        GroupField(
            "slowerThan",
            "sequential_slower_than",
            _number(
                "Slower than",
                "With a histogram: one of its bucket boundaries (le); requests above it are "
                "the bad events.",
            ),
        ),
        GroupField(
            "maxIncrease.percent",
            "sequential_max_increase_percent",
            _number(
                "Max increase %",
                "How much higher the new pods' bad-event rate may be than the old pods', in "
                "percent; 0 if empty.",
                "0",
            ),
        ),
        GroupField(
            "minEvents",
            "sequential_min_events",
            _whole(
                "Min events",
                "Events needed on the new pods since the rollout began before a Pass",
                SEQUENTIAL_MIN_EVENTS,
            ),
        ),
        GroupField(
            "by",
            "sequential_by",
            _text(
                "Label telling them apart",
                f"The series label that holds the pod template hash; {DEFAULT_BY} if empty.",
                DEFAULT_BY,
                20,
            ),
        ),
    ),
    rows=(
        ("sequential_bad", "sequential_total"),
        ("sequential_histogram", "sequential_slower_than"),
        ("sequential_max_increase_percent", "sequential_min_events", "sequential_by"),
    ),
)

# The optional objects of a metric edited as groups, in the order of the inline's fieldsets.
METRIC_GROUPS: tuple[MetricGroup, ...] = (COMPARE, SEQUENTIAL)
