"""The detail page of a ``compare`` metric (docs/analysis.md) in a real browser (Debian's chromium).

A paused analysis whose metric judged the new pods against the old ones: the graph draws the
new and the old pods' medians as two lines, the card shows the spec in words and the last
evaluation's sentence, the inline shows compare's labelled fields. The screenshot is saved to
var/screenshots/analysis-compare.png on every run (docs/screenshots/ has a copy made by hand,
as for the other screenshots).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import yaml
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from analyses import mirror
from analyses.models import Analysis
from testkit.devcluster import DevCluster
from testkit.manifests import deployment_manifest
from testkit.paths import REPO_ROOT
from tests.ui import factories
from tests.ui.factories import PASSWORD
from tests.ui.test_browser import _browser, _log_in

# Chromium through Playwright (docs/testkit.md#tiers).
pytestmark = pytest.mark.browser

SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "analysis-compare.png"
NAMESPACE = "ui-compare"
OLD = [0.25, 0.26, 0.25, 0.24, 0.25, 0.26, 0.25, 0.25, 0.26, 0.25, 0.24, 0.25]
NEW = [0.25, 0.26, 0.26, 0.27, 0.29, 0.31, 0.33, 0.35, 0.36, 0.37, 0.38, 0.39]
SENTENCE = (
    "new pods' median 0.39 is 56 % above old pods' 0.25 (p = 2.1e-05, 12 vs 12 samples; "
    "worse is increase, maxEffect 10 %, confidence 0.95)"
)


def _compare_rollout(cluster: DevCluster) -> Analysis:
    cluster.kubectl("create", "namespace", NAMESPACE)
    metric = {
        "name": "latency-vs-old",
        "query": 'sum by (pod_template_hash) (rate(http_request_duration_seconds_sum{app="checkout"}[1m])) / sum by (pod_template_hash) (rate(http_request_duration_seconds_count{app="checkout"}[1m]))',  # noqa: E501
        "compare": {"maxEffect": {"percent": 10}, "lookback": "6m", "minSamples": 10},
    }
    deployment = deployment_manifest("checkout", NAMESPACE, "checkout:1.6.0", replicas=4)
    analysis = factories.resource("checkout", namespace=NAMESPACE, metrics=(metric,))
    for field in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        del analysis["metadata"][field]
    analysis["spec"]["failureLimit"] = 3
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([deployment, analysis]))
    now = timezone.now().replace(microsecond=0)
    status = factories.status(verdict="Fail", failures=3, paused=True)
    comparison = {
        "newMedian": 0.39,
        "oldMedian": 0.25,
        "effect": 0.14,
        "pValue": 2.1e-05,
        "newSamples": 12,
        "oldSamples": 12,
        "newHash": "689fcd8d58",
        "oldHashes": ["74dcff7c87"],
    }
    status["metricResults"] = [
        {
            "name": "latency-vs-old",
            "value": "0.41",
            "comparison": comparison,
            "verdict": "Fail",
            "message": SENTENCE,
        }
    ]
    status["lastEvaluationTime"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.kubectl(
        "patch", "rolloutanalysis", "checkout", "-n", NAMESPACE,
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    row, _ = mirror.upsert_from_resource(
        json.loads(
            cluster.kubectl(
                "get", "rolloutanalysis", "checkout", "-n", NAMESPACE, "-o", "json"
            ).stdout
        )
    )
    start = now - timedelta(seconds=30 * len(NEW))
    evaluations = factories.history(row, [n * 1.05 for n in NEW], start=start)
    failures = 0
    for evaluation, new, old in zip(evaluations, NEW, OLD, strict=True):
        failed = new > old * 1.1 + 0.05
        failures = failures + 1 if failed else 0
        shown = dict(comparison, newMedian=new, oldMedian=old, effect=round(new - old, 6))
        evaluation.metric_results.update(
            comparison=shown, verdict="Fail" if failed else "Pass", max_value=None
        )
        type(evaluation).objects.filter(pk=evaluation.pk).update(
            outcome="Fail" if failed else "Pass",
            failures_after=failures,
            paused=failures == 3,
        )
    return row


def test_the_graph_draws_new_and_old_pods_as_two_lines(
    live_server: LiveServer, ui_cluster: DevCluster, settings: Settings
) -> None:
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    User.objects.create_superuser("platform", "platform@example.com", PASSWORD)
    row = _compare_rollout(ui_cluster)

    with _browser() as browser:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        _log_in(page, live_server)
        page.goto(f"{live_server.url}/admin/analyses/analysis/{row.pk}/change/")
        card = page.locator('.sentinel-chart[data-metric="latency-vs-old"]')
        chart = card.locator("svg.metric-chart")
        expect(chart).to_be_visible()
        expect(chart.locator("polyline.chart-new-pods")).to_have_count(1)
        expect(chart.locator("polyline.chart-old-pods")).to_have_count(1)
        expect(chart.locator(".chart-new-label")).to_have_text("new pods' median 0.39")
        expect(chart.locator(".chart-old-label")).to_have_text("old pods' median 0.25")
        expect(chart.locator("line.chart-max")).to_have_count(0)
        expect(card.locator(".metric-comparison")).to_have_text(SENTENCE)
        expect(card).to_contain_text("new pods vs old by pod_template_hash")
        # The spec form: compare's labelled fields, filled from the resource (defaults written
        # out by the CRD), instead of a JSON box.
        expect(page.locator("#id_metrics-0-compare_on")).to_be_checked()
        expect(page.locator("#id_metrics-0-compare_max_effect_percent")).to_have_value("10")
        expect(page.locator("#id_metrics-0-compare_lookback")).to_have_value("6m")
        expect(page.locator("#id_metrics-0-compare_worse")).to_have_value("increase")
        # Labelled: the label names the input for assistive technology, too.
        expect(page.get_by_label("Confidence").first).to_have_value("0.95")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        from tests.ui.test_accessibility import axe_violations, describe

        assert describe(axe_violations(page)) == []
