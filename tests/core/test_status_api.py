"""Status is an API (docs/status.md): pin every stable string, check the docs name each, and check
that the typed status reads garbage tolerantly and writes exactly the CRD's status schema."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_core.conditions import (
    EVENT_TYPES,
    REASONS,
    Annotation,
    ConditionStatus,
    ConditionType,
    EventReason,
    EventType,
    Outcome,
    Reason,
    Verdict,
)
from sentinel_core.status import AnalysisStatus, Condition, MetricResult, transition
from sentinel_core.values import format_time, format_value, parse_time

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "status.md"
CRD = yaml.safe_load((ROOT / "crds" / "rolloutanalysis.yaml").read_text())
STATUS_SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
T0 = datetime(2026, 11, 29, 10, 0, 30, tzinfo=UTC)

# The complete stable vocabulary. Changing any of it breaks users' scripts and alerts: a change
# here must be deliberate, with docs/status.md and a release note updated alongside.
CONDITION_TYPES = {"Ready", "Healthy", "RolloutPaused"}
TABLE = {
    ("Ready", "True"): {"Evaluating"},
    ("Ready", "False"): {
        "MetricsUnavailable",
        "TargetNotFound",
        "InvalidQuery",
        "InvalidSpec",
        # docs/operations.md#metric-providers: a metric's provider is not configured, or not for
        # this namespace.
        "UnknownProvider",
        "ProviderNotAllowed",
        # docs/templates.md: the analysis's templates could not be resolved.
        "TemplateNotFound",
        "MissingArgument",
        "InvalidTemplate",
    },
    ("Ready", "Unknown"): set(),
    ("Healthy", "True"): {"WithinThresholds"},
    ("Healthy", "False"): {"ThresholdExceeded"},
    ("Healthy", "Unknown"): {
        "NoData",
        "InsufficientData",
        "NoBaseline",
        "NoComparison",
        "NotEvaluated",
    },
    ("RolloutPaused", "True"): {"FailureLimitReached"},
    ("RolloutPaused", "False"): {"NotPaused", "ResumedByUser", "UntrustedPauseRecord"},
    ("RolloutPaused", "Unknown"): set(),
}
EVENTS = {
    ("Warning", "RolloutPaused"),
    ("Normal", "RolloutResumed"),
    ("Warning", "MetricsUnavailable"),
    ("Normal", "MetricsRecovered"),
    ("Warning", "TargetNotFound"),
    ("Warning", "InvalidQuery"),
    ("Warning", "UnknownProvider"),
    ("Warning", "ProviderNotAllowed"),
    ("Normal", "RolloutDetected"),
    ("Warning", "UntrustedPauseRecord"),
    ("Warning", "PauseLeftBehind"),
    ("Warning", "StatusDiscarded"),
}
VERDICTS = {"Pass", "Fail", "Inconclusive"}
OUTCOMES = {"Pass", "Fail", "Inconclusive", "Error"}
ANNOTATIONS = {
    "sentinel.example.com/paused-by",
    "sentinel.example.com/paused-at",
    "sentinel.example.com/paused-before",
    "sentinel.example.com/pause-reason",
    "sentinel.example.com/paused-partition",
    "sentinel.example.com/partition-before",
    "sentinel.example.com/update-strategy-before",
}
STATUS_FIELDS = {
    "observedGeneration",
    "lastVerdict",
    "failures",
    "lastEvaluationTime",
    "metricResults",
    "pausedAt",
    "conditions",
    "window",
    "rollout",
    # docs/templates.md: the template generations the spec was resolved from, and the
    # resolved metrics with the template each came from.
    "templates",
    "resolvedMetrics",
}


def test_condition_types_and_reasons_are_pinned() -> None:
    assert {str(t) for t in ConditionType} == CONDITION_TYPES
    assert {str(s) for s in ConditionStatus} == {"True", "False", "Unknown"}
    table = {
        (str(type_), str(status)): {str(r) for r in reasons}
        for type_, by_status in REASONS.items()
        for status, reasons in by_status.items()
    }
    assert table == TABLE
    assert {str(r) for r in Reason} == set().union(*TABLE.values())


def test_events_verdicts_outcomes_and_annotations_are_pinned() -> None:
    assert {(str(t), str(r)) for r, t in EVENT_TYPES.items()} == EVENTS
    assert {str(r) for r in EventReason} == {reason for _, reason in EVENTS}
    assert {str(t) for t in EventType} == {"Normal", "Warning"}
    assert {str(v) for v in Verdict} == VERDICTS
    assert {str(o) for o in Outcome} == OUTCOMES
    assert {str(a) for a in Annotation} == ANNOTATIONS


def test_status_fields_are_the_crd_status_fields() -> None:
    assert set(STATUS_SCHEMA["properties"]) == STATUS_FIELDS
    assert set(STATUS_SCHEMA["properties"]["lastVerdict"]["enum"]) == VERDICTS


@pytest.mark.parametrize(
    "word",
    sorted(
        CONDITION_TYPES
        | set().union(*TABLE.values())
        | {reason for _, reason in EVENTS}
        | VERDICTS
        | OUTCOMES
        | ANNOTATIONS
        | STATUS_FIELDS
    ),
)
def test_docs_status_md_mentions(word: str) -> None:
    assert re.search(rf"`{re.escape(word)}`", DOCS.read_text()), f"docs/status.md: `{word}`"


# --- a structural check of to_dict() against the CRD's own status schema ------------------


def check_schema(value: Any, schema: dict[str, Any], path: str = "status") -> None:
    """Fail when ``value`` breaks ``schema`` (the subset of OpenAPI v3 the CRD uses)."""
    if value is None:
        assert schema.get("nullable"), f"{path}: null is not allowed"
        return
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(value, dict), path
        unknown = set(value) - set(schema.get("properties", {}))
        assert not unknown, f"{path}: fields {unknown} would be pruned by the API server"
        for name in schema.get("required", []):
            assert name in value, f"{path}.{name} is required"
        for name, item in value.items():
            check_schema(item, schema["properties"][name], f"{path}.{name}")
    elif kind == "array":
        assert isinstance(value, list), path
        for index, item in enumerate(value):
            check_schema(item, schema["items"], f"{path}[{index}]")
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            seen = [tuple(item[k] for k in keys) for item in value]
            assert len(seen) == len(set(seen)), f"{path}: duplicate list-map keys"
    elif kind == "string":
        assert isinstance(value, str), path
        if schema.get("format") == "date-time":
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value), f"{path}: {value}"
        if "minLength" in schema:
            assert len(value) >= schema["minLength"], path
        if "maxLength" in schema:
            assert len(value) <= schema["maxLength"], path
    elif kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), path
        assert value >= schema.get("minimum", -math.inf), path
    elif kind == "number":
        assert isinstance(value, int | float) and not isinstance(value, bool), path
        assert math.isfinite(value), path
    if "enum" in schema:
        assert value in schema["enum"], f"{path}: {value!r} not in {schema['enum']}"


def check_status(status: AnalysisStatus) -> dict[str, Any]:
    """Check a status against the CRD schema and docs/status.md's table; return its dict."""
    raw = status.to_dict()
    check_schema(raw, STATUS_SCHEMA)
    assert "pausedAt" in raw
    for condition in raw["conditions"]:
        if condition["type"] in CONDITION_TYPES:
            allowed = TABLE[(condition["type"], condition["status"])]
            assert condition["reason"] in allowed, condition
    return raw


