"""The admin's compare fields (docs/analysis.md): labelled fields in the metrics inline, written to
a real devcluster with the CRD's defaults applied and mirrored back; a broken one is refused with
``parse_spec``'s field errors on the fields they name, and nothing is written.
"""

from __future__ import annotations

import json
import re

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from analyses.admin.metric_groups import UNTICKED_MESSAGE
from analyses.models import Analysis
from testkit.devcluster import DevCluster
from tests.ui.forms import change_form, cluster_analysis, post_add, with_fields

pytestmark = pytest.mark.django_db


def _add(client: Client, into: str, **fields: str) -> HttpResponse:
    """Post the add form: analysis checkout in ``into``, one metric vs-old with ``fields``."""
    return post_add(client, into, ("vs-old", "up", 0.0), **fields)


def test_a_compare_metric_is_written_with_its_defaults_and_mirrored(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    response = _add(
        staff_client, namespace, max_value="", compare_on="on", compare_max_effect_percent="10"
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    (metric,) = cluster_analysis(ui_cluster, namespace, "checkout")["spec"]["metrics"]
    assert metric == {
        "name": "vs-old",
        "query": "up",
        "compare": {
            "maxEffect": {"percent": 10},
            "by": "pod_template_hash",
            "worse": "increase",
            "confidence": 0.95,
            "lookback": "5m",
            "minSamples": 10,
        },
    }
    row = Analysis.objects.get(namespace=namespace, name="checkout")
    assert row.metrics.get().compare["maxEffect"] == {"percent": 10}
    assert row.metrics.get().as_spec()["compare"] == metric["compare"]


def test_compare_with_max_value_is_refused_and_nothing_written(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    data = change_form(None, namespace=namespace, name="checkout")
    data = with_fields(data, compare_on="on", compare_confidence="0.5")

    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)

    assert response.status_code == 200
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    # parse_spec's messages, each on the field its path names, as the REST API reports them.
    assert metric.errors == {
        "compare_confidence": ["must be greater than 0.5 and less than 1"],
        "compare_on": ["excludes maxValue and maxIncrease on the same metric"],
    }
    assert list(response.context["adminform"].form.non_field_errors()) == []
    page = response.content.decode()
    tag = re.search(r'<input[^>]*name="metrics-0-compare_confidence"[^>]*>', page)
    assert tag is not None and 'aria-invalid="true"' in tag.group(0)
    assert not Analysis.objects.filter(namespace=namespace).exists()
    listed = ui_cluster.kubectl("get", "rolloutanalyses", "-n", namespace, "-o", "json").stdout
    assert json.loads(listed)["items"] == []


def test_an_analysis_with_compare_shows_it_in_labelled_fields(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    added = _add(
        staff_client,
        namespace,
        max_value="",
        compare_on="on",
        compare_worse="decrease",
        compare_max_effect_absolute="0.02",
        compare_lookback="10m",
    )
    assert added.status_code == 302
    row = Analysis.objects.get(namespace=namespace, name="checkout")

    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))

    (metric,) = page.context["inline_admin_formsets"][0].formset.forms
    shown = {name: metric[name].value() for name in metric.fields if name.startswith("compare")}
    assert shown == {
        "compare_on": True,
        "compare_by": "pod_template_hash",
        "compare_worse": "decrease",
        "compare_max_effect_percent": None,
        "compare_max_effect_absolute": 0.02,
        "compare_confidence": 0.95,
        "compare_lookback": "10m",
        "compare_min_samples": 10,
    }
    html = page.content.decode()
    for label in ("Compare new pods with old pods", "Worse is", "Max effect %", "Confidence"):
        assert f">{label}" in html, label
    assert 'name="metrics-0-compare_on"' in html and "Optional JSON" not in html


def test_unticking_compare_removes_it_from_the_spec(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
) -> None:
    added = _add(
        staff_client, namespace, max_value="", compare_on="on", compare_max_effect_percent="10"
    )
    assert added.status_code == 302
    row = Analysis.objects.get(namespace=namespace, name="checkout")

    # The box unticked, its fields still as the page showed them, and a max value instead.
    edit = change_form(row, metrics=[("vs-old", "up", 0.3)])
    edit = with_fields(edit, compare_max_effect_percent="10", compare_confidence="0.95")
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), edit)

    assert response.status_code == 302, response.content.decode()[-3000:]
    (metric,) = cluster_analysis(ui_cluster, namespace, "checkout")["spec"]["metrics"]
    assert metric == {"name": "vs-old", "query": "up", "maxValue": 0.3}


def test_compare_fields_filled_without_the_box_are_refused(staff_client: Client) -> None:
    response = _add(staff_client, "shop", max_value="", compare_max_effect_percent="10")

    assert response.status_code == 200
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    assert metric.errors == {"compare_on": [UNTICKED_MESSAGE]}
    assert not Analysis.objects.exists()
