"""The admin's sequential fields (docs/analysis.md): labelled fields in the metrics inline and the
analysis's false pause rate, written to a real devcluster with the CRD's defaults applied and
shown again; a broken one is refused with ``parse_spec``'s field errors on the fields they
name, and nothing is written.
"""

from __future__ import annotations

import json

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from testkit.devcluster import DevCluster
from tests.ui.forms import cluster_analysis, post_add

pytestmark = pytest.mark.django_db

BAD = 'http_requests_total{app="checkout", code=~"5.."}'
TOTAL = 'http_requests_total{app="checkout"}'


def _add(client: Client, into: str, rate: str = "", **fields: str) -> HttpResponse:
    """Post the add form: analysis checkout in ``into``, one metric errors-vs-old with ``fields``
    and the analysis's false pause rate ``rate``."""
    analysis = {"false_pause_rate": rate} if rate else {}
    return post_add(client, into, ("errors-vs-old", "", 0), analysis, max_value="", **fields)


def test_a_sequential_metric_is_written_with_its_defaults_and_shown_again(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    response = _add(
        staff_client,
        namespace,
        rate="0.01",
        sequential_on="on",
        sequential_bad=BAD,
        sequential_total=TOTAL,
        sequential_max_increase_percent="10",
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    spec = cluster_analysis(ui_cluster, namespace, "checkout")["spec"]
    assert spec["falsePauseRate"] == 0.01
    assert spec["metrics"] == [
        {
            "name": "errors-vs-old",
            "sequential": {
                "bad": BAD,
                "total": TOTAL,
                "maxIncrease": {"percent": 10},
                "minEvents": 100,
                "by": "pod_template_hash",
            },
        }
    ]
    row = Analysis.objects.get(namespace=namespace, name="checkout")
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    (metric,) = page.context["inline_admin_formsets"][0].formset.forms
    shown = {n: metric[n].value() for n in metric.fields if n.startswith("sequential")}
    assert shown == {
        "sequential_on": True,
        "sequential_bad": BAD,
        "sequential_total": TOTAL,
        "sequential_histogram": None,
        "sequential_slower_than": None,
        "sequential_max_increase_percent": 10,
        "sequential_min_events": 100,
        "sequential_by": "pod_template_hash",
    }
    assert page.context["adminform"].form["false_pause_rate"].value() == 0.01
    html = page.content.decode()
    for label in ("Judge new pods against old pods on counts", "Bad events (counter)"):
        assert f">{label}" in html, label


def test_a_broken_sequential_metric_is_refused_on_its_fields_and_nothing_written(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    response = _add(
        staff_client,
        namespace,
        rate="0.5",
        sequential_on="on",
        sequential_bad=BAD,
        sequential_min_events="0",
    )

    assert response.status_code == 200
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    assert metric.errors == {
        "sequential_on": ["must set either bad and total, or histogram and slowerThan"],
        "sequential_min_events": ["must be an integer from 1 to 2147483647"],
    }
    assert response.context["adminform"].form.errors == {
        "false_pause_rate": ["must be greater than 0 and at most 0.2"]
    }
    assert not Analysis.objects.filter(namespace=namespace).exists()
    listed = ui_cluster.kubectl("get", "rolloutanalyses", "-n", namespace, "-o", "json").stdout
    assert json.loads(listed)["items"] == []


def test_a_metric_with_neither_query_nor_sequential_is_told_so(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    response = _add(staff_client, namespace)

    assert response.status_code == 200
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    assert metric.errors["query"] == ["is required unless sequential is given"]
