"""schema.validate against the real RolloutAnalysis CRD: every rule of docs/resource.md, with
the field paths and messages kube-apiserver prints."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from devcluster import gofmt, schema
from devcluster.schema import Cause
from testkit.paths import CRD_PATH


@pytest.fixture(scope="module")
def ra_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD_PATH.read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _analysis(**spec: Any) -> dict[str, Any]:
    """Return the example of docs/resource.md with ``spec`` keys replaced (None removes a key)."""
    obj: dict[str, Any] = {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "checkout", "namespace": "shop", "labels": {"a": "b"}},
        "spec": {
            "target": {"kind": "Deployment", "name": "checkout"},
            "metrics": [
                {
                    "name": "p99-latency",
                    "query": "histogram_quantile(0.99, rate(x_bucket[5m]))",
                    "maxValue": 0.25,
                }
            ],
            "interval": "30s",
            "failureLimit": 3,
            "dryRun": False,
        },
    }
    for key, value in spec.items():
        if value is None:
            obj["spec"].pop(key)
        else:
            obj["spec"][key] = value
    return obj


# kube-apiserver's first cause after a blocking schema error on a CRD with CEL rules.
_CEL_NOTE = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


def _without_note(causes: list[Cause]) -> list[Cause]:
    return [cause for cause in causes if cause.field != "<nil>"]


def _lines(causes: list[Cause]) -> list[str]:
    return [str(cause) for cause in _without_note(causes)]


def test_the_spec_example_is_valid(ra_schema: dict[str, Any]) -> None:
    assert schema.validate(ra_schema, _analysis()) == []


def test_a_defaulted_minimal_analysis_is_valid(ra_schema: dict[str, Any]) -> None:
    minimal = _analysis(interval=None, failureLimit=None, dryRun=None)
    minimal["spec"]["target"].pop("kind")
    assert schema.validate(ra_schema, schema.apply_defaults(ra_schema, minimal)) == []


METRIC = {"name": "p99", "query": "up", "maxValue": 1}
PATTERN_DNS = r"'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"target": {"kind": "ReplicaSet", "name": "checkout"}},
            (
                "FieldValueNotSupported",
                'spec.target.kind: Unsupported value: "ReplicaSet": supported values: '
                '"Deployment", "StatefulSet", "DaemonSet"',
            ),
        ),
        (
            {"target": {"kind": "Deployment"}},
            ("FieldValueRequired", "spec.target.name: Required value"),
        ),
        (
            {"target": {"name": "Checkout_1"}},
            (
                "FieldValueInvalid",
                'spec.target.name: Invalid value: "Checkout_1": spec.target.name in body should '
                r"match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
            ),
        ),
        (
            {"target": {"name": "a" * 254}},
            ("FieldValueTooLong", "spec.target.name: Too long: may not be more than 253 bytes"),
        ),
        # Required unless templates are given (docs/templates.md): a CEL rule with its reason.
        (
            {"metrics": None},
            (
                "FieldValueRequired",
                "spec.metrics: Required value: is required unless templates are given",
            ),
        ),
        (
            {"metrics": []},
            (
                "FieldValueInvalid",
                "spec.metrics: Invalid value: 0: spec.metrics in body should have at least 1 items",
            ),
        ),
        (
            {"metrics": [{**METRIC, "name": "P99"}]},
            (
                "FieldValueInvalid",
                'spec.metrics[0].name: Invalid value: "P99": spec.metrics[0].name in body should '
                f"match {PATTERN_DNS}",
            ),
        ),
        (
            {"metrics": [{**METRIC, "query": ""}]},
            (
                "FieldValueInvalid",
                'spec.metrics[0].query: Invalid value: "": spec.metrics[0].query in body should '
                "be at least 1 chars long",
            ),
        ),
        (
            {"metrics": [{"name": "p99", "maxValue": 1}]},
            (
                "FieldValueRequired",
                "spec.metrics[0].query: Required value: is required unless sequential is given",
            ),
        ),
        (
            {"metrics": [{**METRIC, "maxValue": "string"}]},
            (
                "FieldValueTypeInvalid",
                'spec.metrics[0].maxValue: Invalid value: "string": spec.metrics[0].maxValue in '
                'body must be of type number: "string"',
            ),
        ),
        (
            {"metrics": [METRIC, {**METRIC, "query": "down"}]},
            (
                "FieldValueDuplicate",
                'spec.metrics[1]: Duplicate value: {"name":"p99"}',
            ),
        ),
        (
            {"interval": "soon"},
            (
                "FieldValueInvalid",
                'spec.interval: Invalid value: "soon": spec.interval in body should match '
                r"'^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'",
            ),
        ),
        (
            {"failureLimit": 0},
            (
                "FieldValueInvalid",
                "spec.failureLimit: Invalid value: 0: spec.failureLimit in body should be greater "
                "than or equal to 1",
            ),
        ),
        (
            {"failureLimit": "3"},
            (
                "FieldValueTypeInvalid",
                'spec.failureLimit: Invalid value: "string": spec.failureLimit in body must be of '
                'type integer: "string"',
            ),
        ),
        (
            {"dryRun": "yes"},
            (
                "FieldValueTypeInvalid",
                'spec.dryRun: Invalid value: "string": spec.dryRun in body must be of type '
                'boolean: "string"',
            ),
        ),
    ],
)
def test_each_schema_rule_rejects_a_bad_analysis(
    ra_schema: dict[str, Any], spec: dict[str, Any], expected: tuple[str, str]
) -> None:
    causes = _without_note(schema.validate(ra_schema, _analysis(**spec)))
    assert [(c.reason, str(c)) for c in causes] == [expected]


def test_cel_rules_and_the_api_servers_note_when_they_are_skipped(
    ra_schema: dict[str, Any],
) -> None:
    # A wrong type, a required or unsupported value makes kube-apiserver skip the CEL rules and
    # say so after the other causes; a pattern or minimum error does not.
    blocking = schema.validate(ra_schema, _analysis(failureLimit="3"))
    assert str(blocking[-1]) == _CEL_NOTE and len(blocking) == 2
    assert blocking[0].field == "spec.failureLimit"
    assert [str(c) for c in schema.validate(ra_schema, _analysis(failureLimit=0))] == [
        "spec.failureLimit: Invalid value: 0: spec.failureLimit in body should be greater "
        "than or equal to 1"
    ]
    # Without a blocking error the CEL rules are evaluated (devcluster/cel.py).
    relative = {
        "name": "p99",
        "query": "up",
        "maxIncrease": {"percent": 1, "absolute": 1},
        "baseline": {"offset": "0s"},
    }
    assert [str(c) for c in schema.validate(ra_schema, _analysis(metrics=[relative]))] == [
        "spec.metrics[0].maxIncrease: Invalid value: must set exactly one of percent and absolute",
        'spec.metrics[0].baseline.offset: Invalid value: "0s": must be longer than 0s',
    ]
    window = _analysis(failureLimit=3)
    window["spec"]["failureWindow"] = 2
    assert [(c.reason, str(c)) for c in schema.validate(ra_schema, window)] == [
        ("FieldValueInvalid", "spec.failureWindow: Invalid value: must be at least failureLimit")
    ]
    # No failureLimit: the operator's default 3 is read, or 1 when a template may give one.
    unset = _analysis(failureLimit=None)
    unset["spec"]["failureWindow"] = 2
    assert [str(c) for c in schema.validate(ra_schema, unset)] == [
        "spec.failureWindow: Invalid value: must be at least failureLimit"
    ]
    unset["spec"]["templates"] = [{"name": "golden-signals"}]
    assert schema.validate(ra_schema, unset) == []
    missing = _analysis(metrics=[{"name": "p99", "query": "up"}])
    assert [(c.reason, str(c)) for c in schema.validate(ra_schema, missing)] == [
        (
            "FieldValueRequired",
            "spec.metrics[0].maxValue: Required value: "
            "is required unless maxIncrease or compare is given",
        )
    ]


def test_all_problems_are_reported_together(ra_schema: dict[str, Any]) -> None:
    bad = _analysis(
        target={"kind": "ReplicaSet", "name": "checkout"},
        metrics=[METRIC, {**METRIC, "maxValue": "x"}],
        failureLimit=0,
    )
    fields = [c.field for c in _without_note(schema.validate(ra_schema, bad))]
    assert fields == [
        "spec.target.kind",
        "spec.metrics[1].maxValue",
        "spec.failureLimit",
        "spec.metrics[1]",
    ]


def test_a_spec_that_is_not_an_object(ra_schema: dict[str, Any]) -> None:
    bad = _analysis()
    bad["spec"] = ["not", "an", "object"]
    assert _lines(schema.validate(ra_schema, bad)) == [
        'spec: Invalid value: "array": spec in body must be of type object: "array"'
    ]


def test_metadata_api_version_and_kind_are_left_to_the_server(ra_schema: dict[str, Any]) -> None:
    obj = _analysis()
    obj["metadata"] = {"name": 5, "whatever": []}
    obj["kind"] = 7
    assert schema.validate(ra_schema, obj) == []


def test_status_rules(ra_schema: dict[str, Any]) -> None:
    obj = _analysis()
    obj["status"] = {
        "pausedAt": None,
        "lastVerdict": "Maybe",
        "failures": -1,
        "lastEvaluationTime": "yesterday",
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Ok", "message": "",
             "lastTransitionTime": "2026-11-29T16:00:00Z"},
            {"type": "Ready", "status": "Sure", "reason": "Ok", "message": "",
             "lastTransitionTime": "2026-11-29T16:00:00.123456+01:00"},
        ],
    }  # fmt: skip
    assert _lines(schema.validate(ra_schema, obj)) == [
        'status.lastVerdict: Unsupported value: "Maybe": supported values: "Pass", "Fail", '
        '"Inconclusive"',
        "status.failures: Invalid value: -1: status.failures in body should be greater than or "
        "equal to 0",
        'status.lastEvaluationTime: Invalid value: "yesterday": status.lastEvaluationTime in '
        'body must be of type date-time: "yesterday"',
        'status.conditions[1].status: Unsupported value: "Sure": supported values: "True", '
        '"False", "Unknown"',
        'status.conditions[1]: Duplicate value: {"type":"Ready"}',
    ]


def test_null_is_refused_unless_nullable(ra_schema: dict[str, Any]) -> None:
    obj = _analysis(interval=None)
    obj["spec"]["interval"] = None
    obj["status"] = {"pausedAt": None}
    assert _lines(schema.validate(ra_schema, obj)) == [
        'spec.interval: Invalid value: "null": spec.interval in body must be of type string: "null"'
    ]


NODE_CASES = [
    ({"type": "integer"}, 3.0, []),
    ({"type": "integer"}, 3.5,
     ['x: Invalid value: "number": x in body must be of type integer: "number"']),
    ({"type": "number"}, 2, []),
    ({"type": "number", "maximum": 5, "exclusiveMaximum": True}, 5,
     ["x: Invalid value: 5: x in body should be less than 5"]),
    ({"type": "number", "minimum": 0.5, "exclusiveMinimum": True}, 0.5,
     ["x: Invalid value: 0.5: x in body should be greater than 0.5"]),
    ({"type": "number", "maximum": 1000000}, 2e6,
     ["x: Invalid value: 2e+06: x in body should be less than or equal to 1e+06"]),
    ({"type": "string", "enum": ["a", 1]}, "b",
     ['x: Unsupported value: "b": supported values: "a", "1"']),
    ({"x-kubernetes-int-or-string": True}, "25%", []),
    ({"x-kubernetes-int-or-string": True}, 1, []),
    ({"x-kubernetes-int-or-string": True}, True,
     ['x: Invalid value: "boolean": x in body must be of type integer,string: "boolean"']),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 2}, ["a", "b", "c"],
     ["x: Too many: 3: must have at most 2 items"]),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, ["a", "a"],
     ['x: Invalid value: "": x in body shouldn\'t contain duplicates']),
    ({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
     ["a", "b", "a", "a"], ['x[2]: Duplicate value: "a"']),
    ({"type": "array", "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["port", "protocol"],
      "items": {"type": "object", "properties": {"port": {"type": "integer"},
                                                 "protocol": {"type": "string"}}}},
     [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"},
      {"port": 80, "protocol": "TCP"}],
     ['x[2]: Duplicate value: {"port":80,"protocol":"TCP"}']),
    ({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
     {"a": 1, "b": 0}, ["x.b: Invalid value: 0: x.b in body should be greater than or equal to 1"]),
    ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2},
     ["x: Too many: 2: must have at most 1 item"]),
    ({"type": "string", "maxLength": 1}, "ab", ["x: Too long: may not be more than 1 byte"]),
    ({"type": "string", "format": "date-time"}, "2026-11-29T16:39:57Z", []),
    ({"type": "string", "format": "int-or-string"}, "anything", []),
    ({"type": "string", "pattern": "(unclosed"}, "x",
     ['x: Invalid value: "x": x in body should match \'(unclosed, but pattern is invalid: '
      "missing ), unterminated subpattern at position 0'"]),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2},
     ['x: Invalid value: "b": x.b in body is a forbidden property']),
]  # fmt: skip


@pytest.mark.parametrize(("node", "value", "expected"), NODE_CASES)
def test_single_keywords(node: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _lines(schema.validate_value(node, value, "x")) == expected


def test_causes_keep_the_input_unchanged(ra_schema: dict[str, Any]) -> None:
    bad = _analysis(metrics=[METRIC, METRIC])
    before = copy.deepcopy(bad)
    assert schema.validate(ra_schema, bad)
    assert bad == before


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (0.25, "0.25"),
        (1.0, "1"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        ("µs\n\"", '"µs\\n\\""'),
        (None, "null"),
        (True, "true"),
        # Composite values as encoding/json marshals them (apimachinery v0.37 ErrorBody).
        ({"b": [1, "x", None], "a": 1.5}, '{"a":1.5,"b":[1,"x",null]}'),
        ({"a": 2.0, "b": 1e-7, "c": 1e21, "d": 0.00001}, '{"a":2,"b":1e-7,"c":1e+21,"d":0.00001}'),
        ([{"q": "<a & b>"}], '[{"q":"\\u003ca \\u0026 b\\u003e"}]'),
    ],
)  # fmt: skip
def test_bad_values_print_like_go(value: Any, printed: str) -> None:
    assert gofmt.go_value(value) == printed