def full_status() -> AnalysisStatus:
    return AnalysisStatus(
        observed_generation=4,
        last_verdict=Verdict.FAIL,
        failures=2,
        last_evaluation_time=T0,
        metric_results=(
            MetricResult("p99-latency", Verdict.FAIL, "0.412", 0.25, "worst of 3 series"),
            MetricResult("errors", Verdict.INCONCLUSIVE, None, 0.01),
        ),
        paused_at=None,
        conditions=(
            Condition("Ready", ConditionStatus.TRUE, "Evaluating", "ok", T0, 4),
            Condition("Healthy", ConditionStatus.FALSE, "ThresholdExceeded", "high", T0, 4),
            Condition("RolloutPaused", ConditionStatus.FALSE, "NotPaused", "", T0),
        ),
    )


def test_to_dict_is_exactly_the_crd_shape() -> None:
    raw = check_status(full_status())
    assert raw == {
        "observedGeneration": 4,
        "lastVerdict": "Fail",
        "failures": 2,
        "lastEvaluationTime": "2026-11-29T10:00:30Z",
        "metricResults": [
            {
                "name": "p99-latency",
                "value": "0.412",
                "maxValue": 0.25,
                "verdict": "Fail",
                "message": "worst of 3 series",
            },
            {"name": "errors", "maxValue": 0.01, "verdict": "Inconclusive"},
        ],
        "pausedAt": None,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Evaluating",
                "message": "ok",
                "lastTransitionTime": "2026-11-29T10:00:30Z",
                "observedGeneration": 4,
            },
            {
                "type": "Healthy",
                "status": "False",
                "reason": "ThresholdExceeded",
                "message": "high",
                "lastTransitionTime": "2026-11-29T10:00:30Z",
                "observedGeneration": 4,
            },
            {
                "type": "RolloutPaused",
                "status": "False",
                "reason": "NotPaused",
                "message": "",
                "lastTransitionTime": "2026-11-29T10:00:30Z",
            },
        ],
    }
    assert all(type(v) is str for v in (raw["lastVerdict"], raw["conditions"][0]["status"]))


def test_empty_status_writes_only_what_is_known() -> None:
    assert check_status(AnalysisStatus()) == {
        "failures": 0,
        "metricResults": [],
        "pausedAt": None,
        "conditions": [],
    }


def test_round_trip() -> None:
    status = full_status()
    assert AnalysisStatus.from_dict(status.to_dict()) == status
    paused = AnalysisStatus(paused_at=T0)
    assert paused.to_dict()["pausedAt"] == "2026-11-29T10:00:30Z"
    assert AnalysisStatus.from_dict(paused.to_dict()) == paused


