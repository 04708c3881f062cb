"""The CRD as deploy/ installs it rejects invalid analyses (docs/resource.md#validation).

A few representative cases through ``kubectl apply`` against the cluster the ``ha`` overlay was
applied to: the API server answers 422 ``Invalid`` naming the field path, and nothing is
stored. The full rule-by-rule set is tests/devcluster/test_kubectl_validation.py; this checks
that the CRD shipped inside the overlay is the validating one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from testkit.manifests import analysis_manifest, to_yaml
from tests.deploy.kustomize import Deployed

_GOOD_METRIC = {"name": "p99", "query": "up", "maxValue": 0.25}

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("failure-limit-zero", {"failureLimit": 0}, ["spec.failureLimit"]),
    ("interval-not-a-duration", {"interval": "soon"}, ["spec.interval"]),
    ("no-metrics", {"metrics": []}, ["spec.metrics"]),
    (
        "duplicate-metric-and-bad-kind",
        {"metrics": [_GOOD_METRIC, _GOOD_METRIC], "target": {"kind": "ReplicaSet", "name": "x"}},
        ["spec.metrics[1]", "spec.target.kind"],
    ),
]


@pytest.mark.parametrize(("label", "change", "paths"), CASES, ids=[c[0] for c in CASES])
def test_invalid_analysis_is_422_with_field_paths_and_not_stored(
    deployed: Deployed, namespace: str, label: str, change: dict[str, Any], paths: list[str]
) -> None:
    manifest = analysis_manifest(label, namespace, metrics=[_GOOD_METRIC])
    manifest["spec"].update(change)
    result = deployed.cluster.kubectl(
        "apply", "-v=6", "-f", "-", input=to_yaml(manifest), check=False
    )
    assert result.returncode == 1
    # kubectl's request log shows the API server's answer to the create.
    assert re.search(
        r'verb="POST" url="https://\S+/rolloutanalyses\S*" status="422 Unprocessable Entity"',
        result.stderr,
    )
    message = result.stderr[result.stderr.index("The RolloutAnalysis") :]
    assert f'The RolloutAnalysis "{label}" is invalid' in message
    for path in paths:
        assert path in message, message
    stored = deployed.cluster.kubectl("get", "ra", label, "-n", namespace, check=False)
    assert stored.returncode == 1 and "NotFound" in stored.stderr
