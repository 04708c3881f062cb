"""docs/templates.md: the two template kinds as the API server serves them.

``RolloutAnalysisTemplate`` (namespaced, ``ratmpl``) and ``ClusterRolloutAnalysisTemplate``
(cluster-scoped, ``cratmpl``) are generated from the analysis's CRD (``crds/generate.py``), so
a template's metrics are refused by the same schema and CEL rules on the same field paths as an
analysis's: every metric case of the threshold, compare and sequential parity tests is sent as a
template of each kind to the real kube-apiserver and to devcluster. Placeholders pass where a
pattern would have refused them; printer columns, short names and ``kubectl explain`` answer.
"""

from __future__ import annotations

import contextlib
import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.paths import CRD_DIR, CRD_PATH
from tests.cluster import test_crd_compare_parity as compare
from tests.cluster import test_crd_sequential_parity as sequential
from tests.cluster import test_crd_thresholds_parity as thresholds

_BASE = f"/apis/{kube.GROUP}/{kube.VERSION}"
_TEMPLATE_FILES = ("rolloutanalysistemplate.yaml", "clusterrolloutanalysistemplate.yaml")


def _metric_cases() -> list[tuple[str, dict[str, Any], list[str]]]:
    """Every parity case that breaks only a metric's rules: (id, the metric, its paths)."""
    cases = []
    for label, metric, spec, paths in thresholds.CASES:
        if not spec:
            cases.append((f"threshold-{label}", thresholds._spec(metric, spec), paths))
    for label, metric, fields, paths in compare.CASES:
        cases.append((f"compare-{label}", compare._spec(metric, fields), paths))
    for label, metric, fields, spec, paths in sequential.CASES:
        if not spec:
            cases.append((f"sequential-{label}", sequential._spec(metric, fields, spec), paths))
    return [(label, raw["metrics"][0], paths) for label, raw, paths in cases]


_CASES = _metric_cases()


def _path(scope: str, namespace: str) -> str:
    if scope == "cluster":
        return f"{_BASE}/clusterrolloutanalysistemplates"
    return f"{_BASE}/namespaces/{namespace}/rolloutanalysistemplates"


