"""The RolloutAnalysis spec: ``parse_spec`` and the typed, frozen result (docs/resource.md).

The reconciler, the mirror, the REST API's serializer and the admin's forms all read a spec
through ``parse_spec``; an invalid one is an ``InvalidSpecError`` carrying one ``FieldError``
per problem and a ``SpecSummary`` of what could be read. The limits, defaults, name patterns and
durations here are the same as the CRD's schema (``crds/``).

The parts are private: ``_parse`` (the top-level fields), ``_metrics`` (each metric), ``_types``
(the dataclasses), ``_errors``, ``_names`` (DNS-1123 patterns), ``_durations``. Each metric
kind's fields (``Baseline``, ``Increase``, ``MinSamples``; ``Compare``; ``Sequential``) are
defined with the kind, in its package under ``sentinel_core.metric_kinds``, and are part of the
spec's types.
"""

from sentinel_core.metric_kinds.compare import Compare
from sentinel_core.metric_kinds.sequential import Sequential
from sentinel_core.metric_kinds.threshold import Baseline, Increase, MinSamples
from sentinel_core.spec._durations import MIN_INTERVAL_SECONDS, check_interval, parse_duration
from sentinel_core.spec._errors import FieldError, InvalidSpecError
from sentinel_core.spec._metrics import MAX_METRIC_NAME_LENGTH, MAX_METRICS, MAX_QUERY_LENGTH
from sentinel_core.spec._names import DNS1123_LABEL, DNS1123_SUBDOMAIN
from sentinel_core.spec._parse import MAX_FAILURE_WINDOW, MAX_NOTIFY, parse_spec
from sentinel_core.spec._types import (
    DEFAULT_FAILURE_LIMIT,
    DEFAULT_INTERVAL,
    DEFAULT_INTERVAL_SECONDS,
    DEFAULT_TARGET_KIND,
    AnalysisSpec,
    MetricSpec,
    SpecSummary,
    Target,
)

__all__ = [
    "DEFAULT_FAILURE_LIMIT",
    "DEFAULT_INTERVAL",
    "DEFAULT_INTERVAL_SECONDS",
    "DEFAULT_TARGET_KIND",
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "MAX_FAILURE_WINDOW",
    "MAX_METRICS",
    "MAX_METRIC_NAME_LENGTH",
    "MAX_NOTIFY",
    "MAX_QUERY_LENGTH",
    "MIN_INTERVAL_SECONDS",
    "AnalysisSpec",
    "Baseline",
    "Compare",
    "FieldError",
    "Increase",
    "InvalidSpecError",
    "MetricSpec",
    "MinSamples",
    "Sequential",
    "SpecSummary",
    "Target",
    "check_interval",
    "parse_duration",
    "parse_spec",
]
