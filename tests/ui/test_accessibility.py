"""axe-core in a real browser on every page the project adds or changes, light and dark (issue 14).

Debian's chromium (through Playwright, as in ``test_browser``) opens each page of ``PAGES`` as a
logged-in superuser, injects ``node_modules/axe-core/axe.min.js`` (pinned in package.json,
installed by ``make test``) and runs it at the ``wcag2a``, ``wcag2aa`` and ``best-practice``
tags. Any violation fails the test with its rule id, impact and target selectors. Each page runs
in three themes: Django's admin light theme and dark theme (the toggle's ``theme`` key in
localStorage) and the admin's "auto" theme with the browser preferring dark.

The overview, the list and the analysis page are opened in each state they can be in: with
paused rollouts and analyses not ready, an analysis of every metric kind (a threshold, one
against its baseline, compare, sequential) paused mid-rollout, a StatefulSet's with a histogram's
sequential metric, one never evaluated and one deleted. At ``WIDTH`` px no page may scroll
sideways: everything fits the window.

The dark detail page is saved to var/screenshots/analysis-detail-dark.png on every run, and the
page of every metric kind, light and dark, to analysis-kinds-{light,dark}.png, a finished
backtest job's page (light) to backtest-job.png, the add form with a draft to try on past
rollouts (light) to backtest-try.png (the copies in docs/screenshots/ are refreshed
from them by hand, like test_browser's).

A second test drives the detail page with the keyboard alone (``keyboard.press``): it edits and
saves the spec form, then reaches and uses "Evaluate now" and "Resume rollout".

To check a new page, add one ``AxePage`` to ``PAGES``.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from playwright.sync_api import BrowserContext, Page, expect
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from accounts import tokens
from accounts.models import NamespaceGrant
from analyses.charts import ChartPoint, render_metric_chart
from analyses.models import Analysis, BacktestJob, BacktestState
from testkit.devcluster import DevCluster
from testkit.paths import REPO_ROOT
from tests.ui import factories
from tests.ui.test_browser import (
    LATENCY,
    _browser,
    _kubectl_json,
    _paused_rollout,
    _seed_history,
)

# Chromium through Playwright (docs/testkit.md#tiers).
pytestmark = pytest.mark.browser

AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "best-practice"]
# Its own namespace in the session's devcluster (test_browser uses "ui-browser").
KEYBOARD_NAMESPACE = "ui-keyboard"
DARK_SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "analysis-detail-dark.png"
KINDS_SCREENSHOT = str(REPO_ROOT / "var" / "screenshots" / "analysis-kinds-{}.png")
BACKTEST_SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "backtest-job.png"
BACKTEST_RESULT = REPO_ROOT / "tests" / "ui" / "backtest_result.json"
TRY_SCREENSHOT = REPO_ROOT / "var" / "screenshots" / "backtest-try.png"
LATENCY_QUERY = (
    "histogram_quantile(0.99, sum by (le) "
    '(rate(http_request_duration_seconds_bucket{app="checkout"}[5m])))'
)
# A selector visible once the API docs page rendered (it renders in script).
API_DOCS_READY = ".swagger-ui .opblock"
# A laptop's window: no page may be wider than this (no sideways scrolling).
WIDTH = 1280

# The theme under test: what the admin's theme toggle left in localStorage ("theme") and the
# colour scheme the browser prefers. "auto" follows prefers-color-scheme.
THEMES: Mapping[str, tuple[str, str]] = {
    "light": ("light", "light"),
    "dark": ("dark", "light"),
    "auto-dark": ("auto", "dark"),
}


@dataclass(frozen=True)
class AxePage:
    """One page axe checks: its path (formatted with the ids ``_seed`` returns)."""

    name: str
    path: str
    # A selector that is visible once the page has rendered (Swagger UI renders in script).
    ready: str = "#content"
    # Rule ids this page may still violate, each documented with its reason.
    allowed: frozenset[str] = frozenset()
    # What to do on the page before checking it, e.g. submit a form to see its errors.
    then: Callable[[Page], object] | None = None
    # False for the pages seen before signing in.
    signed_in: bool = True


def _refuse_compare(page: Page) -> None:
    """Fill the add form with a compare metric parse_spec refuses, and save it."""
    page.fill("#id_namespace", "shop")
    page.fill("#id_name", "checkout-vs-old")
    page.fill("#id_target_name", "checkout")
    page.fill("#id_metrics-0-name", "vs-old")
    page.fill("#id_metrics-0-query", "up")
    page.check("#id_metrics-0-compare_on")
    page.fill("#id_metrics-0-compare_confidence", "0.5")
    page.fill("#id_metrics-0-compare_lookback", "soon")
    page.click("input[name=_save]")


def _try_a_draft(page: Page) -> None:
    """Fill the add form with an analysis to come, up to its *Try on past rollouts* button;
    in the light theme, picture it (docs/backtest.md)."""
    page.fill("#id_namespace", "shop")
    page.fill("#id_name", "checkout-guard")
    page.fill("#id_target_name", "checkout")
    page.fill("#id_metrics-0-name", "p99-latency")
    page.fill("#id_metrics-0-query", LATENCY_QUERY)
    page.fill("#id_metrics-0-max_value", "0.25")
    if page.evaluate("() => window.localStorage.getItem('theme')") == "light":
        TRY_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(TRY_SCREENSHOT), full_page=True)


def _open_the_api_docs(page: Page) -> None:
    """Open every operation and the schemas on the API docs page, and one operation's form."""
    expect(page.locator(API_DOCS_READY).first).to_be_visible()
    toggles = page.locator(".opblock-summary-control")
    for index in range(toggles.count()):
        toggles.nth(index).click()
    page.click("section.models h4 button")
    page.locator(".opblock .try-out__btn").first.click()
    expect(page.locator(".opblock .btn.execute").first).to_be_visible()


