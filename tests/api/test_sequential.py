"""sequential over the REST API (docs/analysis.md): the resource's shape reaches the cluster
(defaults applied by the API server) and back, a broken one is refused with ``parse_spec``'s own
field errors, nothing written; the OpenAPI document describes the new fields.
"""

from __future__ import annotations

import pytest

from analyses.models import Analysis
from sentinel_core.spec import InvalidSpecError, parse_spec
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)

SEQUENTIAL = {
    "name": "slow-vs-old",
    "sequential": {
        "histogram": 'http_request_duration_seconds{app="checkout"}',
        "slowerThan": 0.25,
        "maxIncrease": {"percent": 10},
    },
}


def test_create_with_sequential_reaches_the_cluster_and_comes_back(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    raw = {**spec(metrics=[SEQUENTIAL]), "falsePauseRate": 0.02}
    response = api.post("analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw})

    assert response.status_code == 201, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["spec"]["falsePauseRate"] == 0.02
    assert in_cluster["spec"]["metrics"][0]["sequential"] == {
        **SEQUENTIAL["sequential"],  # type: ignore[dict-item]
        "minEvents": 100,
        "by": "pod_template_hash",
    }
    assert response.json()["spec"] == in_cluster["spec"]


def test_sequential_beside_a_query_is_refused_with_parse_specs_errors(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    raw = {**spec(metrics=[{**SEQUENTIAL, "query": "up"}]), "falsePauseRate": 0}
    with pytest.raises(InvalidSpecError) as expected:
        parse_spec(raw, strict=True)

    response = api.post("analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw})

    assert response.status_code == 400, response.text
    assert response.json() == expected.value.by_field()
    assert set(response.json()) == {"spec.metrics[0].sequential", "spec.falsePauseRate"}
    assert not Analysis.objects.exists()
    assert kubectl_json(api_cluster, "rolloutanalyses", "-n", namespace)["items"] == []


def test_the_openapi_document_describes_sequential_and_the_budget(api: Api) -> None:
    document = api.get("schema/", params={"format": "json"}).json()
    analysis_spec = document["components"]["schemas"]["AnalysisSpec"]["properties"]
    assert "falsePauseRate" in analysis_spec
    metric = analysis_spec["metrics"]["items"]["properties"]
    assert set(metric["sequential"]["properties"]) == {
        "bad",
        "total",
        "histogram",
        "slowerThan",
        "maxIncrease",
        "minEvents",
        "by",
    }
    status = document["components"]["schemas"]["AnalysisStatus"]["properties"]
    state = status["metricResults"]["items"]["properties"]["sequential"]["properties"]
    assert {"evidence", "needed", "ratio", "since", "through"} <= set(state)
