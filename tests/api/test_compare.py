"""compare over the REST API (docs/api.md#beyond-fixed-thresholds): the resource's shape
reaches the cluster (defaults applied by the API server) and the mirror, and a broken one is
refused with ``parse_spec``'s own field errors, nothing written.
"""

from __future__ import annotations

import pytest

from analyses.models import Analysis
from sentinel_core.spec import InvalidSpecError, parse_spec
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)

COMPARED = {
    "name": "latency-vs-old",
    "query": "sum by (pod_template_hash) (rate(x[1m]))",
    "compare": {"worse": "decrease", "maxEffect": {"absolute": 0.02}, "lookback": "10m"},
}


def test_create_with_compare_reaches_the_cluster_and_the_mirror(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    response = api.post(
        "analyses/",
        json={"namespace": namespace, "name": "checkout", "spec": spec(metrics=[COMPARED])},
    )

    assert response.status_code == 201, response.text
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    served = in_cluster["spec"]["metrics"][0]["compare"]
    assert served == {
        **COMPARED["compare"],  # type: ignore[dict-item]
        "by": "pod_template_hash",
        "confidence": 0.95,
        "minSamples": 10,
    }
    assert response.json()["spec"] == in_cluster["spec"]
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert row.metrics.get().compare == served


def test_compare_beside_max_value_is_refused_with_parse_specs_errors(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    raw_spec = spec(metrics=[{**COMPARED, "maxValue": 1, "compare": {"minSamples": 2}}])
    with pytest.raises(InvalidSpecError) as expected:
        parse_spec(raw_spec, strict=True)

    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw_spec}
    )

    assert response.status_code == 400, response.text
    assert response.json() == expected.value.by_field()
    assert set(response.json()) == {
        "spec.metrics[0].compare",
        "spec.metrics[0].compare.minSamples",
    }
    assert not Analysis.objects.exists()
    assert kubectl_json(api_cluster, "rolloutanalyses", "-n", namespace)["items"] == []
