"""Size limits against abuse: the REST API's 400 and the API server's 422 agree.

The limits are those of docs/resource.md#size-limits.

At most 20 metrics, queries of at most 4,096 characters, metric names of at most 63. The REST
API applies them through ``parse_spec`` before anything reaches the cluster; the API server
applies the CRD's ``maxItems`` / ``maxLength``. Each case is sent both ways and must be refused
on the same fields; the largest spec within the limits is accepted both ways.
"""

from __future__ import annotations

from typing import Any

import pytest

from analyses.models import Analysis
from sentinel_cluster import kube
from testkit.manifests import analysis_spec as spec
from testkit.manifests import rollout_analysis
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)


def _metric(index: int, **fields: Any) -> dict[str, Any]:
    return {"name": f"m{index}", "query": "up", "maxValue": 1, **fields}


LIMIT_CASES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("21 metrics", spec(metrics=[_metric(i) for i in range(21)]), {"spec.metrics"}),
    ("query of 4097", spec(metrics=[_metric(0, query="u" * 4097)]), {"spec.metrics[0].query"}),
    (
        "query of 4097 non-ASCII characters",
        # Characters, not bytes: 4,097 of them are 8,194 bytes of UTF-8.
        spec(metrics=[_metric(0, query="é" * 4097)]),
        {"spec.metrics[0].query"},
    ),
    ("name of 64", spec(metrics=[_metric(0, name="m" * 64)]), {"spec.metrics[0].name"}),
    (
        "all at once",
        spec(metrics=[_metric(i, query="u" * 5000) for i in range(21)]),
        {"spec.metrics", *(f"spec.metrics[{i}].query" for i in range(21))},
    ),
]


def _api_server_fields(
    client: kube.KubeClient, namespace: str, raw_spec: dict[str, Any]
) -> set[str]:
    """Create the resource directly in the API server; return the fields it refuses."""
    body = rollout_analysis("checkout", namespace, raw_spec)
    with pytest.raises(kube.Invalid) as refused:
        client.request("POST", kube.analyses_path(namespace), body=body)
    assert refused.value.status == 422
    return {str(cause.get("field")) for cause in refused.value.causes}


@pytest.mark.parametrize(
    ("raw_spec", "fields"), [case[1:] for case in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
def test_limits_refused_alike_by_api_and_api_server(
    api: Api,
    namespace: str,
    cluster_client: kube.KubeClient,
    raw_spec: dict[str, Any],
    fields: set[str],
) -> None:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw_spec}
    )

    assert response.status_code == 400, response.text
    assert set(response.json()) == fields
    assert not Analysis.objects.exists()
    assert _api_server_fields(cluster_client, namespace, raw_spec) == fields
    items = cluster_client.request("GET", kube.analyses_path(namespace))["items"]
    assert items == []


def test_largest_spec_within_limits_is_accepted(
    api: Api, namespace: str, cluster_client: kube.KubeClient
) -> None:
    largest = spec(
        metrics=[_metric(i, name=f"{i:02d}" + "m" * 61, query="u" * 4096) for i in range(20)]
    )

    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": largest}
    )

    assert response.status_code == 201, response.text
    stored = cluster_client.request("GET", kube.analysis_path(namespace, "checkout"))
    assert len(stored["spec"]["metrics"]) == 20
    assert Analysis.objects.get(namespace=namespace, name="checkout").metrics.count() == 20
