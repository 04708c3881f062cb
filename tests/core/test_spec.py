"""parse_spec: the rules of docs/resource.md, the CRD defaults, Go durations, field paths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sentinel_core.spec import (
    AnalysisSpec,
    FieldError,
    InvalidSpecError,
    MetricSpec,
    Target,
    parse_duration,
    parse_spec,
)

ROOT = Path(__file__).resolve().parents[2]
VALID: dict[str, Any] = {
    "target": {"kind": "Deployment", "name": "checkout"},
    "metrics": [
        {"name": "p99-latency", "query": "histogram_quantile(0.99, x)", "maxValue": 0.25},
        {"name": "errors", "query": "sum(rate(errors_total[1m]))", "maxValue": 1},
    ],
    "interval": "1m30s",
    "failureLimit": 5,
    "dryRun": True,
}


def errors_of(raw: object, **kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(raw, **kwargs)
    return [(e.field, e.message) for e in caught.value.errors]


def fields_of(raw: object, **kwargs: Any) -> list[str]:
    return [field for field, _ in errors_of(raw, **kwargs)]


def with_changes(path: list[str | int], new: object) -> dict[str, Any]:
    raw = copy.deepcopy(VALID)
    node: Any = raw
    for step in path[:-1]:
        node = node[step]
    if new is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = new
    return raw


_DELETE = object()


def test_a_full_spec_parses() -> None:
    assert parse_spec(VALID) == AnalysisSpec(
        target=Target("Deployment", "checkout"),
        metrics=(
            MetricSpec("p99-latency", "histogram_quantile(0.99, x)", 0.25),
            MetricSpec("errors", "sum(rate(errors_total[1m]))", 1.0),
        ),
        interval="1m30s",
        interval_seconds=90.0,
        failure_limit=5,
        dry_run=True,
    )


def test_crd_defaults_are_applied() -> None:
    spec = parse_spec(
        {"target": {"name": "checkout"}, "metrics": [{"name": "a", "query": "up", "maxValue": 1}]}
    )
    assert spec.target.kind == "Deployment"
    assert (spec.interval, spec.interval_seconds) == ("30s", 30.0)
    assert spec.failure_limit == 3
    assert spec.dry_run is False


def test_to_dict_round_trips_with_defaults_written_out() -> None:
    spec = parse_spec(VALID)
    assert parse_spec(spec.to_dict()) == spec
    assert spec.to_dict()["interval"] == "1m30s"


def test_crd_defaults_match_the_crd() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "rolloutanalysis.yaml").read_text())
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    spec = parse_spec({"target": {"name": "x"}, "metrics": [VALID["metrics"][0]]})
    # interval and failureLimit have none in the CRD, so that a template's apply
    # (docs/templates.md); their descriptions state parse_spec's.
    assert "default" not in props["interval"] and "default" not in props["failureLimit"]
    assert f"Default {spec.interval}," in props["interval"]["description"]
    assert f"Default {spec.failure_limit}," in props["failureLimit"]["description"]
    assert props["dryRun"]["default"] == spec.dry_run
    assert props["target"]["properties"]["kind"]["default"] == spec.target.kind


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("2h45m", 9900.0),
        ("1h1m1s1ms1us1ns", 3661.001001001),
        ("5µs", 5e-6),
        ("0.5m", 30.0),
        ("5s0ms", 5.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-12)


@pytest.mark.parametrize("text", ["", "30", "1d", "-5s", "s", "1.s", ".5s", "5 s", "1m 30s", "5S"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_absurd_durations_are_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_duration("9999999h")


@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["ms", "s", "m", "h"])),
        min_size=1,
        max_size=4,
    )
)
def test_durations_sum_their_parts(parts: list[tuple[int, str]]) -> None:
    unit = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert parse_duration(text) == pytest.approx(sum(n * unit[u] for n, u in parts))


def test_interval_must_be_at_least_five_seconds() -> None:
    assert errors_of(with_changes(["interval"], "4999ms")) == [
        ("spec.interval", "must be at least 5s, got 4999ms")
    ]
    assert parse_spec(with_changes(["interval"], "5000ms")).interval_seconds == 5.0


@pytest.mark.parametrize(
    ("path", "new", "field"),
    [
        (["target"], _DELETE, "spec.target"),
        (["target"], "checkout", "spec.target"),
        (["target", "kind"], "ReplicaSet", "spec.target.kind"),
        (["target", "name"], _DELETE, "spec.target.name"),
        (["target", "name"], "", "spec.target.name"),
        (["target", "name"], "Checkout", "spec.target.name"),
        (["target", "name"], "a" * 254, "spec.target.name"),
        (["target", "name"], 7, "spec.target.name"),
        (["metrics"], _DELETE, "spec.metrics"),
        (["metrics"], [], "spec.metrics"),
        (["metrics"], {"name": "a"}, "spec.metrics"),
        (["metrics", 1], "p99", "spec.metrics[1]"),
        (["metrics", 1, "name"], _DELETE, "spec.metrics[1].name"),
        (["metrics", 1, "name"], "p99_latency", "spec.metrics[1].name"),
        (["metrics", 1, "name"], "a.b", "spec.metrics[1].name"),
        (["metrics", 1, "name"], "x" * 64, "spec.metrics[1].name"),
        (["metrics", 1, "name"], "-a", "spec.metrics[1].name"),
        (["metrics", 1, "query"], _DELETE, "spec.metrics[1].query"),
        (["metrics", 1, "query"], "", "spec.metrics[1].query"),
        (["metrics", 1, "query"], "   ", "spec.metrics[1].query"),
        (["metrics", 1, "query"], ["up"], "spec.metrics[1].query"),
        (["metrics", 1, "maxValue"], _DELETE, "spec.metrics[1].maxValue"),
        (["metrics", 1, "maxValue"], "0.25", "spec.metrics[1].maxValue"),
        (["metrics", 1, "maxValue"], True, "spec.metrics[1].maxValue"),
        (["metrics", 1, "maxValue"], float("nan"), "spec.metrics[1].maxValue"),
        (["metrics", 1, "maxValue"], float("inf"), "spec.metrics[1].maxValue"),
        (["metrics", 1, "maxValue"], 10**400, "spec.metrics[1].maxValue"),
        (["interval"], 30, "spec.interval"),
        (["interval"], "30", "spec.interval"),
        (["interval"], "1s", "spec.interval"),
        (["failureLimit"], 0, "spec.failureLimit"),
        (["failureLimit"], -1, "spec.failureLimit"),
        (["failureLimit"], 2.5, "spec.failureLimit"),
        (["failureLimit"], "3", "spec.failureLimit"),
        (["failureLimit"], True, "spec.failureLimit"),
        (["failureLimit"], 2**31, "spec.failureLimit"),
        (["dryRun"], "false", "spec.dryRun"),
        (["dryRun"], 0, "spec.dryRun"),
    ],
)
def test_each_rule_reports_its_field(path: list[str | int], new: object, field: str) -> None:
    assert fields_of(with_changes(path, new)) == [field]


def test_duplicate_metric_names_name_the_first_use() -> None:
    raw = with_changes(["metrics", 1, "name"], "p99-latency")
    assert errors_of(raw) == [
        ("spec.metrics[1].name", "duplicate name 'p99-latency', already used by spec.metrics[0]")
    ]


def test_every_error_is_reported_at_once_in_field_order() -> None:
    raw = {
        "target": {"kind": "Pod"},
        "metrics": [{"name": "OK", "query": "", "maxValue": "x"}],
        "interval": "2s",
        "failureLimit": 0,
        "dryRun": "yes",
    }
    assert fields_of(raw) == [
        "spec.target.kind",
        "spec.target.name",
        "spec.metrics[0].name",
        "spec.metrics[0].query",
        "spec.metrics[0].maxValue",
        "spec.interval",
        "spec.failureLimit",
        "spec.dryRun",
    ]


def test_a_non_object_spec_is_one_error() -> None:
    assert errors_of(["target"]) == [("spec", "must be an object")]
    assert errors_of(None) == [("spec", "must be an object")]


def test_integral_floats_are_integers_and_ints_are_numbers() -> None:
    spec = parse_spec(with_changes(["failureLimit"], 4.0))
    assert spec.failure_limit == 4 and isinstance(spec.failure_limit, int)
    assert parse_spec(with_changes(["metrics", 0, "maxValue"], 0)).metrics[0].max_value == 0.0


def test_unknown_fields_are_dropped_unless_strict() -> None:
    raw = with_changes(["metrics", 0, "maxvalue"], 3)
    raw["extra"] = True
    assert parse_spec(raw) == parse_spec(VALID)
    assert fields_of(raw, strict=True) == ["spec.extra", "spec.metrics[0].maxvalue"]


def test_path_prefix_and_error_helpers() -> None:
    raw = with_changes(["failureLimit"], 0)
    raw["interval"] = "1x"
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(raw, path="body.spec")
    error = caught.value
    assert [e.field for e in error.errors] == ["body.spec.interval", "body.spec.failureLimit"]
    assert error.by_field() == {
        "body.spec.interval": [error.errors[0].message],
        "body.spec.failureLimit": ["must be between 1 and 2147483647"],
    }
    assert str(error).startswith("body.spec.interval: '1x' is not a duration")
    assert isinstance(error, ValueError)
    assert str(FieldError("a", "b")) == "a: b"
