"""Kubernetes JSONPath in devcluster.jsonpath, and the RolloutAnalysis CRD printer-column cells."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from devcluster.jsonpath import JSONPathError, cell, evaluate
from testkit.paths import CRD_PATH

ANALYSIS: dict[str, Any] = {
    "apiVersion": "sentinel.example.com/v1alpha1",
    "kind": "RolloutAnalysis",
    "metadata": {
        "name": "checkout",
        "namespace": "shop",
        "creationTimestamp": "2026-11-29T10:00:00Z",
        "labels": {"app.kubernetes.io/name": "checkout"},
    },
    "spec": {
        "target": {"kind": "Deployment", "name": "checkout"},
        "failureLimit": 3,
        "interval": "30s",
        "metrics": [
            {"name": "errors", "query": "sum(rate(errors[1m]))", "maxValue": 0.05},
            {"name": "latency", "query": "histogram_quantile(0.99, x)", "maxValue": 0.3},
        ],
    },
    "status": {
        "observedGeneration": 1,
        "lastVerdict": "Fail",
        "failures": 3,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Evaluating"},
            {"type": "RolloutPaused", "status": "True", "reason": "FailureLimitReached"},
        ],
        "metricResults": [
            {"name": "errors", "verdict": "Fail", "value": 0.2},
            {"name": "latency", "verdict": "Pass", "value": 0.1},
        ],
    },
}


def printer_columns() -> list[dict[str, Any]]:
    crd = yaml.safe_load(CRD_PATH.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["additionalPrinterColumns"]


def test_rolloutanalysis_printer_columns_on_a_paused_analysis() -> None:
    cells = {c["name"]: cell(c["jsonPath"], ANALYSIS, c["type"]) for c in printer_columns()}
    assert cells == {
        "Kind": "Deployment",
        "Target": "checkout",
        "Verdict": "Fail",
        "Failures": 3,
        "Limit": 3,
        "Paused": "True",
        "Age": "2026-11-29T10:00:00Z",
    }


def test_rolloutanalysis_printer_columns_before_any_status() -> None:
    fresh = {key: value for key, value in ANALYSIS.items() if key != "status"}
    cells = {c["name"]: cell(c["jsonPath"], fresh, c["type"]) for c in printer_columns()}
    assert cells["Verdict"] is None
    assert cells["Failures"] is None
    assert cells["Paused"] is None
    assert cells["Target"] == "checkout"
    assert cells["Kind"] == "Deployment"


def test_date_cells_become_ages_when_given_the_clock() -> None:
    now = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
    stamp = ".metadata.creationTimestamp"
    ages = [
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=5, seconds=7), "5m7s"),
        (timedelta(minutes=42), "42m"),
        (timedelta(hours=5, minutes=30), "5h30m"),
        (timedelta(hours=30), "30h"),
        (timedelta(days=3, hours=4), "3d4h"),
        (timedelta(days=40), "40d"),
        (timedelta(days=800), "2y70d"),
    ]
    for age, text in ages:
        assert cell(stamp, ANALYSIS, "date", now=now + age) == text
    broken = {"metadata": {"creationTimestamp": "yesterday"}}
    assert cell(stamp, broken, "date", now=now) == "<invalid>"


@pytest.mark.parametrize(
    ("expression", "column_type", "expected"),
    [
        (".status.failures", "integer", 3),
        (".spec.metrics[0].maxValue", "number", 0.05),
        (".spec.failureLimit", "number", 3.0),
        (".spec.failureLimit", "string", "3"),
        (".spec.target", "string", '{"kind":"Deployment","name":"checkout"}'),
        (".status.lastVerdict", "integer", None),
        (".spec.missing", "string", None),
        (".status.conditions[*].type", "string", "Ready"),
    ],
)
def test_cell_types(expression: str, column_type: str, expected: Any) -> None:
    assert cell(expression, ANALYSIS, column_type) == expected


def test_boolean_cells() -> None:
    obj = {"spec": {"dryRun": False}}
    assert cell(".spec.dryRun", obj, "boolean") is False
    assert cell(".spec.dryRun", obj, "string") == "false"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (".metadata.name", ["checkout"]),
        ("{.metadata.name}", ["checkout"]),
        ("$.metadata.name", ["checkout"]),
        ("['metadata']['name']", ["checkout"]),
        (".metadata.labels['app.kubernetes.io/name']", ["checkout"]),
        (".spec.metrics[0].name", ["errors"]),
        (".spec.metrics[-1].name", ["latency"]),
        (".spec.metrics[*].name", ["errors", "latency"]),
        (".spec.metrics[0:1].name", ["errors"]),
        (".spec.metrics[0,1].maxValue", [0.05, 0.3]),
        (".spec.target.*", ["Deployment", "checkout"]),
        ('.status.conditions[?(@.type=="RolloutPaused")].reason', ["FailureLimitReached"]),
        (".status.conditions[?(@.type=='Ready')].status", ["True"]),
        ('.status.conditions[?(@.type!="Ready")].type', ["RolloutPaused"]),
        (".status.metricResults[?(@.value>0.15)].name", ["errors"]),
        (".status.metricResults[?(@.value<0.15)].name", ["latency"]),
        (".status.metricResults[?(@.value>=0.1)].name", ["errors", "latency"]),
        (".status.conditions[?(@.reason)].type", ["Ready", "RolloutPaused"]),
        (".status.conditions[?(@.message)].type", []),
        ("..verdict", ["Fail", "Pass"]),
        (".spec..maxValue", [0.05, 0.3]),
        (".spec.metrics[5].name", []),
        (".spec.nothing.deeper", []),
        (".spec.metrics.name", []),
    ],
)
def test_evaluate(expression: str, expected: list[Any]) -> None:
    assert evaluate(expression, ANALYSIS) == expected


def test_recursive_descent_walks_map_keys_in_sorted_order() -> None:
    # Go iterates maps in random order; sorted keys make the answer stable.
    names = evaluate("..name", ANALYSIS)
    assert names == ["checkout", "errors", "latency", "checkout", "errors", "latency"]
    assert evaluate(".status.*", {"status": {"b": 2, "a": 1}}) == [1, 2]


def test_escaped_dots_stay_inside_a_key() -> None:
    assert evaluate(".metadata.labels.app\\.kubernetes\\.io/name", ANALYSIS) == ["checkout"]
    assert evaluate(".metadata.labels['app\\.kubernetes\\.io/name']", ANALYSIS) == ["checkout"]


@pytest.mark.parametrize("expression", [".spec.metrics[0", ".spec.metrics[x]", "[?(@.a==)]"])
def test_malformed_expressions_raise(expression: str) -> None:
    with pytest.raises(JSONPathError):
        evaluate(expression, ANALYSIS)
