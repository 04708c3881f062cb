"""The admin's read-only pages with Django's test client: the index (the overview), list, detail.

These pages read only the mirror and the history, so the rows are written directly (through
``analyses.mirror`` as the watch does); no cluster is involved.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import unescape

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from tests.ui import factories
from tests.ui.factories import PASSWORD

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def fleet() -> dict[str, Analysis]:
    """Five live analyses in two namespaces and one deleted, covering every state."""
    rows = {
        "checkout": factories.analysis(
            "checkout",
            metrics=(factories.LATENCY, factories.ERRORS),
            status_=factories.status(
                verdict="Fail",
                failures=3,
                paused=True,
                values=[
                    ("p99-latency", "0.412", 0.25, "Fail"),
                    ("error-rate", "0.01", 0.05, "Pass"),
                ],
            ),
        ),
        "cart": factories.analysis(
            "cart", target="checkout", status_=factories.status(verdict="Fail", failures=1)
        ),
        "search": factories.analysis("search", namespace="web", status_=factories.status()),
        "catalog": factories.analysis(
            "catalog",
            namespace="web",
            status_=factories.status(verdict="Inconclusive", ready_reason="MetricsUnavailable"),
        ),
        "fresh": factories.analysis("fresh", namespace="web"),
    }
    gone = factories.analysis("gone", namespace="web", status_=factories.status())
    Analysis.objects.filter(pk=gone.pk).update(deleted_at=factories.T0)
    rows["gone"] = gone
    return rows


def _names(response) -> list[str]:  # type: ignore[no-untyped-def]
    """Return the analysis names of a changelist page, in order."""
    return [row.name for row in response.context["cl"].result_list]


def test_the_index_is_the_overview(staff_client: Client, fleet: dict[str, Analysis]) -> None:
    response = staff_client.get(reverse("admin:index"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<title>Overview | Rollout Sentinel</title>" in page
    assert "<h1>Overview</h1>" in page
    # The overview first, the sections after it.
    assert page.index('id="sentinel-overview"') < page.index('id="sentinel-sections"')
    assert 'id="paused-targets"' in page and 'id="not-ready"' in page


def test_the_old_overview_address_redirects_to_the_index(staff_client: Client) -> None:
    response = staff_client.get("/admin/analyses/analysis/overview/")
    assert response.status_code == 301
    assert response["Location"] == reverse("admin:index")


def test_the_overview_needs_a_login(db: None) -> None:
    User.objects.create_superuser("platform", "platform@example.com", PASSWORD)
    client = Client()
    index = reverse("admin:index")
    response = client.get(index)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    login = client.post(
        reverse("admin:login"),
        {"username": "platform", "password": PASSWORD, "next": index},
    )
    assert login.status_code == 302 and login["Location"] == index
    assert 'id="sentinel-overview"' in client.get(index).content.decode()


def test_staff_without_analysis_permissions_see_the_index_without_the_overview(
    db: None, fleet: dict[str, Analysis]
) -> None:
    user = User.objects.create_user("someone", None, None, is_staff=True)
    client = Client()
    client.force_login(user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    assert 'id="sentinel-overview"' not in response.content.decode()
    assert "total" not in response.context


def test_the_add_page_asks_for_the_resource_and_one_metric(staff_client: Client) -> None:
    response = staff_client.get(reverse("admin:analyses_analysis_add"))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert list(form.fields) == [
        "namespace",
        "name",
        "target_kind",
        "target_name",
        "templates",
        "args",
        "interval",
        "failure_limit",
        "failure_window",
        "dry_run",
        "notify",
        "false_pause_rate",
        "seen_generation",
    ]
    # Nothing filled in for them: a save writes neither unless the user does (the templates'
    # values or the defaults apply, docs/templates.md); the placeholders show the defaults.
    for field, default in (("interval", "30s"), ("failure_limit", "3")):
        assert not form.fields[field].required and form.fields[field].initial is None
        assert form.fields[field].widget.attrs["placeholder"] == default
    (metrics,) = response.context["inline_admin_formsets"]
    assert metrics.formset.min_num == 1 and len(metrics.formset.forms) == 1
    assert list(metrics.formset.forms[0].fields)[:18] == [
        "name",
        "provider",
        "query",
        "max_value",
        "max_increase_percent",
        "max_increase_absolute",
        "baseline_before_rollout",
        "baseline_offset",
        "min_samples_query",
        "min_samples_min",
        # compare as labelled fields, no JSON box.
        "compare_on",
        "compare_by",
        "compare_worse",
        "compare_max_effect_percent",
        "compare_max_effect_absolute",
        "compare_confidence",
        "compare_lookback",
        "compare_min_samples",
    ]
    page = response.content.decode()
    assert 'id="sentinel-detail"' not in page
    # One block per metric, grouped by what each group decides, every help text linked to
    # its input by Django itself.
    for heading in ("Thresholds", "Baseline", "Traffic guard", "New pods against old pods"):
        assert f">{heading}</h4>" in page, heading
    assert 'aria-describedby="id_metrics-0-query_helptext"' in page
    assert 'id="id_metrics-0-query_helptext"' in page
    assert "-help" not in page.split('id="metrics-group"')[1]


def test_the_overview_counts_by_verdict_paused_and_not_ready(
    staff_client: Client, fleet: dict[str, Analysis]
) -> None:
    response = staff_client.get(reverse("admin:index"))
    assert response.status_code == 200
    context = response.context
    assert context["total"].count == 5  # the deleted one is not counted
    assert {item.label: item.count for item in context["verdicts"]} == {
        "Fail": 2,
        "Inconclusive": 1,
        "Pass": 1,
        "Not evaluated yet": 1,
    }
    assert context["paused"].count == 1
    assert context["not_ready"].count == 2
    assert {item.label: item.count for item in context["not_ready_reasons"]} == {
        "MetricsUnavailable": 1,
        "Not reconciled yet": 1,
    }
    (target,) = context["paused_targets"]
    assert (target.namespace, target.target, target.analyses) == ("shop", "checkout", ("checkout",))
    assert target.kind == "Deployment"
    page = response.content.decode()
    assert 'data-count="2"' in page and "shop/checkout" in page


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        (lambda c: c["verdicts"][0].url, ["cart", "checkout"]),  # Fail
        (lambda c: c["verdicts"][1].url, ["catalog"]),  # Inconclusive
        (lambda c: c["verdicts"][2].url, ["search"]),  # Pass
        (lambda c: c["verdicts"][3].url, ["fresh"]),  # not evaluated yet
        (lambda c: c["paused"].url, ["checkout"]),
        (lambda c: c["not_ready"].url, ["catalog", "fresh"]),
        (lambda c: _labelled(c["not_ready_reasons"], "MetricsUnavailable").url, ["catalog"]),
        (lambda c: _labelled(c["not_ready_reasons"], "Not reconciled yet").url, ["fresh"]),
        (lambda c: c["paused_targets"][0].url, ["checkout"]),
        (lambda c: c["total"].url, ["cart", "checkout", "catalog", "fresh", "search"]),
    ],
)
def test_every_overview_figure_links_to_the_list_it_counts(
    staff_client: Client,
    fleet: dict[str, Analysis],
    link,
    expected,  # type: ignore[no-untyped-def]
) -> None:
    index = staff_client.get(reverse("admin:index"))
    url = link(index.context)
    assert url in unescape(index.content.decode())
    response = staff_client.get(url)
    assert response.status_code == 200
    assert _names(response) == expected


def test_the_list_shows_the_columns(staff_client: Client, fleet: dict[str, Analysis]) -> None:
    response = staff_client.get(reverse("admin:analyses_analysis_changelist"))
    page = response.content.decode()
    for header in (
        "Namespace",
        "Name",
        "Target",
        "Verdict",
        "Failures",
        "Paused",
        "Last evaluation",
    ):
        assert f">{header}<" in page or f">{header}</a>" in page, header
    checkout = re.search(r"<tr>(?:(?!</tr>).)*?>checkout</a>.*?</tr>", page, re.S)
    assert checkout is not None
    row = checkout.group(0)
    assert 'sentinel-badge verdict-fail">Fail<' in row
    assert "3 / 3" in row
    assert 'sentinel-badge paused">Paused<' in row
    assert "ago</time>" in row
    catalog = re.search(r"<tr>(?:(?!</tr>).)*?>catalog</a>.*?</tr>", page, re.S)
    assert catalog is not None and "MetricsUnavailable" in catalog.group(0)
    assert "Paused<" not in catalog.group(0)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"namespace": "web"}, ["catalog", "fresh", "search"]),
        ({"last_verdict__exact": "Fail"}, ["cart", "checkout"]),
        ({"paused__exact": "1"}, ["checkout"]),
        ({"paused__exact": "0", "namespace": "shop"}, ["cart"]),
        ({"ready__exact": "1"}, ["cart", "checkout", "search"]),
        ({"q": "checkout"}, ["cart", "checkout"]),  # cart guards the checkout Deployment
        ({"q": "web"}, ["catalog", "fresh", "search"]),
        ({"state": "deleted"}, ["gone"]),
        ({"state": "all", "namespace": "web"}, ["catalog", "fresh", "gone", "search"]),
    ],
)
def test_list_filters_and_search(
    staff_client: Client, fleet: dict[str, Analysis], query: dict[str, str], expected: list[str]
) -> None:
    response = staff_client.get(reverse("admin:analyses_analysis_changelist"), query)
    assert response.status_code == 200
    assert _names(response) == expected


def test_the_list_offers_the_filters(staff_client: Client, fleet: dict[str, Analysis]) -> None:
    response = staff_client.get(reverse("admin:analyses_analysis_changelist"))
    titles = [spec.title for spec in response.context["cl"].filter_specs]
    assert titles == ["state", "namespace", "last verdict", "paused", "ready"]
    assert f'href="{reverse("admin:index")}" class="sentinel-overview-link"' in (
        response.content.decode()
    )


def test_the_detail_page_shows_status_conditions_history_and_a_graph_per_metric(
    staff_client: Client, fleet: dict[str, Analysis]
) -> None:
    checkout = fleet["checkout"]
    factories.history(checkout, [0.1, 0.2, 0.3, 0.41, None, 0.45, 0.5], paused_at=6, error_at=4)
    response = staff_client.get(reverse("admin:analyses_analysis_change", args=[checkout.pk]))
    assert response.status_code == 200
    page = response.content.decode()

    conditions = _section(page, "conditions")
    for cells in (
        ("Ready", "True", "Evaluating"),
        ("Healthy", "False", "ThresholdExceeded"),
        ("RolloutPaused", "True", "FailureLimitReached"),
    ):
        assert all(cell in conditions for cell in cells)
    assert "2026-11-29 10:02:00" in conditions
    assert "RolloutPaused is True (FailureLimitReached)" in conditions

    history = _section(page, "history")
    rows = re.findall(r'<tr class="outcome-(\w+)">', history)
    # Newest first; every value is above error-rate's 0.05, so all but the error failed.
    assert rows == ["fail", "fail", "error", "fail", "fail", "fail", "fail"]
    assert "MetricsUnavailable" in history and "Prometheus answered 502 Bad Gateway" in history
    assert "0.035 s" in history
    assert history.count('sentinel-badge paused">paused<') == 1

    svgs = re.findall(r'<svg [^>]*class="metric-chart".*?</svg>', page, re.S)
    assert len(svgs) == 2  # p99-latency and error-rate
    charts = [ET.fromstring(svg) for svg in svgs]
    max_lines = [next(e for e in chart.iter() if e.get("class") == "chart-max") for chart in charts]
    assert [line.get("data-max-value") for line in max_lines] == ["0.25", "0.05"]
    assert all(chart.get("data-points") == "7" for chart in charts)
    assert all(
        sum(1 for e in chart.iter() if e.get("class") == "chart-pause") == 1 for chart in charts
    )

    assert 'id="resume-rollout"' in page
    assert 'id="evaluate-now"' in page
    assert "0.412" in page  # the latest value, from status.metricResults


def test_no_resume_button_when_the_rollout_is_not_paused(
    staff_client: Client, fleet: dict[str, Analysis]
) -> None:
    page = staff_client.get(
        reverse("admin:analyses_analysis_change", args=[fleet["search"].pk])
    ).content.decode()
    assert 'id="resume-rollout"' not in page
    assert 'id="evaluate-now"' in page
    assert "No evaluations yet" in page


def test_a_viewer_sees_the_page_without_actions_or_a_save_button(
    viewer_client: Client, fleet: dict[str, Analysis]
) -> None:
    response = viewer_client.get(
        reverse("admin:analyses_analysis_change", args=[fleet["checkout"].pk])
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "<svg" in page and 'id="conditions"' in page
    assert 'id="resume-rollout"' not in page and 'id="evaluate-now"' not in page
    assert 'name="_save"' not in page
    assert 'id="sentinel-overview"' in viewer_client.get(reverse("admin:index")).content.decode()


def test_a_deleted_analysis_is_history_only(
    staff_client: Client, fleet: dict[str, Analysis]
) -> None:
    gone = fleet["gone"]
    page = staff_client.get(
        reverse("admin:analyses_analysis_change", args=[gone.pk])
    ).content.decode()
    assert "was deleted from the cluster" in page
    assert 'id="evaluate-now"' not in page and 'name="_save"' not in page


def test_pages_load_nothing_from_outside_the_app(
    staff_client: Client, fleet: dict[str, Analysis]
) -> None:
    urls = [
        reverse("admin:index"),
        reverse("admin:analyses_analysis_changelist"),
        reverse("admin:analyses_analysis_change", args=[fleet["checkout"].pk]),
        reverse("admin:analyses_analysis_add"),
    ]
    for url in urls:
        page = staff_client.get(url).content.decode()
        sources = re.findall(r'(?:src|href)="([^"]+)"', page)
        external = [s for s in sources if re.match(r"^(https?:)?//", s)]
        assert external == [], (url, external)


def _labelled(items, label: str):  # type: ignore[no-untyped-def]
    return next(item for item in items if item.label == label)


def _section(page: str, section_id: str) -> str:
    match = re.search(rf'<section[^>]*id="{section_id}".*?</section>', page, re.S)
    assert match is not None, section_id
    return match.group(0)


def test_the_read_only_interval_says_what_an_absent_one_means() -> None:
    # The CRD has no default for interval (docs/resource.md): an analysis applied without one
    # is stored without one, and its read-only page must not show an empty field.
    model_admin = admin.site._registry[Analysis]
    assert model_admin.interval(Analysis(spec={"interval": "1m"})) == "1m"
    assert model_admin.interval(Analysis(spec={})) == "not set (30s unless a template sets it)"
