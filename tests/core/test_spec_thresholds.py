"""parse_spec for docs/resource.md: maxIncrease, baseline, minSamples, failureWindow, rule by rule.

The same cases against the real API server are tests/cluster/test_crd_thresholds_parity.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from sentinel_core.spec import (
    Baseline,
    Increase,
    InvalidSpecError,
    MinSamples,
    parse_spec,
)


def _spec(metric: dict[str, Any], **fields: Any) -> dict[str, Any]:
    item = {"name": "p99", "query": "up", **metric}
    return {"target": {"name": "checkout"}, "metrics": [item], **fields}


def _errors(raw: dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(raw, **kwargs)
    return [(e.field, e.message) for e in caught.value.errors]


def test_a_relative_metric_with_a_guard_parses() -> None:
    spec = parse_spec(
        _spec(
            {
                "maxIncrease": {"percent": 20},
                "baseline": {"beforeRollout": True},
                "minSamples": {"query": "sum(up)", "min": 200},
            },
            failureLimit=2,
            failureWindow=4,
        ),
        strict=True,
    )
    metric = spec.metrics[0]
    assert metric.max_value is None
    assert metric.max_increase == Increase(percent=20.0)
    assert metric.baseline == Baseline(before_rollout=True)
    assert metric.min_samples == MinSamples(query="sum(up)", min=200.0)
    assert spec.failure_window == 4
    assert spec.summary.failure_window == 4
    assert spec.to_dict()["failureWindow"] == 4
    assert spec.to_dict()["metrics"][0] == {
        "name": "p99",
        "query": "up",
        "maxIncrease": {"percent": 20.0},
        "baseline": {"beforeRollout": True},
        "minSamples": {"query": "sum(up)", "min": 200.0},
    }


def test_offset_is_parsed_to_seconds_and_round_trips() -> None:
    raw = _spec({"maxValue": 1, "maxIncrease": {"absolute": 0.05}, "baseline": {"offset": "1h30m"}})
    spec = parse_spec(raw)
    assert spec.metrics[0].baseline == Baseline(offset="1h30m", offset_seconds=5400.0)
    assert parse_spec(spec.to_dict()) == spec


def test_without_the_new_fields_nothing_changes() -> None:
    spec = parse_spec(_spec({"maxValue": 0.25}))
    assert spec.failure_window is None and "failureWindow" not in spec.to_dict()
    metric = spec.metrics[0]
    assert (metric.max_increase, metric.baseline, metric.min_samples) == (None, None, None)


@pytest.mark.parametrize(
    ("metric", "fields", "expected"),
    [
        (
            {},
            {},
            [("spec.metrics[0].maxValue", "is required unless maxIncrease or compare is given")],
        ),
        (
            {"maxIncrease": {"percent": 1, "absolute": 1}, "baseline": {"offset": "1h"}},
            {},
            [("spec.metrics[0].maxIncrease", "must set exactly one of percent and absolute")],
        ),
        (
            {"maxIncrease": {"percent": -1}, "baseline": {"offset": "1h"}},
            {},
            [("spec.metrics[0].maxIncrease.percent", "must be 0 or more")],
        ),
        (
            {"maxIncrease": {"percent": "ten"}, "baseline": {"offset": "1h"}},
            {},
            [("spec.metrics[0].maxIncrease.percent", "must be a finite number")],
        ),
        (
            {"maxIncrease": [1], "baseline": {"offset": "1h"}},
            {},
            [("spec.metrics[0].maxIncrease", "must be an object with percent or absolute")],
        ),
        (
            {"maxIncrease": {"percent": 5}},
            {},
            [("spec.metrics[0].baseline", "is required with maxIncrease")],
        ),
        (
            {"maxValue": 1, "baseline": {"offset": "1h"}},
            {},
            [("spec.metrics[0].baseline", "is only used with maxIncrease")],
        ),
        (
            {"maxIncrease": {"percent": 5}, "baseline": {}},
            {},
            [
                (
                    "spec.metrics[0].baseline",
                    "must set exactly one of offset and beforeRollout: true",
                )
            ],
        ),
        (
            {"maxIncrease": {"percent": 5}, "baseline": {"beforeRollout": False}},
            {},
            [
                (
                    "spec.metrics[0].baseline",
                    "must set exactly one of offset and beforeRollout: true",
                )
            ],
        ),
        (
            {"maxIncrease": {"percent": 5}, "baseline": {"offset": "0s"}},
            {},
            [("spec.metrics[0].baseline.offset", "must be longer than 0s")],
        ),
        (
            {"maxIncrease": {"percent": 5}, "baseline": {"beforeRollout": "yes"}},
            {},
            [
                ("spec.metrics[0].baseline.beforeRollout", "must be true or false"),
            ],
        ),
        (
            {"maxValue": 1, "minSamples": {"query": "up"}},
            {},
            [("spec.metrics[0].minSamples.min", "is required")],
        ),
        (
            {"maxValue": 1, "minSamples": {"query": " ", "min": -2}},
            {},
            [
                ("spec.metrics[0].minSamples.query", "must be a non-empty PromQL string"),
                ("spec.metrics[0].minSamples.min", "must be 0 or more"),
            ],
        ),
        (
            {"maxValue": 1, "minSamples": {"query": "x" * 4097, "min": 1}},
            {},
            [("spec.metrics[0].minSamples.query", "may not be more than 4096 characters")],
        ),
        (
            {"maxValue": 1},
            {"failureWindow": 2},
            [("spec.failureWindow", "must be at least failureLimit")],
        ),
        (
            {"maxValue": 1},
            {"failureWindow": 101, "failureLimit": 1},
            [("spec.failureWindow", "must be between 1 and 100")],
        ),
        (
            {"maxValue": 1},
            {"failureWindow": 2.5},
            [("spec.failureWindow", "must be an integer")],
        ),
    ],
)
def test_each_rule_names_its_field(
    metric: dict[str, Any], fields: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _errors(_spec(metric, **fields)) == expected


def test_offset_that_is_no_duration_gets_one_error() -> None:
    errors = _errors(_spec({"maxIncrease": {"percent": 5}, "baseline": {"offset": "soon"}}))
    assert [field for field, _ in errors] == ["spec.metrics[0].baseline.offset"]


def test_strict_mode_knows_the_new_fields_and_refuses_typos() -> None:
    raw = _spec(
        {
            "maxIncrease": {"percent": 5, "percnt": 1},
            "baseline": {"offset": "1h", "when": 1},
            "minSamples": {"query": "up", "min": 1, "max": 2},
        },
        failureWindow=3,
    )
    assert _errors(raw, strict=True) == [
        ("spec.metrics[0].maxIncrease.percnt", "unknown field"),
        ("spec.metrics[0].baseline.when", "unknown field"),
        ("spec.metrics[0].minSamples.max", "unknown field"),
    ]
    # Without strict the API server's pruning is mimicked: typos are dropped.
    assert parse_spec(raw).metrics[0].max_increase == Increase(percent=5.0)


def test_an_invalid_spec_keeps_its_failure_window_in_the_summary() -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(_spec({}, failureWindow=5))
    assert caught.value.summary.failure_window == 5
