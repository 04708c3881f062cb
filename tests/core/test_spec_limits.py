"""parse_spec's size limits: 20 metrics, 4,096-character queries, 63-character names.

The limits are listed in docs/resource.md.

The same limits are the CRD's ``maxItems`` / ``maxLength``; this file pins parse_spec's side and
that the CRD file declares the same numbers (tests/api/test_spec_limits.py checks both answers).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sentinel_core.spec import (
    MAX_METRIC_NAME_LENGTH,
    MAX_METRICS,
    MAX_QUERY_LENGTH,
    InvalidSpecError,
    parse_spec,
)
from testkit.paths import REPO_ROOT


def _spec(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    return {"target": {"name": "checkout"}, "metrics": metrics}


def _metric(index: int, **fields: Any) -> dict[str, Any]:
    return {"name": f"m{index}", "query": "up", "maxValue": 1, **fields}


def _fields(raw: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(raw)
    return refused.value.by_field()


def test_limits_are_the_specs() -> None:
    assert (MAX_METRICS, MAX_QUERY_LENGTH, MAX_METRIC_NAME_LENGTH) == (20, 4096, 63)


def test_at_most_20_metrics() -> None:
    assert len(parse_spec(_spec([_metric(i) for i in range(20)])).metrics) == 20
    assert _fields(_spec([_metric(i) for i in range(21)])) == {
        "spec.metrics": ["must have at most 20 items"]
    }


def test_query_at_most_4096_characters() -> None:
    assert parse_spec(_spec([_metric(0, query="é" * 4096)])).metrics[0].query == "é" * 4096
    assert _fields(_spec([_metric(0, query="u" * 4097)])) == {
        "spec.metrics[0].query": ["may not be more than 4096 characters"]
    }


def test_metric_name_at_most_63() -> None:
    assert parse_spec(_spec([_metric(0, name="m" * 63)])).metrics[0].name == "m" * 63
    assert set(_fields(_spec([_metric(0, name="m" * 64)]))) == {"spec.metrics[0].name"}


def test_too_many_metrics_still_reports_each_item() -> None:
    errors = _fields(_spec([_metric(i, query="") for i in range(21)]))
    assert set(errors) == {"spec.metrics", *(f"spec.metrics[{i}].query" for i in range(21))}


def test_crd_declares_the_same_limits() -> None:
    crd = yaml.safe_load((REPO_ROOT / "crds" / "rolloutanalysis.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    metrics = schema["properties"]["spec"]["properties"]["metrics"]
    item = metrics["items"]["properties"]
    assert metrics["maxItems"] == MAX_METRICS
    assert item["query"]["maxLength"] == MAX_QUERY_LENGTH
    assert item["name"]["maxLength"] == MAX_METRIC_NAME_LENGTH