def _refuse_template(page: Page) -> None:
    """Save a template's spec that is not YAML."""
    page.fill("#id_spec", "metrics: [")
    page.click("#template-save")


# The templates the template pages show, in the session's devcluster (applied idempotently:
# the test runs once per theme).
TEMPLATE_NAMESPACE = "ui-axe"
CLUSTER_TEMPLATE = "ui-axe-errors"


def _templates(cluster: DevCluster) -> dict[str, Any]:
    """Apply a cluster template and a namespaced one; mirror an analysis using the first."""
    spec = {
        "description": "Share of 5xx responses.",
        "args": [{"name": "service", "description": "the service label"}],
        "metrics": [
            {
                "name": "error-rate",
                "query": 'sum(rate(http_requests_total{service="{{ args.service }}"}[5m]))',
                "maxValue": 0.01,
            }
        ],
    }
    group = "sentinel.example.com/v1alpha1"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEMPLATE_NAMESPACE}},
        {
            "apiVersion": group,
            "kind": "ClusterRolloutAnalysisTemplate",
            "metadata": {"name": CLUSTER_TEMPLATE},
            "spec": spec,
        },
        {
            "apiVersion": group,
            "kind": "RolloutAnalysisTemplate",
            "metadata": {"name": "latency", "namespace": TEMPLATE_NAMESPACE},
            "spec": {**spec, "interval": "1m"},
        },
    ]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    status = factories.status(values=[("error-rate", "0.002", 0.01, "Pass")])
    status["templates"] = [{"name": CLUSTER_TEMPLATE, "clusterScope": True, "generation": 1}]
    status["resolvedMetrics"] = [
        {
            "name": "error-rate",
            "query": 'sum(rate(http_requests_total{service="checkout"}[5m]))',
            "maxValue": 0.01,
            "template": {"name": CLUSTER_TEMPLATE, "clusterScope": True},
        },
        {"name": "p99-latency", "query": "up", "maxValue": 0.25},
    ]
    templated = factories.analysis("templated", namespace=TEMPLATE_NAMESPACE, status_=status)
    spec_uses = {"templates": [{"name": CLUSTER_TEMPLATE, "clusterScope": True}]}
    Analysis.objects.filter(pk=templated.pk).update(spec={**templated.spec, **spec_uses})
    return {
        "cratmpl": CLUSTER_TEMPLATE,
        "tmpl_namespace": TEMPLATE_NAMESPACE,
        "templated": templated.pk,
    }


