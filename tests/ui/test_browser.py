"""One real browser (Debian's chromium through Playwright) against the live admin and a devcluster.

It logs in, lands on the overview, opens a paused analysis, sees the metric graph with its
maxValue line, clicks "Resume rollout", and checks with kubectl that the Deployment runs again.
The screenshots of the index and the detail page are saved to var/screenshots/admin-index.png
and analysis-detail.png on every run; the copies in docs/screenshots/ are refreshed from them by
hand, so a test run never dirties the work tree. A second test opens a metric judged against its
pre-rollout baseline (docs/status.md explains maxIncrease and baseline): the graph's
baseline line and rollout marker, the card's samples and worst series, the inline's new fields
(var/screenshots/analysis-baseline.png, copied the same way).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect, sync_playwright
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from analyses import mirror
from analyses.models import Analysis
from testkit.devcluster import DevCluster
from testkit.manifests import deployment_manifest, pause_record
from testkit.paths import REPO_ROOT
from tests.ui import factories
from tests.ui.factories import PASSWORD

# Chromium through Playwright (docs/testkit.md#tiers).
pytestmark = pytest.mark.browser

SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "analysis-detail.png"
INDEX_SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "admin-index.png"
NAMESPACE = "ui-browser"
PAUSED_BY = "sentinel.example.com/paused-by"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# The latency of a rollout that regresses: fine, then over 0.25 s for three evaluations.
LATENCY = [0.12, 0.13, 0.11, 0.14, 0.12, 0.13, 0.15, 0.14, 0.12, 0.16, 0.15, 0.17, 0.16, 0.18]
LATENCY += [0.2, 0.22, None, 0.19, 0.24, 0.31, 0.36, 0.41]


# Playwright's assertions wait 5 s by default: a page load in a run beside another copy of the
# suite (load 30-47 on two cores) took longer. The bound only decides how long a failing test
# waits; actions already wait 30 s (docs/testkit.md#parallel-runs).
expect.set_options(timeout=30_000)


@contextmanager
def _browser() -> Iterator[Browser]:
    """Start chromium. Playwright's sync API runs an event loop in this thread, during which
    Django refuses ORM calls, so tests touch the database only before or after this block."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def _kubectl_json(cluster: DevCluster, *args: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return json.loads(cluster.kubectl(*args, "-n", namespace, "-o", "json").stdout)


def _paused_rollout(cluster: DevCluster, namespace: str = NAMESPACE) -> Analysis:
    """Create a Deployment paused by the analysis, as the operator leaves it, and mirror it."""
    cluster.kubectl("create", "namespace", namespace)
    deployment = deployment_manifest("checkout", namespace, "checkout:1.4.0", replicas=2)
    analysis = factories.resource(
        "checkout", namespace=namespace, metrics=(factories.LATENCY, factories.ERRORS)
    )
    del analysis["metadata"]["uid"], analysis["metadata"]["resourceVersion"]
    del analysis["metadata"]["generation"], analysis["metadata"]["creationTimestamp"]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([deployment, analysis]))
    cluster.kubectl(
        "patch", "deployment", "checkout", "-n", namespace, "--type=merge",
        "-p", json.dumps({
            "metadata": {"annotations": pause_record(f"{namespace}/checkout")},
            "spec": {"paused": True},
        }),
    )  # fmt: skip
    status = factories.status(
        verdict="Fail",
        failures=3,
        paused=True,
        values=[("p99-latency", "0.41", 0.25, "Fail"), ("error-rate", "0.004", 0.05, "Pass")],
    )
    # Times that agree with the seeded history, so the screenshot tells one consistent story.
    now = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    status["lastEvaluationTime"] = status["pausedAt"] = now
    for condition in status["conditions"]:
        condition["lastTransitionTime"] = now
    cluster.kubectl(
        "patch", "rolloutanalysis", "checkout", "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    row, _ = mirror.upsert_from_resource(
        _kubectl_json(cluster, "get", "rolloutanalysis", "checkout", namespace=namespace)
    )
    return row


# A cluster template the paused analysis names (its page lists it), edited in the browser.
TEMPLATE = "ui-browser-errors"


