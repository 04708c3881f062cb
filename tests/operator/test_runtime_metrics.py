"""The web app's ``/metrics``: per-analysis gauges read from the mirror at scrape time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from analyses.models import Analysis

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
