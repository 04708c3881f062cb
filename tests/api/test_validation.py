"""Invalid input: 400 with field errors under their paths, nothing in the cluster or database.

The rules are ``sentinel_core.spec.parse_spec``'s (the CRD's); these cases check that the
API applies them, reports every error at once under the field path, and stops before the
cluster (docs/resource.md#validation).
"""

from __future__ import annotations

from typing import Any

import pytest

from analyses.models import Analysis
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api

pytestmark = pytest.mark.django_db(transaction=True)

_METRIC = {"name": "m", "query": "up", "maxValue": 1}

SPEC_CASES: list[tuple[str, Any, set[str]]] = [
    ("not an object", ["target"], {"spec"}),
    ("no target", {"metrics": [_METRIC]}, {"spec.target"}),
    ("target kind", {**spec(), "target": {"kind": "Pod", "name": "x"}}, {"spec.target.kind"}),
    ("target name missing", {**spec(), "target": {"kind": "Deployment"}}, {"spec.target.name"}),
    ("target name invalid", spec("Not_A_Name"), {"spec.target.name"}),
    # There is no way to name another namespace: the field does not exist.
    (
        "target namespace",
        {**spec(), "target": {"name": "x", "namespace": "other"}},
        {"spec.target.namespace"},
    ),
    ("no metrics", {"target": {"name": "x"}}, {"spec.metrics"}),
    ("empty metrics", spec(metrics=[]), {"spec.metrics"}),
    ("metric name", spec(metrics=[{**_METRIC, "name": "P99"}]), {"spec.metrics[0].name"}),
    ("duplicate metric", spec(metrics=[_METRIC, dict(_METRIC)]), {"spec.metrics[1].name"}),
    ("empty query", spec(metrics=[{**_METRIC, "query": ""}]), {"spec.metrics[0].query"}),
    (
        "maxValue not a number",
        spec(metrics=[{**_METRIC, "maxValue": "0.25"}]),
        {"spec.metrics[0].maxValue"},
    ),
    (
        "metric field typo",
        spec(metrics=[{"name": "m", "query": "up", "maxvalue": 1}]),
        {"spec.metrics[0].maxValue", "spec.metrics[0].maxvalue"},
    ),
    ("interval too short", spec(interval="3s"), {"spec.interval"}),
    ("interval not a duration", spec(interval="soon"), {"spec.interval"}),
    ("failureLimit zero", spec(failureLimit=0), {"spec.failureLimit"}),
    ("failureLimit fraction", spec(failureLimit=1.5), {"spec.failureLimit"}),
    ("dryRun not a bool", spec(dryRun="yes"), {"spec.dryRun"}),
    ("unknown field", spec(paused=True), {"spec.paused"}),
    (
        "several at once",
        spec(interval="1s", failureLimit=-1, metrics=[{"name": "m"}]),
        {
            "spec.interval",
            "spec.failureLimit",
            "spec.metrics[0].query",
            "spec.metrics[0].maxValue",
        },
    ),
]


@pytest.mark.parametrize(
    ("raw_spec", "fields"), [case[1:] for case in SPEC_CASES], ids=[c[0] for c in SPEC_CASES]
)
def test_invalid_spec_on_create(
    api: Api, namespace: str, api_cluster: Cluster, raw_spec: Any, fields: set[str]
) -> None:
    response = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": raw_spec}
    )

    assert response.status_code == 400, response.text
    errors = response.json()
    assert set(errors) == fields
    assert all(isinstance(messages, list) and messages for messages in errors.values())
    assert not Analysis.objects.exists()
    assert kubectl_json(api_cluster, "rolloutanalyses", "-n", namespace)["items"] == []


def test_invalid_spec_on_update_changes_nothing(
    api: Api, namespace: str, api_cluster: Cluster
) -> None:
    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
    ).json()

    put = api.put(f"analyses/{namespace}/checkout/", json={"spec": spec(failureLimit=0)})
    patch = api.patch(
        f"analyses/{namespace}/checkout/",
        json={"spec": {"metrics": [{"name": "x", "query": "up"}]}},
    )

    assert put.status_code == 400 and set(put.json()) == {"spec.failureLimit"}
    assert patch.status_code == 400 and set(patch.json()) == {"spec.metrics[0].maxValue"}
    in_cluster = kubectl_json(api_cluster, "rolloutanalysis", "checkout", "-n", namespace)
    assert in_cluster["metadata"]["resourceVersion"] == created["resourceVersion"]
    row = Analysis.objects.get(namespace=namespace, name="checkout")
    assert row.resource_version == created["resourceVersion"]
    assert row.spec == created["spec"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"name": "checkout", "spec": spec()}, {"namespace"}),
        ({"namespace": "x"}, {"name", "spec"}),
        ({"namespace": "Bad_NS", "name": "checkout", "spec": spec()}, {"namespace"}),
        ({"namespace": "ok", "name": "UPPER", "spec": spec()}, {"name"}),
        # Plain-field and spec errors come back together.
        ({"namespace": "ok", "name": "-x", "spec": spec(interval="x")}, {"name", "spec.interval"}),
    ],
)
def test_invalid_names(api: Api, body: dict[str, Any], fields: set[str]) -> None:
    response = api.post("analyses/", json=body)
    assert response.status_code == 400
    assert set(response.json()) == fields
    assert not Analysis.objects.exists()


def test_body_that_is_not_json(api: Api) -> None:
    response = api.post("analyses/", data="{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    response = api.post("analyses/", json=["a", "list"])
    assert response.status_code == 400
    assert "non_field_errors" in response.json()