@pytest.mark.parametrize("raw", [None, "x", 3, [], {"status": {}}])
def test_from_dict_of_nothing_useful_is_the_empty_status(raw: object) -> None:
    assert AnalysisStatus.from_dict(raw) == AnalysisStatus()


def test_from_dict_tolerates_garbage_fields() -> None:
    at = "2026-11-29T10:00:30Z"
    status = AnalysisStatus.from_dict(
        {
            "observedGeneration": "4",
            "lastVerdict": "Maybe",
            "failures": -3,
            "lastEvaluationTime": "yesterday",
            "pausedAt": 12,
            "metricResults": [
                "x",
                {"name": "a", "verdict": "Bogus"},
                {"verdict": "Pass"},
                {"name": "b", "verdict": "Pass", "value": 0.3, "maxValue": "1", "message": 5},
            ],
            "conditions": [
                {"type": "Ready", "status": "Yes", "lastTransitionTime": at},
                {"type": "Healthy", "status": "True", "lastTransitionTime": "nope"},
                {"status": "True", "lastTransitionTime": at},
                {
                    "type": "RolloutPaused",
                    "status": "False",
                    "lastTransitionTime": at,
                    "reason": 3,
                    "observedGeneration": -1,
                },
                {"type": "RolloutPaused", "status": "True", "lastTransitionTime": at},
                {
                    "type": "Custom",
                    "status": "True",
                    "reason": "X",
                    "message": "m",
                    "lastTransitionTime": "2026-11-29T12:00:30+02:00",
                },
            ],
        }
    )
    assert status.observed_generation is None
    assert status.last_verdict is None
    assert status.failures == 0
    assert status.last_evaluation_time is None
    assert status.paused_at is None
    assert status.metric_results == (MetricResult("b", Verdict.PASS, None, None, ""),)
    assert [c.type for c in status.conditions] == ["RolloutPaused", "Custom"]
    paused = status.condition("RolloutPaused")
    assert paused is not None
    assert (paused.status, paused.reason, paused.observed_generation) == ("False", "", None)
    custom = status.condition("Custom")
    assert custom is not None and custom.last_transition_time == T0
    assert status.condition("Ready") is None
    assert not status.is_true("RolloutPaused")


def test_with_conditions_replaces_by_type_and_keeps_foreign_conditions() -> None:
    status = AnalysisStatus(
        conditions=(
            Condition("Custom", ConditionStatus.TRUE, "X", "", T0),
            Condition("Ready", ConditionStatus.TRUE, "Evaluating", "", T0),
        )
    )
    healthy = Condition("Healthy", ConditionStatus.UNKNOWN, "NoData", "", T0)
    ready = Condition("Ready", ConditionStatus.FALSE, "InvalidSpec", "", T0)
    updated = status.with_conditions(ready, healthy)
    assert [(c.type, c.reason) for c in updated.conditions] == [
        ("Custom", "X"),
        ("Ready", "InvalidSpec"),
        ("Healthy", "NoData"),
    ]


def test_transition_keeps_last_transition_time_unless_status_changes() -> None:
    before = Condition("Ready", ConditionStatus.TRUE, "Evaluating", "a", T0, 1)
    later = T0 + timedelta(minutes=5)
    same = transition(
        before,
        type="Ready",
        status=ConditionStatus.TRUE,
        reason="Evaluating",
        message="b",
        now=later,
        generation=2,
    )
    assert (same.last_transition_time, same.message, same.observed_generation) == (T0, "b", 2)
    reason_only = transition(
        Condition("Ready", ConditionStatus.FALSE, "TargetNotFound", "", T0),
        type="Ready",
        status=ConditionStatus.FALSE,
        reason="MetricsUnavailable",
        message="",
        now=later,
        generation=2,
    )
    assert reason_only.last_transition_time == T0
    flipped = transition(
        before,
        type="Ready",
        status=ConditionStatus.FALSE,
        reason="InvalidQuery",
        message="",
        now=later,
        generation=2,
    )
    assert flipped.last_transition_time == later
    new = transition(
        None, type="Ready", status=ConditionStatus.TRUE, reason="E", message="", now=later,
        generation=None,
    )  # fmt: skip
    assert new.last_transition_time == later


def test_times_are_rfc3339_utc_with_z() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 11, 29, 12, 0, 30, 999_999, tzinfo=plus_two)) == (
        "2026-11-29T10:00:30Z"
    )
    assert parse_time("2026-11-29T10:00:30Z") == T0
    assert parse_time("2026-11-29T10:00:30.5Z") == T0 + timedelta(microseconds=500_000)
    assert parse_time("2026-11-29T12:00:30+02:00") == T0
    for garbage in ["2026-11-29T10:00:30", "", "never", None, 5]:
        assert parse_time(garbage) is None


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0.412, "0.412"),
        (0.0, "0"),
        (1e6, "1000000"),
        (1.5e-7, "0.00000015"),
        (-2.5, "-2.5"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (math.nan, "NaN"),
    ],
)
def test_format_value_prints_like_prometheus(number: float, text: str) -> None:
    assert format_value(number) == text
