"""docs/analysis.md: the CRD and ``parse_spec`` refuse the same ``sequential`` specs alike.

As tests/cluster/test_crd_compare_parity.py does for ``compare``: each invalid spec breaks one
rule of ``sequential`` or ``falsePauseRate`` (schema or CEL); the real kube-apiserver and
devcluster (which evaluates the same CEL rules) answer 422 with causes, and ``parse_spec`` names
exactly the same field paths, the CEL messages word for word. The defaults are the same on
both, and ``kubectl explain`` describes every new field.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sentinel_cluster import kube
from sentinel_core.spec import parse_spec
from testkit.clusters import Cluster
from testkit.manifests import rollout_analysis
from tests.cluster.test_crd_thresholds_parity import _parse_spec_fields, server_agrees

_SEQUENTIAL: dict[str, Any] = {
    "name": "errors-vs-old",
    "sequential": {
        "bad": 'http_requests_total{app="checkout", code=~"5.."}',
        "total": 'http_requests_total{app="checkout"}',
        "maxIncrease": {"percent": 10},
    },
}
_P = "spec.metrics[0]"

# (id, metric fields replacing _SEQUENTIAL's (None deletes), sequential's likewise, spec's, paths)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], list[str]]] = [
    ("neither", {"sequential": None}, {}, {}, [f"{_P}.query", f"{_P}.maxValue"]),
    ("with-query", {"query": "up"}, {}, {}, [f"{_P}.sequential"]),
    ("with-max-value", {"maxValue": 1}, {}, {}, [f"{_P}.sequential"]),
    ("with-compare", {"compare": {}}, {}, {}, [f"{_P}.sequential"]),
    ("bad-alone", {}, {"total": None}, {}, [f"{_P}.sequential"]),
    (
        "both-forms",
        {},
        {"histogram": "http_request_duration_seconds", "slowerThan": 0.25},
        {},
        [f"{_P}.sequential"],
    ),
    (
        "histogram-alone",
        {},
        {"bad": None, "total": None, "histogram": "h"},
        {},
        [f"{_P}.sequential"],
    ),
    ("not-a-selector", {}, {"bad": "rate(errors[1m])"}, {}, [f"{_P}.sequential.bad"]),
    ("increase-empty", {}, {"maxIncrease": {}}, {}, [f"{_P}.sequential.maxIncrease.percent"]),
    (
        "increase-negative",
        {},
        {"maxIncrease": {"percent": -1}},
        {},
        [f"{_P}.sequential.maxIncrease.percent"],
    ),
    ("min-events-zero", {}, {"minEvents": 0}, {}, [f"{_P}.sequential.minEvents"]),
    ("by-dashes", {}, {"by": "pod-template-hash"}, {}, [f"{_P}.sequential.by"]),
    ("rate-zero", {}, {}, {"falsePauseRate": 0}, ["spec.falsePauseRate"]),
    ("rate-high", {}, {}, {"falsePauseRate": 0.3}, ["spec.falsePauseRate"]),
]


def _spec(metric: dict[str, Any], sequential: dict[str, Any], spec: dict[str, Any]) -> Any:
    item = copy.deepcopy(_SEQUENTIAL)
    for key, value in metric.items():
        if value is None:
            item.pop(key, None)
        else:
            item[key] = value
    for key, value in sequential.items():
        if "sequential" not in item:
            break
        if value is None:
            item["sequential"].pop(key, None)
        else:
            item["sequential"][key] = value
    return {"target": {"name": "checkout"}, "metrics": [item], **spec}


_IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("label", "metric", "sequential", "spec", "paths"), CASES, ids=_IDS)
def test_parse_spec_names_the_paths(
    label: str,
    metric: dict[str, Any],
    sequential: dict[str, Any],
    spec: dict[str, Any],
    paths: list[str],
) -> None:
    assert _parse_spec_fields(_spec(metric, sequential, spec)) == sorted(paths)


@pytest.mark.parametrize(("label", "metric", "sequential", "spec", "paths"), CASES, ids=_IDS)
def test_api_server_and_parse_spec_agree(
    kube_client: kube.KubeClient,
    namespace: str,
    label: str,
    metric: dict[str, Any],
    sequential: dict[str, Any],
    spec: dict[str, Any],
    paths: list[str],
) -> None:
    server_agrees(kube_client, namespace, label, _spec(metric, sequential, spec))


def test_defaults_are_the_same_on_both(kube_client: kube.KubeClient, namespace: str) -> None:
    slow = {
        "name": "slow-vs-old",
        "sequential": {"histogram": "http_request_duration_seconds", "slowerThan": 0.25},
    }
    raw = {"target": {"name": "checkout"}, "metrics": [_SEQUENTIAL, slow], "falsePauseRate": 0.01}
    created = kube_client.request(
        "POST", kube.analyses_path(namespace), body=rollout_analysis("ok", namespace, raw)
    )
    parsed = parse_spec(raw, strict=True).to_dict()
    # `by` has no CRD default: it follows target.kind, which parse_spec knows
    # (docs/resource.md#new-pods-against-old-pods); every other default is the API server's too.
    for metric in parsed["metrics"]:
        assert metric["sequential"].pop("by") == "pod_template_hash"
    assert created["spec"]["metrics"] == parsed["metrics"]
    assert created["spec"]["falsePauseRate"] == parsed["falsePauseRate"] == 0.01
    assert created["spec"]["metrics"][1]["sequential"] == {
        "histogram": "http_request_duration_seconds",
        "slowerThan": 0.25,
        "minEvents": 100,
    }


_EXPLAINED = [
    "spec.falsePauseRate",
    "spec.metrics.sequential",
    "spec.metrics.sequential.bad",
    "spec.metrics.sequential.total",
    "spec.metrics.sequential.histogram",
    "spec.metrics.sequential.slowerThan",
    "spec.metrics.sequential.maxIncrease.percent",
    "spec.metrics.sequential.minEvents",
    "spec.metrics.sequential.by",
    "status.metricResults.sequential",
    "status.metricResults.sequential.evidence",
    "status.metricResults.sequential.needed",
    "status.metricResults.sequential.through",
]


def test_kubectl_explain_describes_every_new_field(kube_cluster: Cluster) -> None:
    for field in _EXPLAINED:
        result = kube_cluster.kubectl("explain", f"rolloutanalysis.{field}")
        description = result.stdout.split("DESCRIPTION:", 1)[1].strip()
        assert len(description) > 20, (field, result.stdout)