def _template_in_use(cluster: DevCluster, row: Analysis) -> None:
    template = {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "ClusterRolloutAnalysisTemplate",
        "metadata": {"name": TEMPLATE},
        "spec": {
            "metrics": [{"name": "error-rate", "query": "vector(0.001)", "maxValue": 0.01}],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(template))
    uses = {"spec": {"templates": [{"name": TEMPLATE, "clusterScope": True}]}}
    cluster.kubectl(
        "patch", "rolloutanalysis", row.name, "-n", row.namespace, "--type=merge",
        "-p", json.dumps(uses),
    )  # fmt: skip
    # The operator has evaluated the new generation (the page shows no "observed" tag).
    cluster.kubectl(
        "patch", "rolloutanalysis", row.name, "-n", row.namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": {"observedGeneration": 2}}),
    )  # fmt: skip
    mirror.upsert_from_resource(
        _kubectl_json(cluster, "get", "rolloutanalysis", row.name, namespace=row.namespace)
    )


def _seed_history(row: Analysis) -> None:
    start = timezone.now().replace(microsecond=0) - timedelta(seconds=30 * len(LATENCY))
    # The error rate stayed low; only the latency regressed, and its third failure paused.
    factories.history(
        row, LATENCY, start=start, paused_at=len(LATENCY) - 1, steady={"error-rate": 0.004}
    )


def _log_in(page: Page, live_server: LiveServer) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "platform")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#sentinel-overview")).to_be_visible()


