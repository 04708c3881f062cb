"""The admin's spec form beyond fixed thresholds (docs/status.md): maxIncrease, baseline,
minSamples and failureWindow are edited in the form and the metrics inline, saved to a real
devcluster first, and a broken combination is refused with ``parse_spec``'s own field errors on
the fields they name, nothing written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.test import Client
from django.urls import reverse

from analyses import mirror
from analyses.models import Analysis
from sentinel_core.spec import InvalidSpecError, parse_spec
from testkit.devcluster import DevCluster
from testkit.manifests import ra_manifest
from tests.ui.forms import change_form, cluster_analysis, with_fields

pytestmark = pytest.mark.django_db

GUARD = 'sum(increase(http_requests_total{app="checkout"}[5m]))'


def test_adding_with_relative_thresholds_writes_them_to_the_cluster(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    data = change_form(
        None,
        namespace=namespace,
        name="checkout",
        failure_limit=2,
        metrics=[("p99-latency", "up", 0.25), ("p99-vs-before", "up", 0.0)],
    )
    data["failure_window"] = "4"
    data = with_fields(
        data,
        1,
        max_value="",
        max_increase_percent="20",
        baseline_before_rollout="on",
        min_samples_query=GUARD,
        min_samples_min="200",
    )

    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)

    assert response.status_code == 302, response.content.decode()[-3000:]
    spec = cluster_analysis(ui_cluster, namespace, "checkout")["spec"]
    assert spec["failureWindow"] == 4 and spec["failureLimit"] == 2
    assert spec["metrics"] == [
        {"name": "p99-latency", "query": "up", "maxValue": 0.25},
        {
            "name": "p99-vs-before",
            "query": "up",
            "maxIncrease": {"percent": 20},
            "baseline": {"beforeRollout": True},
            "minSamples": {"query": GUARD, "min": 200},
        },
    ]
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert row.failure_window == 4
    relative = row.metrics.get(name="p99-vs-before")
    assert (relative.max_value, relative.max_increase_percent) == (None, 20.0)
    assert relative.baseline_before_rollout and relative.min_samples_min == 200.0

    # The change page shows the saved values in the inline, ready to edit.
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    inline = page.context["inline_admin_formsets"][0].formset.forms[1]
    assert inline.initial["max_increase_percent"] == 20.0
    assert inline.initial["min_samples_query"] == GUARD
    assert page.context["adminform"].form.initial["failure_window"] == 4


def test_switching_to_an_offset_baseline_and_back_to_consecutive_counting(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    metric = {
        "name": "p99",
        "query": "up",
        "maxIncrease": {"percent": 20},
        "baseline": {"beforeRollout": True},
    }
    manifest = ra_manifest("checkout", namespace, metrics=[metric], failureLimit=2, failureWindow=5)
    ui_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    row, _ = mirror.upsert_from_resource(cluster_analysis(ui_cluster, namespace, "checkout"))
    data = change_form(row, failure_limit=2, metrics=[("p99", "up", 0.0)])
    data = with_fields(
        data, max_value="", max_increase_absolute="0.05", baseline_offset="1h"
    )  # percent and beforeRollout left empty: removed

    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)

    assert response.status_code == 302, response.content.decode()[-3000:]
    spec = cluster_analysis(ui_cluster, namespace, "checkout")["spec"]
    assert "failureWindow" not in spec
    assert spec["metrics"] == [
        {
            "name": "p99",
            "query": "up",
            "maxIncrease": {"absolute": 0.05},
            "baseline": {"offset": "1h"},
        }
    ]


# (case, the metric's fields, failureWindow, the field parse_spec's message belongs on).
BROKEN: list[tuple[str, dict[str, str], str, str]] = [
    ("neither maxValue nor maxIncrease", {"max_value": ""}, "", "max_value"),
    (
        "maxIncrease without baseline",
        {"max_value": "", "max_increase_percent": "20"},
        "",
        "baseline_before_rollout",
    ),
    (
        "percent and absolute",
        {"max_increase_percent": "20", "max_increase_absolute": "1", "baseline_offset": "1h"},
        "",
        "max_increase_percent",
    ),
    (
        "offset and before rollout",
        {"max_increase_percent": "20", "baseline_offset": "1h", "baseline_before_rollout": "on"},
        "",
        "baseline_before_rollout",
    ),
    (
        "offset not a duration",
        {"max_increase_percent": "20", "baseline_offset": "soon"},
        "",
        "baseline_offset",
    ),
    ("guard without its minimum", {"min_samples_query": GUARD}, "", "min_samples_min"),
    ("failure window under the limit", {}, "2", "failure_window"),
]


@pytest.mark.parametrize(
    ("fields", "window", "where"),
    [case[1:] for case in BROKEN],
    ids=[case[0] for case in BROKEN],
)
def test_a_broken_combination_shows_parse_specs_errors_on_its_field_and_writes_nothing(
    staff_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
    fields: dict[str, str],
    window: str,
    where: str,
) -> None:
    data = change_form(None, namespace=namespace, name="checkout", failure_limit=3)
    data = with_fields(data, **fields)
    if window:
        data["failure_window"] = window

    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)

    assert response.status_code == 200
    # The messages are parse_spec's, for the spec the form describes, each on its field.
    form = response.context["adminform"].form
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    raw = {
        "target": {"kind": "Deployment", "name": "checkout"},
        "metrics": [_spec_metric(fields)],
        "interval": "30s",
        "failureLimit": 3,
        "dryRun": False,
        **({"failureWindow": int(window)} if window else {}),
    }
    with pytest.raises(InvalidSpecError) as expected:
        parse_spec(raw)
    wanted = [e.message for e in expected.value.errors]
    shown = {**form.errors, **metric.errors}
    assert shown == {where: wanted}
    assert "errornote" in response.content.decode()
    assert not Analysis.objects.filter(namespace=namespace).exists()
    listed = ui_cluster.kubectl("get", "rolloutanalyses", "-n", namespace, "-o", "json").stdout
    assert json.loads(listed)["items"] == []


def _spec_metric(fields: dict[str, str]) -> dict[str, Any]:
    """The spec.metrics[0] the form posts: change_form's defaults with ``fields`` applied."""
    out: dict[str, Any] = {"name": "p99-latency", "query": "up"}
    max_value = fields.get("max_value", "0.25")
    if max_value:
        out["maxValue"] = float(max_value)
    increase = {
        key: float(fields[column])
        for key, column in (
            ("percent", "max_increase_percent"),
            ("absolute", "max_increase_absolute"),
        )
        if fields.get(column)
    }
    if increase:
        out["maxIncrease"] = increase
    baseline: dict[str, Any] = {}
    if fields.get("baseline_offset"):
        baseline["offset"] = fields["baseline_offset"]
    if fields.get("baseline_before_rollout"):
        baseline["beforeRollout"] = True
    if baseline:
        out["baseline"] = baseline
    if fields.get("min_samples_query"):
        out["minSamples"] = {"query": fields["min_samples_query"]}
    return out
