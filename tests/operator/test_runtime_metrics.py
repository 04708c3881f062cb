"""The web app's ``/metrics``: per-analysis gauges read from the mirror at scrape time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from analyses.models import Analysis, AnalysisMetric, Evaluation, MetricResult

pytestmark = pytest.mark.django_db


def _analysis(name: str, **fields: object) -> Analysis:
    return Analysis.objects.create(
        namespace="shop",
        name=name,
        uid=str(uuid.uuid4()),
        created_at=datetime.now(UTC),
        **fields,
    )


def test_metrics_page_exposes_each_live_analysis_from_the_mirror(
    client: Client, settings: Any
) -> None:
    # The web app serves /metrics only to the bearer of this token (docs/security.md).
    settings.SENTINEL_METRICS_TOKEN = "scrape-token"
    _analysis("checkout", last_verdict="Fail", failures=3, failure_limit=3, paused=True)
    _analysis("search", last_verdict="Pass", ready=True)
    _analysis("old", last_verdict="Fail", deleted_at=datetime.now(UTC))
    _analysis("late", next_due_at=datetime.now(UTC) - timedelta(seconds=5))

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    lines = set(response.content.decode().splitlines())
    assert 'sentinel_analysis_failures{name="checkout",namespace="shop"} 3.0' in lines
    assert 'sentinel_analysis_paused{name="checkout",namespace="shop"} 1.0' in lines
    verdict = 'sentinel_analysis_verdict{name="checkout",namespace="shop",verdict="Fail"} 1.0'
    assert verdict in lines
    assert 'sentinel_analysis_ready{name="search",namespace="shop"} 1.0' in lines
    assert not any('name="old"' in line for line in lines)  # deleted: no longer alerted on
    assert "sentinel_analyses_due 1.0" in lines
    assert any(line.startswith("sentinel_queue_depth ") for line in lines)


def _evaluation(analysis: Analysis, seconds_ago: float, *results: dict[str, Any]) -> None:
    at = datetime.now(UTC) - timedelta(seconds=seconds_ago)
    evaluation = Evaluation.objects.create(
        analysis=analysis, started_at=at, finished_at=at, outcome="Pass"
    )
    for result in results:
        MetricResult.objects.create(evaluation=evaluation, **{"verdict": "Pass", **result})


def test_metric_gauges_come_from_the_newest_evaluation_of_metrics_still_in_the_spec(
    client: Client, settings: Any
) -> None:
    settings.SENTINEL_METRICS_TOKEN = "scrape-token"
    checkout = _analysis("checkout")
    AnalysisMetric.objects.create(analysis=checkout, name="latency", query="q", max_value=0.5)
    AnalysisMetric.objects.create(analysis=checkout, name="errors", query="q", max_value=0.01)
    AnalysisMetric.objects.create(analysis=checkout, name="fresh", query="q", max_value=9.0)
    _evaluation(checkout, 60, {"name": "latency", "value": 9.9, "max_value": 0.5})
    _evaluation(
        checkout,
        5,
        # Judged against the baseline's limit, lower than maxValue.
        {"name": "latency", "value": 0.3, "max_value": 0.5, "baseline": 0.2, "limit": 0.24},
        # An error: no value, and no judged limit, so maxValue stands in.
        {"name": "errors", "value": None, "max_value": 0.01, "verdict": "Error"},
        # Removed from the spec since: no series any more.
        {"name": "removed", "value": 1.0, "max_value": 2.0},
    )
    gone = _analysis("gone", deleted_at=datetime.now(UTC))
    AnalysisMetric.objects.create(analysis=gone, name="latency", query="q", max_value=0.5)
    _evaluation(gone, 5, {"name": "latency", "value": 0.3, "max_value": 0.5})

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    samples = {
        line
        for line in response.content.decode().splitlines()
        if line.startswith("sentinel_metric_")
    }
    key = 'analysis="checkout",metric="{}",namespace="shop"'
    assert samples == {
        f"sentinel_metric_value{{{key.format('latency')}}} 0.3",
        f"sentinel_metric_threshold{{{key.format('latency')}}} 0.24",
        f"sentinel_metric_baseline{{{key.format('latency')}}} 0.2",
        f"sentinel_metric_threshold{{{key.format('errors')}}} 0.01",
    }


def test_notification_failures_count_deliveries_failed_after_their_retries_per_channel(
    client: Client, settings: Any
) -> None:
    from notifications.models import Delivery, State

    settings.SENTINEL_METRICS_TOKEN = "scrape-token"
    analysis = _analysis("checkout")
    now = datetime.now(UTC)
    for index, (channel, state) in enumerate(
        [
            ("payments-slack", State.FAILED),
            ("payments-slack", State.FAILED),
            ("payments-slack", State.SENT),
            ("ops-mail", State.PENDING),
        ]
    ):
        Delivery.objects.create(
            key=f"{analysis.uid}/Paused@{index}/{channel}",
            analysis=analysis,
            namespace="shop",
            name="checkout",
            channel=channel,
            event="Paused",
            message="paused",
            transition_at=now,
            created_at=now,
            state=state,
        )

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    lines = set(response.content.decode().splitlines())
    assert 'sentinel_notification_failures_total{channel="payments-slack"} 2.0' in lines
    # Pending and sent deliveries are not failures: no series for a channel without any.
    assert not any(
        line.startswith("sentinel_notification_failures_total") and "ops-mail" in line
        for line in lines
    )