def _template(scope: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    kind = {"cluster": "ClusterRolloutAnalysisTemplate", "namespaced": "RolloutAnalysisTemplate"}
    return {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": kind[scope],
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture
def cluster_templates(kube_client: kube.KubeClient) -> Iterator[list[str]]:
    """Names of cluster templates the test creates, deleted afterwards (they outlive namespaces)."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(kube.NotFound):
            kube_client.request("DELETE", f"{_path('cluster', '')}/{name}")


def test_committed_template_crds_are_the_generators_output(tmp_path: Path) -> None:
    generator = CRD_DIR / "generate.py"
    subprocess.run([sys.executable, str(generator), str(tmp_path)], check=True)
    for name in _TEMPLATE_FILES:
        assert (tmp_path / name).read_text() == (CRD_DIR / name).read_text(), (
            f"crds/{name} is stale: run python crds/generate.py"
        )


def test_a_templates_metric_schema_is_the_analysis_s_but_for_the_selector_patterns() -> None:
    analysis = yaml.safe_load(CRD_PATH.read_text())
    schema = analysis["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    expected = copy.deepcopy(schema["properties"]["spec"]["properties"]["metrics"]["items"])
    for field in ("bad", "total", "histogram"):
        expected["properties"]["sequential"]["properties"][field].pop("pattern")
    for name in _TEMPLATE_FILES:
        crd = yaml.safe_load((CRD_DIR / name).read_text())
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        items = copy.deepcopy(spec["properties"]["metrics"]["items"])
        for field in ("bad", "total", "histogram"):
            items["properties"]["sequential"]["properties"][field].pop("description")
            expected["properties"]["sequential"]["properties"][field].pop("description", None)
        assert items == expected, name
        # A template's interval and failureLimit leave the analysis's when absent: no default.
        assert "default" not in spec["properties"]["interval"]
        assert "default" not in spec["properties"]["failureLimit"]


@pytest.mark.parametrize("scope", ["cluster", "namespaced"])
@pytest.mark.parametrize(("label", "metric", "paths"), _CASES, ids=[c[0] for c in _CASES])
def test_a_templates_metrics_are_refused_on_the_analysis_s_paths(
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_templates: list[str],
    scope: str,
    label: str,
    metric: dict[str, Any],
    paths: list[str],
) -> None:
    name = f"{namespace}-{label}"[:63].rstrip("-")
    cluster_templates.append(name)
    body = _template(scope, name, {"metrics": [metric]})
    if label == "sequential-not-a-selector":
        # The one pattern a template drops: its selectors may hold placeholders, checked once
        # they are resolved (docs/templates.md#validation).
        kube_client.request("POST", _path(scope, namespace), body=body)
        return
    with pytest.raises(kube.Invalid) as invalid:
        kube_client.request("POST", _path(scope, namespace), body=body)
    server = sorted(
        str(cause.get("field", ""))
        for cause in invalid.value.causes
        if cause.get("field") not in (None, "<nil>")
    )
    assert server == sorted(paths), invalid.value.causes
    with pytest.raises(kube.NotFound):
        kube_client.request("GET", f"{_path(scope, namespace)}/{name}")


_GOLDEN = {
    "description": "Error rate of a service's HTTP requests.",
    "args": [
        {"name": "service", "description": "The service label."},
        {"name": "window", "default": "5m"},
    ],
    "interval": "1m",
    "failureLimit": 2,
    "metrics": [
        {
            "name": "error-rate",
            "query": 'sum(rate(http_requests_total{service="{{ args.service }}",code=~"5.."}'
            '[{{ args.window }}])) / sum(rate(http_requests_total{service="{{ args.service }}"}'
            "[{{ args.window }}]))",
            "maxValue": 0.01,
        },
        {
            "name": "errors-vs-old",
            "sequential": {
                "bad": 'http_requests_total{namespace="{{ namespace }}",code=~"5.."}',
                "total": 'http_requests_total{namespace="{{ namespace }}"}',
                "maxIncrease": {"percent": 10},
            },
        },
    ],
}


@pytest.mark.parametrize("scope", ["cluster", "namespaced"])
def test_templates_with_placeholders_are_stored_and_listed(
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_templates: list[str],
    scope: str,
) -> None:
    name = f"golden-{namespace}"
    cluster_templates.append(name)
    created = kube_client.request(
        "POST", _path(scope, namespace), body=_template(scope, name, copy.deepcopy(_GOLDEN))
    )
    # The metrics' defaults are the analysis's (minEvents here); the placeholders are kept.
    stored = created["spec"]["metrics"]
    assert stored[0] == _GOLDEN["metrics"][0]
    assert stored[1]["sequential"] == {**_GOLDEN["metrics"][1]["sequential"], "minEvents": 100}
    assert created["spec"]["interval"] == "1m"
    assert "dryRun" not in created["spec"]
    short = {"cluster": "cratmpl", "namespaced": "ratmpl"}[scope]
    listed = kube_cluster.kubectl("get", short, name, "-n", namespace).stdout.splitlines()
    assert listed[0].split() == ["NAME", "INTERVAL", "LIMIT", "DESCRIPTION", "AGE"]
    assert listed[1].split()[:4] == [name, "1m", "2", "Error"]
    assert "Error rate of a service's HTTP requests." in listed[1]


@pytest.mark.parametrize(
    ("label", "spec", "paths"),
    [
        ("window-under-limit", {"failureWindow": 2, "failureLimit": 3}, ["spec.failureWindow"]),
        ("interval-words", {"interval": "soon"}, ["spec.interval"]),
        ("arg-name-dashes", {"args": [{"name": "my-service"}]}, ["spec.args[0].name"]),
        ("arg-twice", {"args": [{"name": "a"}, {"name": "a"}]}, ["spec.args[1]"]),
        ("no-metrics", {"metrics": None}, ["spec.metrics"]),
        ("metric-twice", {"metrics": [_GOLDEN["metrics"][0]] * 2}, ["spec.metrics[1]"]),
    ],
)
def test_a_templates_own_fields_are_validated(
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_templates: list[str],
    label: str,
    spec: dict[str, Any],
    paths: list[str],
) -> None:
    name = f"{namespace}-{label}"
    cluster_templates.append(name)
    body = copy.deepcopy(_GOLDEN)
    for key, value in spec.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    with pytest.raises(kube.Invalid) as invalid:
        kube_client.request("POST", _path("cluster", ""), body=_template("cluster", name, body))
    server = sorted(
        str(cause.get("field", ""))
        for cause in invalid.value.causes
        if cause.get("field") not in (None, "<nil>")
    )
    assert server == paths, invalid.value.causes


_EXPLAINED = [
    "spec.args",
    "spec.args.name",
    "spec.args.default",
    "spec.metrics",
    "spec.metrics.sequential.bad",
    "spec.interval",
    "spec.failureLimit",
    "spec.failureWindow",
    "spec.falsePauseRate",
]


@pytest.mark.parametrize("kind", ["rolloutanalysistemplate", "clusterrolloutanalysistemplate"])
def test_kubectl_explain_describes_a_templates_fields(kube_cluster: Cluster, kind: str) -> None:
    top = kube_cluster.kubectl("explain", kind).stdout
    assert "written once for many" in top
    for field in _EXPLAINED:
        result = kube_cluster.kubectl("explain", f"{kind}.{field}")
        description = result.stdout.split("DESCRIPTION:", 1)[1].strip()
        assert len(description) > 20, (field, result.stdout)


@pytest.mark.parametrize(
    "field",
    [
        "spec.templates",
        "spec.templates.clusterScope",
        "spec.args",
        "spec.args.value",
        "status.templates",
    ],
)
def test_kubectl_explain_describes_an_analysis_s_template_fields(
    kube_cluster: Cluster, field: str
) -> None:
    result = kube_cluster.kubectl("explain", f"rolloutanalysis.{field}")
    description = result.stdout.split("DESCRIPTION:", 1)[1].strip()
    assert len(description) > 20, (field, result.stdout)


def test_an_analysis_needs_metrics_or_templates(
    kube_client: kube.KubeClient, namespace: str
) -> None:
    body = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "bare"},
        "spec": {"target": {"name": "checkout"}},
    }
    with pytest.raises(kube.Invalid) as invalid:
        kube_client.request("POST", kube.analyses_path(namespace), body=body)
    assert [(c.get("field"), c.get("reason")) for c in invalid.value.causes] == [
        ("spec.metrics", "FieldValueRequired")
    ]
    body["spec"]["templates"] = [{"name": "golden-signals", "clusterScope": True}]
    created = kube_client.request("POST", kube.analyses_path(namespace), body=body)
    assert created["spec"]["templates"] == [{"name": "golden-signals", "clusterScope": True}]
    body["metadata"]["name"] = "defaulted"
    body["spec"]["templates"] = [{"name": "latency"}]
    created = kube_client.request("POST", kube.analyses_path(namespace), body=body)
    assert created["spec"]["templates"] == [{"name": "latency", "clusterScope": False}]
