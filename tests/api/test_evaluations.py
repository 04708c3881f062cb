"""The evaluation history: newest first, cursor pages, the since/until window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from analyses import mirror
from analyses.models import Analysis, Evaluation, MetricResult
from tests.analyses.resources import resource
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


@pytest.fixture
def analysis() -> Analysis:
    row, _ = mirror.upsert_from_resource(resource("checkout", namespace="shop"))
    return row


def _history(analysis: Analysis, count: int) -> list[Evaluation]:
    """Record ``count`` evaluations, one every 30 s from T0, each with one metric result."""
    rows = []
    for index in range(count):
        started = T0 + timedelta(seconds=30 * index)
        evaluation = Evaluation.objects.create(
            analysis=analysis,
            due_at=started - timedelta(seconds=0.1),
            started_at=started,
            finished_at=started + timedelta(seconds=0.2),
            duration_seconds=0.2,
            generation=1,
            outcome="Fail" if index % 2 else "Pass",
            failures_after=index % 2,
        )
        MetricResult.objects.create(
            evaluation=evaluation,
            name="p99-latency",
            value=0.1 * index,
            value_text=f"{0.1 * index:g}",
            max_value=0.25,
            verdict="Fail" if index % 2 else "Pass",
        )
        rows.append(evaluation)
    return rows


def _walk(api: Api, path: str, **params: str) -> list[list[int]]:
    """Return the ids on every page, following ``next`` links."""
    pages = []
    response = api.get(path, params=params)
    while True:
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append([item["id"] for item in body["results"]])
        if not body["next"]:
            return pages
        response = api.get(body["next"])


def test_newest_first_in_cursor_pages(api: Api, analysis: Analysis) -> None:
    rows = _history(analysis, 7)
    newest_first = [row.id for row in reversed(rows)]

    pages = _walk(api, "analyses/shop/checkout/evaluations/", page_size="3")

    assert pages == [newest_first[0:3], newest_first[3:6], newest_first[6:7]]


def test_evaluation_shape(api: Api, analysis: Analysis) -> None:
    (first,) = _history(analysis, 1)
    MetricResult.objects.create(
        evaluation=first,
        name="errors",
        value=float("inf"),
        value_text="+Inf",
        max_value=1.0,
        verdict="Fail",
    )
    body = api.get("analyses/shop/checkout/evaluations/").json()
    assert body["results"] == [
        {
            "id": first.id,
            "dueAt": "2026-11-29T09:59:59.900000Z",
            "startedAt": "2026-11-29T10:00:00Z",
            "finishedAt": "2026-11-29T10:00:00.200000Z",
            "durationSeconds": 0.2,
            "generation": 1,
            "outcome": "Pass",
            "failuresAfter": 0,
            "errorReason": "",
            "errorMessage": "",
            "paused": False,
            "metricResults": [
                {
                    "name": "p99-latency",
                    "value": 0.0,
                    "valueText": "0",
                    "maxValue": 0.25,
                    "baseline": None,
                    "baselineText": "",
                    "limit": None,
                    "samples": "",
                    "series": {},
                    "comparison": None,
                    "counted": None,
                    "verdict": "Pass",
                    "message": "",
                },
                # JSON has no infinity: the number is null, the text keeps Prometheus's "+Inf".
                {
                    "name": "errors",
                    "value": None,
                    "valueText": "+Inf",
                    "maxValue": 1.0,
                    "baseline": None,
                    "baselineText": "",
                    "limit": None,
                    "samples": "",
                    "series": {},
                    "comparison": None,
                    "counted": None,
                    "verdict": "Fail",
                    "message": "",
                },
            ],
        }
    ]


def test_a_baseline_relative_result_carries_baseline_limit_samples_and_series(
    api: Api, analysis: Analysis
) -> None:
    (first,) = _history(analysis, 1)
    MetricResult.objects.create(
        evaluation=first,
        name="latency-vs-before",
        value=0.412,
        value_text="0.412",
        max_value=None,
        baseline=0.118,
        baseline_text="0.118",
        limit=0.1416,
        samples_text="1843",
        series={"pod": "checkout-7d9f-x2k4", "route": "/pay"},
        verdict="Fail",
        message="0.412 is 249 % above the baseline 0.118 before the rollout (limit +20 %)",
    )
    (evaluation,) = api.get("analyses/shop/checkout/evaluations/").json()["results"]
    assert evaluation["metricResults"][1] == {
        "name": "latency-vs-before",
        "value": 0.412,
        "valueText": "0.412",
        "maxValue": None,
        "baseline": 0.118,
        "baselineText": "0.118",
        "limit": 0.1416,
        "samples": "1843",
        "series": {"pod": "checkout-7d9f-x2k4", "route": "/pay"},
        "comparison": None,
        "counted": None,
        "verdict": "Fail",
        "message": "0.412 is 249 % above the baseline 0.118 before the rollout (limit +20 %)",
    }


def test_a_compare_result_carries_its_comparison(api: Api, analysis: Analysis) -> None:
    (first,) = _history(analysis, 1)
    comparison = {
        "newMedian": 0.374438,
        "oldMedian": 0.247897,
        "effect": 0.126541,
        "pValue": 2.07965e-08,
        "newSamples": 21,
        "oldSamples": 21,
        "newHash": "689fcd8d58",
        "oldHashes": ["74dcff7c87"],
    }
    MetricResult.objects.create(
        evaluation=first,
        name="latency-vs-old",
        value=0.38,
        value_text="0.38",
        comparison=comparison,
        verdict="Fail",
        message="new pods' median 0.374 is 51 % above old pods' 0.248",
    )
    (evaluation,) = api.get("analyses/shop/checkout/evaluations/").json()["results"]
    assert evaluation["metricResults"][1]["comparison"] == comparison


def test_a_sequential_result_carries_both_sides_counts_of_the_steps_it_counted(
    api: Api, analysis: Analysis
) -> None:
    (first,) = _history(analysis, 1)
    counted = {
        "newBad": 31.0,
        "newTotal": 1200.0,
        "oldBad": 13.0,
        "oldTotal": 1210.0,
        "steps": 2,
        "through": "2026-11-29T10:00:00Z",
    }
    MetricResult.objects.create(
        evaluation=first,
        name="errors-vs-old",
        value=87.0,
        value_text="87",
        limit=20.0,
        counted=counted,
        verdict="Pass",
        message="new pods' error rate is 2.4 \u00d7 the old pods'",
    )
    (evaluation,) = api.get("analyses/shop/checkout/evaluations/").json()["results"]
    assert evaluation["metricResults"][1]["counted"] == counted
    # The schema documents the field with its counts.
    schema = api.get("schema/", params={"format": "json"}).json()
    component = schema["components"]["schemas"]["Counted"]
    assert set(component["required"]) == set(counted)
    result = schema["components"]["schemas"]["MetricResult"]["properties"]["counted"]
    assert "Counted" in str(result)


def test_since_is_inclusive_and_until_exclusive(api: Api, analysis: Analysis) -> None:
    rows = _history(analysis, 10)
    since = (T0 + timedelta(seconds=60)).isoformat()  # rows[2]
    until = (T0 + timedelta(seconds=180)).isoformat()  # rows[6], excluded

    pages = _walk(
        api, "analyses/shop/checkout/evaluations/", since=since, until=until, page_size="2"
    )

    assert pages == [[rows[5].id, rows[4].id], [rows[3].id, rows[2].id]]
    only_since = _walk(api, "analyses/shop/checkout/evaluations/", since="2026-11-29T10:04:00Z")
    assert only_since == [[rows[9].id, rows[8].id]]


def test_unencoded_plus_offset_is_understood(api: Api, analysis: Analysis) -> None:
    rows = _history(analysis, 3)
    # "+01:00" typed into a URL unencoded arrives as " 01:00".
    response = api.get("analyses/shop/checkout/evaluations/?until=2026-11-29T11:00:30+01:00")
    assert [item["id"] for item in response.json()["results"]] == [rows[0].id]
    encoded = api.get(
        f"analyses/shop/checkout/evaluations/?until={quote('2026-11-29T11:00:30+01:00')}"
    )
    assert encoded.json()["results"] == response.json()["results"]


def test_bad_window_is_400(api: Api, analysis: Analysis) -> None:
    response = api.get(
        "analyses/shop/checkout/evaluations/", params={"since": "yesterday", "until": "x"}
    )
    assert response.status_code == 400
    assert set(response.json()) == {"since", "until"}


def test_history_of_another_analysis_is_not_shown(api: Api, analysis: Analysis) -> None:
    other, _ = mirror.upsert_from_resource(resource("cart", namespace="shop", uid="uid-2"))
    _history(other, 2)
    mine = _history(analysis, 1)
    pages = _walk(api, "analyses/shop/checkout/evaluations/")
    assert pages == [[mine[0].id]]
    assert api.get("analyses/shop/nothing/evaluations/").status_code == 404
