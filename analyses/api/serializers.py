"""The REST shapes: an analysis as the custom resource looks, and its evaluation history.

``AnalysisSerializer`` reads from the mirror row and validates writes: ``spec`` goes through
``sentinel_core.spec.parse_spec(strict=True)`` — the one home of the CRD's rules — (through
``sentinel_core.templates.parse_analysis_spec`` when it names templates) and its errors are
reported under their field paths (``spec.metrics[0].maxValue``), all at once. The
OpenAPI description of ``spec`` and ``status`` is the CRD's own schema, read from
``crds/rolloutanalysis.yaml``, so the document cannot drift from the resource. A history row's
metric result carries the columns a metric kind keeps of its own as its view in
``analyses.kinds`` describes them (``COLUMNS``): the serializer names no kind.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts import provider_access, scope
from analyses.kinds import COLUMNS, HistoryColumn
from analyses.models import Analysis, Evaluation, MetricResult
from sentinel_core.spec import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    AnalysisSpec,
    InvalidSpecError,
)
from sentinel_core.templates import TemplatedSpec, parse_analysis_spec

_CRD = Path(__file__).resolve().parents[2] / "crds" / "rolloutanalysis.yaml"
# Kubernetes object names (not CRD rules): namespaces are DNS-1123 labels, custom resource
# names DNS-1123 subdomains. Checked here so a name never reaches a URL path unchecked.


@functools.cache
def crd_schema(part: str) -> dict[str, Any]:
    """Return the CRD's openAPIV3Schema of ``spec`` or ``status`` (a bare object if unreadable)."""
    try:
        crd = yaml.safe_load(_CRD.read_text())
        version = crd["spec"]["versions"][0]
        return dict(version["schema"]["openAPIV3Schema"]["properties"][part])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        # A deployment without the crds/ folder still serves a valid, if vaguer, document.
        return {"type": "object", "additionalProperties": True}


@extend_schema_field(crd_schema("spec"), component_name="AnalysisSpec")
class SpecField(serializers.Field):
    """``spec`` exactly as in the custom resource; validated by the serializer, as a whole."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(crd_schema("status"), component_name="AnalysisStatus")
class StatusField(serializers.Field):
    """``status`` as the operator wrote it to the resource; never written through the API."""

    def to_representation(self, value: Any) -> Any:
        return value


class KindColumnField(serializers.Field):
    """A history column a metric kind keeps of its own (``analyses.kinds.COLUMNS``); ``{}``: null.

    Each column is a subclass carrying its kind's OpenAPI component (``_column_field``).
    """

    def to_representation(self, value: Any) -> Any:
        return value or None


def _column_field(column: HistoryColumn) -> type[KindColumnField]:
    """Return the field class of one kind's history column, with its OpenAPI component."""
    items = crd_schema("status").get("properties", {}).get("metricResults", {}).get("items", {})
    schema = column.schema(items.get("properties", {}))
    field = type(f"{column.component}Field", (KindColumnField,), {"__module__": __name__})
    return extend_schema_field(schema, component_name=column.component)(field)


# One field class per kind's column, built once (drf-spectacular reads the class's component).
_KIND_FIELDS = {column.name: (_column_field(column), column.help_text) for column in COLUMNS}


class AnalysisSerializer(serializers.Serializer):
    """A RolloutAnalysis: where it lives, its resourceVersion, spec and status."""

    namespace = serializers.RegexField(
        DNS1123_LABEL,
        max_length=63,
        help_text="Namespace of the analysis and of its target. Set on create only.",
    )
    name = serializers.RegexField(
        DNS1123_SUBDOMAIN, max_length=253, help_text="Name of the analysis. Set on create only."
    )
    resourceVersion = serializers.CharField(
        source="resource_version",
        required=False,
        max_length=64,
        help_text=(
            "Opaque version from the cluster. On update and delete the write only happens if "
            "the resource is still at this version (409 otherwise); defaults to the version "
            "last seen by the mirror."
        ),
    )
    spec = SpecField(
        help_text="As in the custom resource (docs/resource.md); defaults are filled in."
    )
    status = StatusField(read_only=True, help_text="Written by the operator (docs/status.md).")

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        if self.instance is not None:
            # The URL names the analysis being updated; the body may repeat but not move it.
            fields["namespace"].required = False
            fields["name"].required = False
        return fields

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """Validate the plain fields and the spec together, so every error comes back at once."""
        errors: dict[str, Any] = {}
        try:
            values = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, Mapping):
                raise
            errors.update(exc.detail)
            values = {}
        if isinstance(data, Mapping) and "spec" in data:
            try:
                # A spec naming templates is checked as the CRD checks it and written as given
                # (docs/templates.md); the operator resolves it.
                values["spec"] = parse_analysis_spec(self._raw_spec(data["spec"]), strict=True)
            except InvalidSpecError as exc:
                errors.pop("spec", None)
                errors.update(exc.by_field())
        namespace = values.get("namespace")
        if isinstance(self.instance, Analysis) and namespace is None:
            namespace = self.instance.namespace
        if isinstance(namespace, str) and not scope.in_scope(namespace):
            errors["namespace"] = [scope.outside_message(namespace)]
        elif isinstance(namespace, str) and isinstance(
            values.get("spec"), AnalysisSpec | TemplatedSpec
        ):
            # The operator's configuration decides who may use which provider
            # (docs/resource.md#providers); a template's metrics are the operator's to check.
            providers = [m.provider for m in values["spec"].metrics]
            errors.update(provider_access.refusals(namespace, providers))
        if isinstance(self.instance, Analysis):
            for field in ("namespace", "name"):
                given = values.get(field)
                if given is not None and given != getattr(self.instance, field):
                    errors[field] = [f"cannot change; the analysis is {self.instance}"]
        if errors:
            raise serializers.ValidationError(errors)
        return values

    def _raw_spec(self, given: Any) -> Any:
        """Return the spec to validate: on PATCH, ``given`` merged into the current one."""
        if self.partial and isinstance(self.instance, Analysis):
            return merge_patch(self.instance.spec, given)
        return given

    def to_representation(self, instance: Analysis) -> dict[str, Any]:
        return {
            "namespace": instance.namespace,
            "name": instance.name,
            "resourceVersion": instance.resource_version,
            "spec": instance.spec,
            "status": instance.status,
        }