def _fail_to_sign_in(page: Page) -> None:
    page.fill("#id_username", "platform")
    page.fill("#id_password", "not the password")
    page.click("input[type=submit]")


PAGES: tuple[AxePage, ...] = (
    # The login form is the project's (accounts.login_limits.ThrottledLoginForm).
    AxePage("login", "/admin/login/", ready="#login-form", signed_in=False),
    AxePage(
        "login, refused",
        "/admin/login/",
        ready=".errornote",
        then=_fail_to_sign_in,
        signed_in=False,
    ),
    AxePage("admin index: the overview", "/admin/", ready="#paused-targets table"),
    AxePage("app index", "/admin/analyses/", ready="#content-main"),
    AxePage("analysis list", "/admin/analyses/analysis/", ready="#result_list"),
    AxePage("analysis list, paused", "/admin/analyses/analysis/?paused__exact=1", "#result_list"),
    AxePage("analysis list, not ready", "/admin/analyses/analysis/?ready__exact=0", "#result_list"),
    AxePage(
        "analysis detail",
        "/admin/analyses/analysis/{paused}/change/",
        ready=".sentinel-chart svg.metric-chart",
    ),
    AxePage(
        "analysis detail, every metric kind, paused",
        "/admin/analyses/analysis/{kinds}/change/",
        ready=".sentinel-chart svg.rates-chart",
    ),
    AxePage(
        "analysis detail, a StatefulSet's, histogram sequential",
        "/admin/analyses/analysis/{statefulset}/change/",
        ready=".sentinel-chart svg.rates-chart",
    ),
    AxePage("analysis detail, not ready", "/admin/analyses/analysis/{not_ready}/change/"),
    AxePage("analysis detail, never evaluated", "/admin/analyses/analysis/{fresh}/change/"),
    AxePage("analysis detail, deleted (read-only)", "/admin/analyses/analysis/{deleted}/change/"),
    AxePage("analysis delete", "/admin/analyses/analysis/{paused}/delete/"),
    AxePage("analysis add form", "/admin/analyses/analysis/add/", ready="#analysis_form"),
    AxePage(
        "analysis add form, refused",
        "/admin/analyses/analysis/add/",
        ready=".errornote",
        then=lambda page: page.click("input[name=_save]"),
    ),
    AxePage(
        "analysis add form, compare refused on its fields",
        "/admin/analyses/analysis/add/",
        ready=".field-compare_confidence .errorlist",
        then=_refuse_compare,
    ),
    AxePage(
        "analysis add form, a draft to try on past rollouts",
        "/admin/analyses/analysis/add/",
        ready="#try-draft",
        then=_try_a_draft,
    ),
    AxePage(
        "backtest job, finished, with its graphs",
        "/admin/analyses/analysis/{paused}/backtest/{backtest}/",
        ready="#backtest-rollouts",
    ),
    AxePage("templates", "/admin/analyses/analysis/templates/", ready="#cluster-templates"),
    AxePage(
        "cluster template, its users, its spec form",
        "/admin/analyses/analysis/templates/cluster/{cratmpl}/",
        ready="#template-form",
    ),
    AxePage(
        "namespaced template, its spec refused",
        "/admin/analyses/analysis/templates/namespaced/{tmpl_namespace}/latency/",
        ready=".form-row.errors .errorlist",
        then=_refuse_template,
    ),
    AxePage(
        "analysis detail, metrics from templates",
        "/admin/analyses/analysis/{templated}/change/",
        ready="#resolved-metrics",
    ),
    AxePage("API token list", "/admin/accounts/apitoken/", ready="#result_list"),
    AxePage("API token change", "/admin/accounts/apitoken/{token}/change/"),
    AxePage("namespace grant list", "/admin/accounts/namespacegrant/", ready="#result_list"),
    AxePage("namespace grant add", "/admin/accounts/namespacegrant/add/"),
    AxePage("notification deliveries", "/admin/notifications/delivery/", ready="#result_list"),
    AxePage("notification delivery", "/admin/notifications/delivery/{delivery}/change/"),
    AxePage("notification channels", "/admin/notifications/delivery/channels/"),
    AxePage("API docs", "/api/v1/schema/docs/", ready=API_DOCS_READY),
    AxePage(
        "API docs, every operation opened, one tried out",
        "/api/v1/schema/docs/",
        ready=".opblock .btn.execute",
        then=_open_the_api_docs,
    ),
)


