"""docs/resource.md: the CRD and ``parse_spec`` refuse the same specs with the same field paths.

Each invalid spec below breaks one rule of maxIncrease, baseline, minSamples or failureWindow.
The real kube-apiserver (its schema and CEL ``x-kubernetes-validations``) answers 422 with
causes; ``parse_spec`` must name exactly the same field paths, as many times. devcluster
evaluates the same CEL rules (``devcluster/cel.py``), so every case runs on both clusters, as
does ``kubectl explain``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from sentinel_core.spec import InvalidSpecError, parse_spec
from testkit.clusters import Cluster
from testkit.manifests import rollout_analysis
from testkit.paths import CRD_PATH

_RELATIVE: dict[str, Any] = {
    "name": "p99",
    "query": "up",
    "maxIncrease": {"percent": 20},
    "baseline": {"beforeRollout": True},
    "minSamples": {"query": "sum(up)", "min": 10},
}

# (id, metric fields replacing _RELATIVE's (None deletes), spec fields, expected field paths)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("no-bound", {"maxIncrease": None, "baseline": None}, {}, ["spec.metrics[0].maxValue"]),
    (
        "increase-both",
        {"maxIncrease": {"percent": 1, "absolute": 1}},
        {},
        ["spec.metrics[0].maxIncrease"],
    ),
    ("increase-empty", {"maxIncrease": {}}, {}, ["spec.metrics[0].maxIncrease"]),
    (
        "increase-negative",
        {"maxIncrease": {"absolute": -1}},
        {},
        ["spec.metrics[0].maxIncrease.absolute"],
    ),
    ("no-baseline", {"baseline": None}, {}, ["spec.metrics[0].baseline"]),
    (
        "baseline-without-increase",
        {"maxIncrease": None, "maxValue": 1},
        {},
        ["spec.metrics[0].baseline"],
    ),
    (
        "baseline-both",
        {"baseline": {"offset": "1h", "beforeRollout": True}},
        {},
        ["spec.metrics[0].baseline"],
    ),
    (
        "baseline-before-false",
        {"baseline": {"beforeRollout": False}},
        {},
        ["spec.metrics[0].baseline"],
    ),
    ("offset-zero", {"baseline": {"offset": "0s"}}, {}, ["spec.metrics[0].baseline.offset"]),
    ("offset-words", {"baseline": {"offset": "soon"}}, {}, ["spec.metrics[0].baseline.offset"]),
    (
        "guard-without-min",
        {"minSamples": {"query": "sum(up)"}},
        {},
        ["spec.metrics[0].minSamples.min"],
    ),
    (
        "guard-negative-empty",
        {"minSamples": {"query": "", "min": -1}},
        {},
        ["spec.metrics[0].minSamples.query", "spec.metrics[0].minSamples.min"],
    ),
    ("window-under-limit", {}, {"failureWindow": 2, "failureLimit": 3}, ["spec.failureWindow"]),
    ("window-under-default-limit", {}, {"failureWindow": 2}, ["spec.failureWindow"]),
    (
        "window-zero",
        {},
        {"failureWindow": 0, "failureLimit": 1},
        ["spec.failureWindow"],
    ),
    ("window-too-long", {}, {"failureWindow": 101}, ["spec.failureWindow"]),
]


def _spec(metric: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    item = copy.deepcopy(_RELATIVE)
    for key, value in metric.items():
        if value is None:
            item.pop(key, None)
        else:
            item[key] = value
    return {"target": {"name": "checkout"}, "metrics": [item], **spec}


def _parse_spec_errors(raw: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        parse_spec(raw)
    except InvalidSpecError as exc:
        return [(error.field, error.message) for error in exc.errors]
    return []


def _parse_spec_fields(raw: dict[str, Any]) -> list[str]:
    return sorted(field for field, _ in _parse_spec_errors(raw))


def _cel_messages(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", ()):
            found.add(rule["message"])
        for value in node.values():
            found |= _cel_messages(value)
    elif isinstance(node, list):
        for value in node:
            found |= _cel_messages(value)
    return found


_CEL_MESSAGES = _cel_messages(yaml.safe_load(CRD_PATH.read_text()))


def server_agrees(
    kube_client: kube.KubeClient, namespace: str, label: str, raw: dict[str, Any]
) -> list[str]:
    """Assert that the API server refuses ``raw`` on parse_spec's paths, CEL messages alike.

    Return the paths the server named.
    """
    body = rollout_analysis(label, namespace, raw)
    with pytest.raises(kube.Invalid) as invalid:
        kube_client.request("POST", kube.analyses_path(namespace), body=body)
    # After a type or required-value error the API server skips the CEL rules and adds a
    # cause without a field saying so; parse_spec has no such note.
    server = sorted(
        str(cause.get("field", ""))
        for cause in invalid.value.causes
        if cause.get("field") not in (None, "<nil>")
    )
    assert server == _parse_spec_fields(raw), invalid.value.causes
    # The CEL rules' messages are parse_spec's, word for word.
    ours = {f"{field}: {message}" for field, message in _parse_spec_errors(raw)}
    for cause in invalid.value.causes:
        for message in _CEL_MESSAGES:
            if message in str(cause.get("message", "")):
                assert f"{cause['field']}: {message}" in ours, (cause, ours)
    return server


@pytest.mark.parametrize(("label", "metric", "spec", "paths"), CASES, ids=[c[0] for c in CASES])
def test_parse_spec_names_the_paths(
    label: str, metric: dict[str, Any], spec: dict[str, Any], paths: list[str]
) -> None:
    assert set(_parse_spec_fields(_spec(metric, spec))) == set(paths)


@pytest.mark.parametrize(("label", "metric", "spec", "paths"), CASES, ids=[c[0] for c in CASES])
def test_api_server_and_parse_spec_agree(
    kube_client: kube.KubeClient,
    namespace: str,
    label: str,
    metric: dict[str, Any],
    spec: dict[str, Any],
    paths: list[str],
) -> None:
    server = server_agrees(kube_client, namespace, label, _spec(metric, spec))
    assert set(server) == set(paths)


def test_a_relative_spec_is_accepted_by_both(kube_client: kube.KubeClient, namespace: str) -> None:
    raw = _spec({"maxValue": 0.5}, {"failureWindow": 5, "failureLimit": 2})
    raw["metrics"].append(
        {
            "name": "errors",
            "query": "up",
            "maxIncrease": {"absolute": 0.1},
            "baseline": {"offset": "1h30m"},
        }
    )
    parse_spec(raw, strict=True)
    created = kube_client.request(
        "POST", kube.analyses_path(namespace), body=rollout_analysis("ok", namespace, raw)
    )
    assert created["spec"]["metrics"][1]["baseline"] == {"offset": "1h30m"}
    assert created["spec"]["failureWindow"] == 5


_EXPLAINED = [
    "spec.failureWindow",
    "spec.metrics.maxIncrease.percent",
    "spec.metrics.maxIncrease.absolute",
    "spec.metrics.baseline.offset",
    "spec.metrics.baseline.beforeRollout",
    "spec.metrics.minSamples.query",
    "spec.metrics.minSamples.min",
    "status.window",
    "status.rollout.templateHash",
    "status.rollout.startedAt",
    "status.metricResults.baseline",
    "status.metricResults.samples",
    "status.metricResults.series",
]


def test_kubectl_explain_describes_every_new_field(kube_cluster: Cluster) -> None:
    for field in _EXPLAINED:
        result = kube_cluster.kubectl("explain", f"rolloutanalysis.{field}")
        description = result.stdout.split("DESCRIPTION:", 1)[1].strip()
        assert len(description) > 20, (field, result.stdout)
