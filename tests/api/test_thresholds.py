"""Beyond fixed thresholds over the REST API (docs/resource.md#baselines): maxIncrease with a
baseline, minSamples and failureWindow have the custom resource's shape, reach the cluster and
the mirror, are refused with ``parse_spec``'s own field errors, and the status fields the
operator writes for them (baseline, samples, series, window, rollout) come back unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from django.utils import timezone

from accounts import tokens
from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_core.spec import InvalidSpecError, parse_spec
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api, make_user
from tests.api.test_crud import _resync

pytestmark = pytest.mark.django_db(transaction=True)

FIXED = {"name": "p99-latency", "query": "histogram_quantile(0.99, x)", "maxValue": 0.25}
RELATIVE = {
    "name": "p99-vs-before",
    "query": "histogram_quantile(0.99, x)",
    "maxIncrease": {"percent": 20},
    "baseline": {"beforeRollout": True},
    "minSamples": {"query": "sum(increase(http_requests_total[5m]))", "min": 200},
}


def _beyond() -> dict[str, Any]:
    return spec(metrics=[FIXED, RELATIVE], failureLimit=2, failureWindow=4)


def test_create_with_relative_thresholds_reaches_the_cluster_and_the_mirror(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": _beyond()}
    )

    assert response.status_code == 201, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"] == {**_beyond(), "interval": "30s", "dryRun": False}
    assert response.json()["spec"] == in_cluster["spec"]
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert row.failure_window == 4
    fixed, relative = row.metrics.all()
    assert (fixed.max_value, fixed.max_increase_percent, fixed.min_samples_query) == (
        0.25,
        None,
        "",
    )
    assert (relative.max_value, relative.max_increase_percent) == (None, 20.0)
    assert (relative.baseline_before_rollout, relative.baseline_offset) == (True, "")
    assert (relative.min_samples_query, relative.min_samples_min) == (
        "sum(increase(http_requests_total[5m]))",
        200.0,
    )
    # The mirror's rows give back exactly the spec's metrics.
    assert [m.as_spec() for m in row.metrics.all()] == in_cluster["spec"]["metrics"]


def test_patch_switches_the_baseline_and_drops_the_window(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": _beyond()}
    )
    assert created.status_code == 201, created.text
    offset = {
        **RELATIVE,
        "maxIncrease": {"absolute": 0.05},
        "baseline": {"offset": "1h"},
    }
    del offset["minSamples"]

    # A merge patch: lists are replaced, null removes a field.
    response = api.patch(
        f"analyses/{namespace}/checkout/",
        json={"spec": {"metrics": [offset], "failureWindow": None}},
    )

    assert response.status_code == 200, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"]["metrics"] == [offset]
    assert "failureWindow" not in in_cluster["spec"]
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert row.failure_window is None
    (metric,) = row.metrics.all()
    assert (metric.max_increase_absolute, metric.max_increase_percent) == (0.05, None)
    assert (metric.baseline_offset, metric.baseline_before_rollout) == ("1h", False)
    assert (metric.min_samples_query, metric.min_samples_min) == ("", None)


def _metric(**fields: Any) -> dict[str, Any]:
    return {"name": "m", "query": "up", **fields}


INVALID: list[tuple[str, dict[str, Any]]] = [
    ("neither maxValue nor maxIncrease", spec(metrics=[_metric()])),
    (
        "maxIncrease without baseline",
        spec(metrics=[_metric(maxIncrease={"percent": 20})]),
    ),
    (
        "both percent and absolute",
        spec(
            metrics=[_metric(maxIncrease={"percent": 20, "absolute": 1}, baseline={"offset": "1h"})]
        ),
    ),
    (
        "both offset and beforeRollout",
        spec(
            metrics=[
                _metric(
                    maxIncrease={"percent": 20},
                    baseline={"offset": "1h", "beforeRollout": True},
                )
            ]
        ),
    ),
    (
        "offset not a duration",
        spec(metrics=[_metric(maxIncrease={"percent": 20}, baseline={"offset": "an hour"})]),
    ),
    ("minSamples without min", spec(metrics=[_metric(maxValue=1, minSamples={"query": "up"})])),
    ("failureWindow under failureLimit", spec(failureLimit=3, failureWindow=2)),
    ("failureWindow not an integer", spec(failureWindow="4")),
    ("unknown maxIncrease field", spec(metrics=[_metric(maxIncrease={"percnt": 20})])),
]


@pytest.mark.parametrize("raw_spec", [case[1] for case in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_relative_specs_get_parse_spec_field_errors_and_write_nothing(
    api: Api, namespace: str, api_cluster: Cluster, raw_spec: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSpecError) as expected:
        parse_spec(raw_spec, strict=True)

    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw_spec}
    )

    assert response.status_code == 400, response.text
    # Exactly parse_spec's errors: same paths, same messages (the CRD's rules, one home).
    assert response.json() == expected.value.by_field()
    assert all(path.startswith("spec.") for path in response.json())
    assert not Analysis.objects.exists()
    assert kubectl_json(api_cluster, "rolloutanalyses", "-n", namespace)["items"] == []


def test_status_fields_of_relative_thresholds_come_back_as_written(
    api: Api, namespace: str, api_cluster: Cluster, cluster_client: kube.KubeClient
) -> None:
    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": _beyond()}
    )
    assert created.status_code == 201, created.text
    status = {
        "observedGeneration": 1,
        "lastVerdict": "Fail",
        "failures": 2,
        "window": ["Pass", "Fail", "Fail"],
        "lastEvaluationTime": "2026-11-29T10:00:30Z",
        "metricResults": [
            {"name": "p99-latency", "value": "0.2", "maxValue": 0.25, "verdict": "Pass"},
            {
                "name": "p99-vs-before",
                "value": "0.412",
                "baseline": "0.118",
                "samples": "1843",
                "series": {"pod": "checkout-7d9f-x2k4", "route": "/pay"},
                "verdict": "Fail",
                "message": "0.412 is 249 % above the baseline 0.118 before the rollout",
            },
        ],
        "rollout": {"templateHash": "5c7f9d", "startedAt": "2026-11-29T09:58:10Z"},
        "pausedAt": None,
        "conditions": [],
    }
    path = kube.analysis_path(namespace, "checkout")
    resource = cluster_client.request("GET", path)
    cluster_client.request("PUT", f"{path}/status", body={**resource, "status": status})
    _resync(api_cluster, namespace)

    body = api.get(f"analyses/{namespace}/checkout/").json()

    assert body["status"] == status


def test_openapi_documents_the_new_spec_status_and_history_fields(live_server: Any) -> None:
    user = make_user()
    token = tokens.issue(user, now=timezone.now()).plaintext
    response = requests.get(
        f"{live_server.url}/api/v1/schema/",
        params={"format": "json"},
        headers={"Authorization": f"Token {token}"},
        timeout=30,
    )
    assert response.status_code == 200
    components = response.json()["components"]["schemas"]

    spec_schema = components["AnalysisSpec"]
    assert spec_schema["properties"]["failureWindow"]["maximum"] == 100
    metric = spec_schema["properties"]["metrics"]["items"]
    # query or sequential, one of them (a CEL rule): neither is required on its own.
    assert metric["required"] == ["name"]
    assert {"query", "sequential"} <= set(metric["properties"])
    assert set(metric["properties"]["maxIncrease"]["properties"]) == {"percent", "absolute"}
    assert set(metric["properties"]["baseline"]["properties"]) == {"offset", "beforeRollout"}
    assert metric["properties"]["minSamples"]["required"] == ["query", "min"]
    for part in ("maxIncrease", "baseline", "minSamples"):
        assert metric["properties"][part]["description"]

    status = components["AnalysisStatus"]["properties"]
    # drf-spectacular names the CRD's enum as a component of its own.
    window_items = status["window"]["items"]
    window_items = (
        components[window_items["$ref"].rsplit("/", 1)[1]]
        if "$ref" in window_items
        else window_items
    )
    assert window_items["enum"] == ["Pass", "Fail"]
    assert set(status["rollout"]["properties"]) == {"templateHash", "startedAt"}
    result = status["metricResults"]["items"]["properties"]
    assert {"baseline", "samples", "series"} <= set(result)

    history = components["MetricResult"]["properties"]
    assert {"baseline", "baselineText", "limit", "samples", "series"} <= set(history)
    assert history["limit"]["nullable"] is True
    assert history["series"]["additionalProperties"] == {"type": "string"}