def _seed() -> dict[str, Any]:
    """Write the rows the pages show and return the ids their paths need."""
    admin = User.objects.get(username="platform")
    paused = factories.analysis(
        "checkout",
        metrics=(factories.LATENCY, factories.ERRORS),
        status_=factories.status(
            verdict="Fail",
            failures=3,
            paused=True,
            values=[
                ("p99-latency", "0.41", 0.25, "Fail"),
                ("error-rate", "0.004", 0.05, "Pass"),
            ],
        ),
    )
    factories.history(
        paused, LATENCY, paused_at=len(LATENCY) - 1, error_at=8, steady={"error-rate": 0.004}
    )
    kinds = factories.every_kind_analysis()
    # A short target next to its kind ("StatefulSet web/db"): axe reads the link as in a text.
    statefulset = factories.histogram_analysis(namespace="web", target="db")
    not_ready = factories.analysis(
        "search",
        namespace="web",
        # Failing when Prometheus went away. No analysis is Inconclusive, so the overview shows
        # an empty card too (the history tables show Inconclusive badges).
        status_=factories.status(verdict="Fail", ready_reason="MetricsUnavailable"),
    )
    factories.analysis("payments", namespace="shop", status_=factories.status(failures=1))
    fresh = factories.analysis("fresh", namespace="web")
    deleted = factories.analysis("legacy", namespace="web", status_=factories.status())
    factories.history(deleted, [0.1, 0.2, None])
    Analysis.objects.filter(pk=deleted.pk).update(deleted_at=timezone.now())
    token = tokens.issue(admin, now=timezone.now(), name="ci deploys").token
    NamespaceGrant.objects.create(user=admin, namespace="shop", can_view=True, can_edit=True)
    delivery = factories.failed_delivery(paused, at=timezone.now(), duration_seconds=0.2)
    # A real backtest's result (tests/realcluster/test_backtest_live.py's, namespace renamed).
    backtest = BacktestJob.objects.create(
        namespace=paused.namespace,
        name=paused.name,
        rollouts=10,
        max_duration_seconds=3600,
        state=BacktestState.SUCCEEDED,
        result=json.loads(BACKTEST_RESULT.read_text()),
        finished_at=timezone.now(),
    )
    return {
        "backtest": backtest.pk,
        "delivery": delivery.pk,
        "paused": paused.pk,
        "kinds": kinds.pk,
        "statefulset": statefulset.pk,
        "fresh": fresh.pk,
        "not_ready": not_ready.pk,
        "deleted": deleted.pk,
        "token": token.pk,
    }


def _session_cookie(user: User, live_server: LiveServer) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    value = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return {"name": django_settings.SESSION_COOKIE_NAME, "value": value, "url": live_server.url}


