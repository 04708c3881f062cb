"""The admin's compare box (SPEC §3.2): a JSON object in the metrics inline, written to a real
devcluster with the CRD's defaults applied and mirrored back; a broken one is refused with
``parse_spec``'s field error and nothing is written.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from testkit.devcluster import DevCluster
from tests.ui.forms import change_form
from tests.ui.test_admin_thresholds import _get, _relative, namespace  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_compare_metric_is_written_with_its_defaults_and_mirrored(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,  # noqa: F811
) -> None:
    data = change_form(None, namespace=namespace, name="checkout", metrics=[("vs-old", "up", 0.0)])
    data = _relative(data, max_value="", compare='{"maxEffect": {"percent": 10}}')

    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)

    assert response.status_code == 302, response.content.decode()[-3000:]
    (metric,) = _get(ui_cluster, namespace, "checkout")["spec"]["metrics"]
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
    namespace: str,  # noqa: F811
) -> None:
    data = change_form(None, namespace=namespace, name="checkout")
    data = _relative(data, compare='{"confidence": 0.5}')

    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)

    assert response.status_code == 200
    errors = list(response.context["adminform"].form.non_field_errors())
    assert errors == [
        "spec.metrics[0].compare.confidence: must be greater than 0.5 and less than 1",
        "spec.metrics[0].compare: excludes maxValue and maxIncrease on the same metric",
    ]
    assert not Analysis.objects.filter(namespace=namespace).exists()
    listed = ui_cluster.kubectl("get", "rolloutanalyses", "-n", namespace, "-o", "json").stdout
    assert json.loads(listed)["items"] == []