class AnalysisUpdateSerializer(AnalysisSerializer):
    """The PUT body, for the OpenAPI document: namespace and name may be left out."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["namespace"].required = False
        fields["name"].required = False
        return fields


def merge_patch(target: Any, patch: Any) -> Any:
    """Return ``patch`` applied to ``target`` as a JSON merge patch (RFC 7386).

    Objects merge key by key, ``null`` removes a key, anything else (lists too) replaces.
    """
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


class FiniteFloatField(serializers.FloatField):
    """A float that renders +Inf, -Inf and NaN as null (strict JSON has no such numbers)."""

    def to_representation(self, value: Any) -> float | None:
        number = super().to_representation(value)
        return number if math.isfinite(number) else None


class MetricResultSerializer(serializers.ModelSerializer):
    """What one metric measured in one evaluation."""

    value = FiniteFloatField(
        allow_null=True, help_text="Worst sample; null without data or when not finite."
    )
    valueText = serializers.CharField(
        source="value_text", help_text="The value exactly as Prometheus printed it."
    )
    maxValue = FiniteFloatField(source="max_value", allow_null=True)
    baseline = FiniteFloatField(
        allow_null=True,
        help_text="With maxIncrease: the baseline the value was compared with; null without one.",
    )
    baselineText = serializers.CharField(
        source="baseline_text", help_text="The baseline exactly as Prometheus printed it."
    )
    limit = FiniteFloatField(
        allow_null=True,
        help_text=(
            "The lowest bound the value was judged against: maxValue or the baseline's limit "
            "(the operator's sentinel_metric_threshold); null when it was not judged."
        ),
    )
    samples = serializers.CharField(
        source="samples_text",
        help_text="With minSamples: what its query returned, as Prometheus printed it.",
    )
    series = serializers.DictField(
        child=serializers.CharField(), help_text="Labels of the worst series."
    )

    class Meta:
        model = MetricResult
        fields = [
            "name",
            "value",
            "valueText",
            "maxValue",
            "baseline",
            "baselineText",
            "limit",
            "samples",
            "series",
            "verdict",
            "message",
        ]

    def get_fields(self) -> dict[str, serializers.Field]:
        """Return the fields, with each metric kind's own history columns after ``series``."""
        fields: dict[str, serializers.Field] = {}
        for name, field in super().get_fields().items():
            fields[name] = field
            if name == "series":
                for column, (field_class, help_text) in _KIND_FIELDS.items():
                    fields[column] = field_class(
                        read_only=True, allow_null=True, help_text=help_text
                    )
        return fields


class EvaluationSerializer(serializers.ModelSerializer):
    """One evaluation attempt (docs/status.md#history-outcomes)."""

    dueAt = serializers.DateTimeField(
        source="due_at",
        allow_null=True,
        help_text=(
            "When the attempt was due; startedAt minus dueAt is how late the operator started "
            "it. Null for evaluations recorded before this was kept."
        ),
    )
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at")
    durationSeconds = FiniteFloatField(source="duration_seconds")
    failuresAfter = serializers.IntegerField(source="failures_after")
    errorReason = serializers.CharField(source="error_reason")
    errorMessage = serializers.CharField(source="error_message")
    metricResults = MetricResultSerializer(source="metric_results", many=True, read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "dueAt",
            "startedAt",
            "finishedAt",
            "durationSeconds",
            "generation",
            "outcome",
            "failuresAfter",
            "errorReason",
            "errorMessage",
            "paused",
            "metricResults",
        ]
        read_only_fields = fields


class EvaluateSerializer(serializers.Serializer):
    """The answer to "evaluate now"."""

    namespace = serializers.CharField()
    name = serializers.CharField()
    nextDueAt = serializers.DateTimeField(
        help_text="When the operator will evaluate it (within about a second of this time)."
    )


class ReleaseSerializer(serializers.Serializer):
    """What a resume did to the target (docs/api.md#resume-and-evaluate-now)."""

    target = serializers.CharField(help_text='The target, as "Deployment shop/checkout".')
    outcome = serializers.ChoiceField(
        choices=["restored", "kept-held-before", "others-hold"],
        help_text=(
            "restored: the target rolls again with what it had before the first pause; "
            "kept-held-before: it stays paused, as it was before this analysis paused it; "
            "others-hold: it stays paused, other analyses still hold it."
        ),
    )
    heldBy = serializers.ListField(
        child=serializers.CharField(),
        source="held_by",
        help_text="namespace/name of the analyses that still hold the target.",
    )
    message = serializers.CharField(help_text="The same in one sentence.")


class ResumeSerializer(AnalysisSerializer):
    """The analysis after a resume, and what the resume did to its target."""

    release = ReleaseSerializer(read_only=True)


class ErrorSerializer(serializers.Serializer):
    """Any error but field validation: a stable ``code`` and a sentence for humans."""

    detail = serializers.CharField()
    code = serializers.CharField()