def _themed_context(
    browser: Any, theme: str, cookie: dict[str, Any] | None = None
) -> BrowserContext:
    stored, scheme = THEMES[theme]
    context: BrowserContext = browser.new_context(
        viewport={"width": WIDTH, "height": 900}, color_scheme=scheme
    )
    # Before the admin's theme.js reads it, as if the user had clicked the toggle earlier.
    context.add_init_script(f"window.localStorage.setItem('theme', {json.dumps(stored)});")
    if cookie is not None:
        context.add_cookies([cookie])
    return context


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Inject axe-core into ``page`` and return its violations at ``AXE_TAGS``."""
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        """async (tags) => await axe.run(document, {
            runOnly: {type: 'tag', values: tags},
            resultTypes: ['violations'],
        })""",
        AXE_TAGS,
    )
    return list(result["violations"])


def sideways(page: Page) -> str:
    """Return how the page overflows the window sideways ("" when it fits): its width and the
    widest elements sticking out of it."""
    found: dict[str, Any] = page.evaluate(
        """() => {
            const root = document.documentElement;
            const wide = [...document.querySelectorAll('body *')]
                .filter((e) => e.getBoundingClientRect().right > root.clientWidth + 0.5)
                .slice(0, 5)
                .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`
                    + ` (right edge ${Math.round(e.getBoundingClientRect().right)} px)`);
            return {scroll: root.scrollWidth, client: root.clientWidth, wide};
        }"""
    )
    if found["scroll"] <= found["client"]:
        return ""
    return f"{found['scroll']} px wide in a {found['client']} px window: {'; '.join(found['wide'])}"


def describe(violations: list[dict[str, Any]]) -> list[str]:
    """Return one line per failing element: rule id, impact, selector and axe's summary."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            target = " ".join(json.dumps(part) for part in node["target"])
            summary = (node.get("failureSummary") or "").replace("\n", " ")
            lines.append(f"{violation['id']} [{violation['impact']}] {target}: {summary}")
    return lines


@pytest.mark.parametrize("theme", list(THEMES))
@pytest.mark.slow
def test_every_page_has_no_axe_violations(
    theme: str,
    live_server: LiveServer,
    superuser: User,
    ui_cluster: DevCluster,
    settings: Settings,
) -> None:
    assert AXE.is_file(), f"{AXE} is missing: run `make test` (or `npm ci`) first"
    # The template pages read the cluster (templates have no mirror).
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    ids = {**_seed(), **_templates(ui_cluster)}
    cookie = _session_cookie(superuser, live_server)

    failures: list[str] = []
    with _browser() as browser:
        signed_in = _themed_context(browser, theme, cookie).new_page()
        anonymous = _themed_context(browser, theme).new_page()
        for entry in PAGES:
            page = signed_in if entry.signed_in else anonymous
            response = page.goto(f"{live_server.url}{entry.path.format(**ids)}")
            assert response is not None and response.ok, f"{entry.name}: {response}"
            if entry.then is not None:
                entry.then(page)
            expect(page.locator(entry.ready).first).to_be_visible()
            if page.locator("html[data-theme]").count():
                # The stored theme took effect (the admin's pages only; Swagger UI has none).
                assert page.locator("html").get_attribute("data-theme") == THEMES[theme][0]
            overflow = sideways(page)
            if overflow:
                failures.append(f"{entry.name} ({theme}): scrolls sideways, {overflow}")
            violations = axe_violations(page)
            lines = describe([v for v in violations if v["id"] not in entry.allowed])
            failures += [f"{entry.name} ({theme}): {line}" for line in lines]
            # The allowance stays as short as upstream makes it: a rule fixed upstream leaves it.
            gone = entry.allowed - {v["id"] for v in violations}
            if gone:
                failures.append(f"{entry.name} ({theme}): no longer violated, disallow: {gone}")
            if theme == "light" and entry.path.startswith("/admin/analyses/analysis/{paused}/back"):
                BACKTEST_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(BACKTEST_SCREENSHOT), full_page=True)
            if theme == "dark" and entry.name == "analysis detail":
                DARK_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(DARK_SCREENSHOT), full_page=True)
            if theme in ("light", "dark") and entry.path.startswith(
                "/admin/analyses/analysis/{kinds}"
            ):
                # Down to the history's end: the spec form below is another picture.
                bottom = page.evaluate(
                    "() => document.querySelector('#history').getBoundingClientRect().bottom"
                    " + window.scrollY + 16"
                )
                clip = {"x": 0, "y": 0, "width": WIDTH, "height": bottom}
                page.screenshot(path=KINDS_SCREENSHOT.format(theme), full_page=True, clip=clip)
    assert not failures, "axe-core violations:\n" + "\n".join(failures)


def _tab_to(page: Page, is_target: Callable[[], bool], *, backwards: bool = False) -> None:
    """Press Tab (or Shift+Tab) until ``is_target()``; fail after 200 presses."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(200):
        if is_target():
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} never reached the element")


def _focused(page: Page, selector: str) -> Callable[[], bool]:
    return lambda: bool(page.evaluate("(s) => document.activeElement?.matches(s)", selector))


def _shows_focus(page: Page) -> bool:
    """Return whether the focused element draws a focus ring (outline or box shadow)."""
    return bool(
        page.evaluate(
            """() => {
                const style = getComputedStyle(document.activeElement);
                return style.outlineStyle !== 'none' || style.boxShadow !== 'none';
            }"""
        )
    )


def test_the_detail_page_works_with_the_keyboard_alone(
    live_server: LiveServer,
    ui_cluster: DevCluster,
    settings: Settings,
    superuser: User,
) -> None:
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    row = _paused_rollout(ui_cluster, KEYBOARD_NAMESPACE)
    _seed_history(row)
    cookie = _session_cookie(superuser, live_server)
    url = f"{live_server.url}/admin/analyses/analysis/{row.pk}/change/"

    with _browser() as browser:
        context = _themed_context(browser, "light", cookie)
        page = context.new_page()
        page.goto(url)

        # The spec form: change the failure limit and the first metric's max value, then save.
        _tab_to(page, _focused(page, "#id_failure_limit"))
        page.keyboard.press("ArrowUp")
        _tab_to(page, _focused(page, "#id_metrics-0-max_value"))
        page.keyboard.press("Control+A")
        for key in "0.3":
            page.keyboard.press(key)
        _tab_to(page, _focused(page, "input[name=_continue]"))
        page.keyboard.press("Enter")
        expect(page.locator("ul.messagelist")).to_contain_text("was changed successfully")
        expect(page.locator("#id_failure_limit")).to_have_value("4")

        # "Evaluate now" follows "Resume rollout": Tab past it, Shift+Tab back, then on to
        # "Evaluate now" and press it with Space.
        _tab_to(page, _focused(page, "#evaluate-now"))
        _tab_to(page, _focused(page, "#resume-rollout"), backwards=True)
        _tab_to(page, _focused(page, "#evaluate-now"))
        assert _shows_focus(page)
        page.keyboard.press("Space")
        expect(page.locator("ul.messagelist")).to_contain_text("will be evaluated")

        # The page is loaded again: Tab to "Resume rollout" and press it with Enter.
        _tab_to(page, _focused(page, "#resume-rollout"))
        assert _shows_focus(page)
        page.keyboard.press("Enter")
        expect(page.locator("ul.messagelist")).to_contain_text("is rolling out again")
        expect(page.locator("#resume-rollout")).to_have_count(0)
        context.close()

    resource = _kubectl_json(
        ui_cluster, "get", "rolloutanalysis", "checkout", namespace=KEYBOARD_NAMESPACE
    )
    assert resource["spec"]["failureLimit"] == 4
    assert resource["spec"]["metrics"][0]["maxValue"] == 0.3
    deployment = _kubectl_json(
        ui_cluster, "get", "deployment", "checkout", namespace=KEYBOARD_NAMESPACE
    )
    assert not deployment["spec"].get("paused")


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(one: str, other: str) -> float:
    light, dark = sorted((_luminance(one), _luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_text_in_the_graph_has_aa_contrast() -> None:
    """axe cannot tell the colour behind SVG text, so the graph's labels are checked here."""
    start = factories.T0
    points = [
        ChartPoint(at=start + timedelta(seconds=30 * i), value=v, paused=i == 5)
        for i, v in enumerate([0.1, 0.2, None, 0.3, 0.35, 0.4])
    ]
    svg = render_metric_chart(points, max_value=0.25, title="p99-latency")
    root = ET.fromstring(svg)
    zone = root.find(".//{*}rect[@class='chart-breach-zone']")
    assert zone is not None
    # The shaded zone: the breach colour at its opacity over the card's white.
    opacity = float(zone.get("fill-opacity") or "1")
    tint = zone.get("fill") or "#ffffff"
    shaded = "#" + "".join(
        f"{round(255 * (1 - opacity) + int(tint[i : i + 2], 16) * opacity):02x}" for i in (1, 3, 5)
    )
    fills = {text.get("fill") or "" for text in root.iter("{http://www.w3.org/2000/svg}text")}
    assert fills and all(re.fullmatch(r"#[0-9a-f]{6}", fill) for fill in fills), fills
    for fill in fills:
        for background in ("#ffffff", shaded):
            assert _contrast(fill, background) >= 4.5, (fill, background)
