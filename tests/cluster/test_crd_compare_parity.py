"""docs/analysis.md: the CRD and ``parse_spec`` refuse the same ``compare`` specs on the same paths.

As tests/cluster/test_crd_thresholds_parity.py does for §3.1: each invalid spec breaks one rule
of ``compare`` (schema or CEL); the real kube-apiserver and devcluster (which evaluates the same
CEL rules) answer 422 with causes, and ``parse_spec`` names exactly the same field paths, the
CEL messages word for word. ``kubectl explain`` describes every new field on both clusters.
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

_COMPARE: dict[str, Any] = {
    "name": "latency-vs-old",
    "query": "up",
    "compare": {"worse": "increase", "maxEffect": {"percent": 10}, "lookback": "5m"},
}
_P = "spec.metrics[0]"

# (id, metric fields replacing _COMPARE's (None deletes), compare fields likewise, paths)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("with-max-value", {"maxValue": 1}, {}, [f"{_P}.compare"]),
    (
        "with-max-increase",
        {"maxIncrease": {"percent": 5}, "baseline": {"offset": "1h"}},
        {},
        [f"{_P}.compare"],
    ),
    ("by-dashes", {}, {"by": "pod-template-hash"}, [f"{_P}.compare.by"]),
    ("worse-up", {}, {"worse": "up"}, [f"{_P}.compare.worse"]),
    ("effect-both", {}, {"maxEffect": {"percent": 1, "absolute": 1}}, [f"{_P}.compare.maxEffect"]),
    ("effect-empty", {}, {"maxEffect": {}}, [f"{_P}.compare.maxEffect"]),
    ("effect-negative", {}, {"maxEffect": {"absolute": -1}}, [f"{_P}.compare.maxEffect.absolute"]),
    ("confidence-half", {}, {"confidence": 0.5}, [f"{_P}.compare.confidence"]),
    ("confidence-one", {}, {"confidence": 1}, [f"{_P}.compare.confidence"]),
    ("min-samples-two", {}, {"minSamples": 2}, [f"{_P}.compare.minSamples"]),
    ("lookback-zero", {}, {"lookback": "0m"}, [f"{_P}.compare.lookback"]),
    ("lookback-words", {}, {"lookback": "a while"}, [f"{_P}.compare.lookback"]),
]


def _spec(metric: dict[str, Any], compare: dict[str, Any]) -> dict[str, Any]:
    item = copy.deepcopy(_COMPARE)
    for fields, target in ((metric, item), (compare, item["compare"])):
        for key, value in fields.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    return {"target": {"name": "checkout"}, "metrics": [item]}


@pytest.mark.parametrize(("label", "metric", "compare", "paths"), CASES, ids=[c[0] for c in CASES])
def test_parse_spec_names_the_paths(
    label: str, metric: dict[str, Any], compare: dict[str, Any], paths: list[str]
) -> None:
    assert _parse_spec_fields(_spec(metric, compare)) == sorted(paths)


@pytest.mark.parametrize(("label", "metric", "compare", "paths"), CASES, ids=[c[0] for c in CASES])
def test_api_server_and_parse_spec_agree(
    kube_client: kube.KubeClient,
    namespace: str,
    label: str,
    metric: dict[str, Any],
    compare: dict[str, Any],
    paths: list[str],
) -> None:
    server_agrees(kube_client, namespace, label, _spec(metric, compare))


def test_defaults_are_the_same_on_both(kube_client: kube.KubeClient, namespace: str) -> None:
    raw = {"target": {"name": "checkout"}, "metrics": [{"name": "m", "query": "up", "compare": {}}]}
    created = kube_client.request(
        "POST", kube.analyses_path(namespace), body=rollout_analysis("ok", namespace, raw)
    )
    served = created["spec"]["metrics"][0]["compare"]
    ours = parse_spec(raw).metrics[0].to_dict()["compare"]
    # `by` has no CRD default: it follows target.kind, which parse_spec knows
    # (docs/status.md#pausing-each-kind); every other default is the API server's too.
    assert ours.pop("by") == "pod_template_hash"
    assert served == ours
    assert served == {
        "worse": "increase",
        "confidence": 0.95,
        "lookback": "5m",
        "minSamples": 10,
    }


_EXPLAINED = [
    "spec.metrics.compare",
    "spec.metrics.compare.by",
    "spec.metrics.compare.worse",
    "spec.metrics.compare.maxEffect.percent",
    "spec.metrics.compare.maxEffect.absolute",
    "spec.metrics.compare.confidence",
    "spec.metrics.compare.lookback",
    "spec.metrics.compare.minSamples",
    "status.metricResults.comparison",
    "status.metricResults.comparison.pValue",
    "status.metricResults.comparison.oldHashes",
]


def test_kubectl_explain_describes_every_new_field(kube_cluster: Cluster) -> None:
    for field in _EXPLAINED:
        result = kube_cluster.kubectl("explain", f"rolloutanalysis.{field}")
        description = result.stdout.split("DESCRIPTION:", 1)[1].strip()
        assert len(description) > 20, (field, result.stdout)