def test_a_platform_engineer_resumes_a_paused_rollout(
    live_server: LiveServer,
    ui_cluster: DevCluster,
    settings: Settings,
) -> None:
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    User.objects.create_superuser("platform", "platform@example.com", PASSWORD)
    row = _paused_rollout(ui_cluster)
    _seed_history(row)
    factories.analysis("search", namespace="web", status_=factories.status())
    _template_in_use(ui_cluster, row)

    with _browser() as browser:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        _log_in(page, live_server)
        # Signing in lands on the overview: the paused rollout is the first thing to see.
        expect(page).to_have_title("Overview | Rollout Sentinel")
        expect(page.locator("#paused-targets")).to_contain_text(f"{NAMESPACE}/checkout")
        INDEX_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(INDEX_SCREENSHOT), full_page=True)
        page.click(f"#paused-targets >> text={NAMESPACE}/checkout")
        page.click("#result_list >> text=checkout")

        expect(page.locator("#sentinel-verdict")).to_contain_text("Fail")
        chart = page.locator('.sentinel-chart[data-metric="p99-latency"] svg.metric-chart')
        expect(chart).to_be_visible()
        expect(chart.locator("line.chart-max")).to_have_attribute("data-max-value", "0.25")
        expect(chart.locator(".chart-pause")).to_have_count(1)
        expect(page.locator("#conditions")).to_contain_text("FailureLimitReached")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)

        page.click("#resume-rollout")
        expect(page.locator("ul.messagelist")).to_contain_text("is rolling out again")
        expect(page.locator("#resume-rollout")).to_have_count(0)

        # The templates (docs/templates.md): listed from the cluster, a page each, edited there.
        page.goto(f"{live_server.url}/admin/analyses/analysis/")
        page.click("a.sentinel-templates-link")
        expect(page).to_have_title("Analysis templates | Rollout Sentinel")
        page.click(f"#cluster-templates >> text={TEMPLATE}")
        expect(page.locator("#template-metrics")).to_contain_text("error-rate")
        expect(page.locator("#template-users")).to_contain_text(f"{NAMESPACE}/checkout")
        spec = page.locator("#id_spec")
        spec.fill(spec.input_value().replace("maxValue: 0.01", "maxValue: 0.02"))
        page.click("#template-save")
        expect(page.locator("ul.messagelist")).to_contain_text("saved in the cluster")

    template = json.loads(ui_cluster.kubectl("get", "cratmpl", TEMPLATE, "-o", "json").stdout)
    assert template["metadata"]["generation"] == 2
    assert template["spec"]["metrics"][0]["maxValue"] == 0.02
    deployment = _kubectl_json(ui_cluster, "get", "deployment", "checkout")
    assert not deployment["spec"].get("paused")
    assert PAUSED_BY not in (deployment["metadata"].get("annotations") or {})
    resource = _kubectl_json(ui_cluster, "get", "rolloutanalysis", "checkout")
    paused = next(c for c in resource["status"]["conditions"] if c["type"] == "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("False", "ResumedByUser")
    assert resource["status"]["failures"] == 0
    mirrored = Analysis.objects.get(pk=row.pk)
    assert not mirrored.paused and mirrored.failures == 0


BASELINE_SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "analysis-baseline.png"
BASELINE_NAMESPACE = "ui-baseline"
# The same p99 judged against its value before the rollout: ~0.11 s before, rising after it.
BEFORE = [0.11, 0.12, 0.11, 0.1, 0.12, 0.11, 0.12, 0.11]
AFTER = [0.12, 0.13, 0.14, 0.15, 0.16, 0.16, 0.19, 0.21]


def _baseline_rollout(cluster: DevCluster) -> Analysis:
    """Create an analysis judging p99 against the pre-rollout baseline, with its status."""
    cluster.kubectl("create", "namespace", BASELINE_NAMESPACE)
    relative = {
        "name": "p99-vs-before",
        "query": factories.LATENCY["query"],
        "maxValue": 0.25,
        "maxIncrease": {"percent": 50},
        "baseline": {"beforeRollout": True},
        "minSamples": {
            "query": 'sum(increase(http_requests_total{app="checkout"}[5m]))',
            "min": 200,
        },
    }
    deployment = deployment_manifest("checkout", BASELINE_NAMESPACE, "checkout:1.5.0")
    analysis = factories.resource("checkout", namespace=BASELINE_NAMESPACE, metrics=(relative,))
    for field in ("uid", "resourceVersion", "generation", "creationTimestamp"):
        del analysis["metadata"][field]
    analysis["spec"]["failureWindow"] = 4
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([deployment, analysis]))
    now = timezone.now().replace(microsecond=0)
    started = now - timedelta(seconds=30 * len(AFTER) + 15)
    status = factories.status(verdict="Fail", failures=2)
    status["window"] = ["Pass", "Pass", "Fail", "Fail"]
    status["rollout"] = {
        "templateHash": "5c7f9d",
        "startedAt": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    status["metricResults"] = [
        {
            "name": "p99-vs-before",
            "value": "0.21",
            "maxValue": 0.25,
            "baseline": "0.11",
            "samples": "1843",
            "series": {"pod": "checkout-7d9f-x2k4", "route": "/pay"},
            "verdict": "Fail",
            "message": "0.21 is 91 % above the baseline 0.11 before the rollout (limit +50 %)",
        }
    ]
    status["lastEvaluationTime"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.kubectl(
        "patch", "rolloutanalysis", "checkout", "-n", BASELINE_NAMESPACE,
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    row, _ = mirror.upsert_from_resource(
        json.loads(
            cluster.kubectl(
                "get", "rolloutanalysis", "checkout", "-n", BASELINE_NAMESPACE, "-o", "json"
            ).stdout
        )
    )
    evaluations = factories.history(
        row, [*BEFORE, *AFTER], start=now - timedelta(seconds=30 * (len(BEFORE) + len(AFTER)))
    )
    # As the operator records it: no baseline before the rollout, then the one from before it.
    failures = 0
    for index, evaluation in enumerate(evaluations):
        baseline = 0.11 if index >= len(BEFORE) else None
        limit = min(0.25, baseline * 1.5) if baseline is not None else 0.25
        results = evaluation.metric_results
        results.update(baseline=baseline, baseline_text=f"{baseline or ''}", limit=limit)
        if results.filter(value__gt=limit).update(verdict="Fail", samples_text="1843"):
            failures += 1
            type(evaluation).objects.filter(pk=evaluation.pk).update(
                outcome="Fail", failures_after=failures
            )
    return row


def test_the_graph_draws_the_baseline_and_marks_the_rollout(
    live_server: LiveServer, ui_cluster: DevCluster, settings: Settings
) -> None:
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    User.objects.create_superuser("platform", "platform@example.com", PASSWORD)
    row = _baseline_rollout(ui_cluster)

    with _browser() as browser:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        _log_in(page, live_server)
        page.goto(f"{live_server.url}/admin/analyses/analysis/{row.pk}/change/")
        card = page.locator('.sentinel-chart[data-metric="p99-vs-before"]')
        chart = card.locator("svg.metric-chart")
        expect(chart).to_be_visible()
        expect(chart.locator("g.chart-baseline")).to_have_attribute("data-baseline", "0.11")
        expect(chart.locator(".chart-baseline-label")).to_have_text("baseline 0.11")
        expect(chart.locator("g.chart-rollout")).to_have_count(1)
        expect(chart.locator("line.chart-max")).to_have_attribute("data-max-value", "0.25")
        # 0.19 and 0.21 are over 1.5 times the baseline 0.11 (0.165), under maxValue 0.25.
        expect(chart.locator("circle.chart-breach")).to_have_count(2)
        expect(card.locator(".metric-baseline")).to_have_text("0.11")
        expect(card.locator(".metric-samples")).to_contain_text("1843")
        expect(card.locator(".metric-samples")).to_contain_text("at least 200")
        expect(card.locator(".metric-series")).to_contain_text('pod="checkout-7d9f-x2k4"')
        expect(card).to_contain_text("+50 % over its value before the rollout")
        # The inline edits the same fields, each input with its own label.
        for field in ("max_increase_percent", "baseline_before_rollout", "min_samples_min"):
            control = page.locator(f"#id_metrics-0-{field}")
            expect(control).to_be_visible()
        expect(page.locator("#id_metrics-0-max_increase_percent")).to_have_value(
            re.compile(r"^50(\.0)?$")
        )
        expect(page.locator("#id_failure_window")).to_have_value("4")
        BASELINE_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(BASELINE_SCREENSHOT), full_page=True)
        # The new card facts, graph parts and inline columns pass axe like every other page
        # (imported here: test_accessibility imports this module's seeds).
        from tests.ui.test_accessibility import axe_violations, describe

        assert describe(axe_violations(page)) == []
