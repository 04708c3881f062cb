"""Numbers as the admin shows them (analyses.numbers): six significant digits, the exact
value on hover, while the REST API keeps every digit.

Floating point leaves values such as ``0.9950000000000001`` behind; a threshold, a status value or a
history value holding such a number reads ``0.995`` on the analysis page.
"""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis, MetricResult
from analyses.numbers import exact, number_html, readable
from tests.ui import factories

# What arithmetic leaves behind: one digit of noise past the value meant (0.995).
NOISY = 0.9950000000000001


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (NOISY, "0.995"),
        (0.1 + 0.2, "0.3"),
        (0.25, "0.25"),
        (3.0, "3"),
        (123456789.0, "123456789"),  # whole digits are never rounded away
        (1234567.891, "1234568"),
        (0.000123456789, "0.000123457"),
        (0.00001234, "1.234e-05"),
        (2.5e18, "2.5e+18"),
        (-0.004, "-0.004"),
        (-0.0, "0"),
        ("0.30000000000000004", "0.3"),  # Prometheus's text of a sample
        ("NaN", "NaN"),
        ("+Inf", "+Inf"),
        ("not a number", "not a number"),
        (None, ""),
    ],
)
def test_readable_rounds_to_six_significant_digits(value: object, shown: str) -> None:
    assert readable(value) == shown  # type: ignore[arg-type]


def test_the_exact_value_goes_in_the_title() -> None:
    assert exact(NOISY) == "0.9950000000000001"
    assert number_html(NOISY) == (
        '<span class="sentinel-number" title="0.9950000000000001">0.995</span>'
    )


def test_the_number_filter_does_not_depend_on_the_locale(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LANGUAGE_CODE = "de"
    settings.USE_THOUSAND_SEPARATOR = True
    rendered = Template("{% load sentinel_numbers %}{{ v|number }}").render(
        Context({"v": 12345.678901})
    )
    assert rendered == '<span class="sentinel-number" title="12345.678901">12345.7</span>'


@pytest.mark.django_db
def test_the_analysis_page_shows_readable_numbers_and_the_api_every_digit(
    staff_client: Client,
) -> None:
    metric = {**factories.LATENCY, "maxValue": NOISY}
    row = factories.analysis(
        "checkout",
        metrics=(metric,),
        status_=factories.status(
            verdict="Pass", values=[("p99-latency", "0.30000000000000004", NOISY, "Pass")]
        ),
    )
    factories.history(row, [0.3, 0.5])
    # As the operator records it: Prometheus's text of the sample.
    MetricResult.objects.filter(evaluation__analysis=row, value=0.3).update(
        value=0.1 + 0.2, value_text="0.30000000000000004"
    )

    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    html = page.content.decode()
    card = re.search(r'<section class="module sentinel-chart".*?</header>', html, re.S)
    assert card is not None
    assert 'title="0.30000000000000004">0.3</span>' in card.group(0)  # the latest value
    assert 'title="0.9950000000000001">0.995</span>' in card.group(0)  # its maxValue
    history = re.search(r'<section[^>]*id="history".*?</section>', html, re.S)
    assert history is not None
    assert 'title="0.30000000000000004">0.3</span>' in history.group(0)
    # Outside the spec form's inputs (which edit the exact value), no noisy digits are shown.
    shown = html.split('id="spec-heading"')[0]
    assert ">0.9950000000000001<" not in shown and ">0.30000000000000004<" not in shown

    api = staff_client.get("/api/v1/analyses/shop/checkout/").json()
    assert api["spec"]["metrics"][0]["maxValue"] == NOISY
    assert api["status"]["metricResults"][0]["value"] == "0.30000000000000004"


@pytest.mark.django_db
def test_a_read_only_page_shows_the_metric_numbers_readable_and_compare_in_words(
    staff_client: Client,
) -> None:
    compared = {"name": "vs-old", "query": "up", "compare": {"maxEffect": {"percent": 10}}}
    row = factories.analysis(
        "checkout", metrics=({**factories.LATENCY, "maxValue": NOISY}, compared)
    )
    # A deleted analysis is history: its page is read-only.
    Analysis.objects.filter(pk=row.pk).update(deleted_at=factories.T0)

    html = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk])).content
    inline = html.decode().split('id="metrics-group"')[1]

    def shown(label: str) -> list[str]:
        return re.findall(
            rf"<label[^>]*>{re.escape(label)}:</label>\s*<div class=\"readonly\">(.*?)</div>",
            inline,
        )

    assert shown("Max value") == [
        '<span class="sentinel-number" title="0.9950000000000001">0.995</span>',
        "-",
    ]
    assert shown("Compare new pods with old pods") == ["-", "yes"]
    assert shown("Max effect %") == ["-", '<span class="sentinel-number" title="10">10</span>']
    assert shown("Lookback") == ["-", "5m"]


@pytest.mark.django_db
def test_a_delivery_attempt_shows_its_duration_readable(staff_client: Client) -> None:
    row = factories.analysis("checkout")
    delivery = factories.failed_delivery(row, at=factories.T0, duration_seconds=0.1 + 0.2)
    page = staff_client.get(reverse("admin:notifications_delivery_change", args=[delivery.pk]))
    assert 'title="0.30000000000000004">0.3</span> s' in page.content.decode()
