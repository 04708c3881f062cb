"""Every CRD schema rule rejects a bad RolloutAnalysis through `kubectl apply`.

The rules are those of docs/resource.md#validation.

Each case asserts what a real API server answers: exit code 1, an ``Invalid`` error naming
the field path with the apiextensions message, and nothing stored afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from testkit.devcluster import DevCluster
from testkit.manifests import ra_manifest, to_yaml

_METRIC = {"name": "p99", "query": "up", "maxValue": 1}


def _metric(**overrides: Any) -> dict[str, Any]:
    return {**_METRIC, **overrides}


CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "target-kind-enum",
        {"target": {"kind": "ReplicaSet", "name": "checkout"}},
        'spec.target.kind: Unsupported value: "ReplicaSet": supported values: '
        '"Deployment", "StatefulSet", "DaemonSet"',
    ),
    (
        "target-name-required",
        {"target": {"kind": "Deployment"}},
        "spec.target.name: Required value",
    ),
    (
        "metrics-min-items",
        {"metrics": []},
        "spec.metrics in body should have at least 1 items",
    ),
    (
        "duplicate-metric-name",
        {"metrics": [_metric(), _metric(query="rate(x[1m])")]},
        # The key fields of the duplicate, JSON-encoded as the real v1.37 server prints them.
        'spec.metrics[1]: Duplicate value: {"name":"p99"}',
    ),
    (
        "metric-name-dns-label",
        {"metrics": [_metric(name="Bad_Name")]},
        'spec.metrics[0].name: Invalid value: "Bad_Name": spec.metrics[0].name in body should'
        " match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
    ),
    (
        "empty-query",
        {"metrics": [_metric(query="")]},
        'spec.metrics[0].query: Invalid value: "": spec.metrics[0].query in body should be at'
        " least 1 chars long",
    ),
    (
        "max-value-not-a-number",
        {"metrics": [_metric(maxValue="high")]},
        'spec.metrics[0].maxValue: Invalid value: "string": spec.metrics[0].maxValue in body'
        ' must be of type number: "string"',
    ),
    (
        "interval-not-a-duration",
        {"interval": "soon"},
        'spec.interval: Invalid value: "soon": spec.interval in body should match'
        " '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$'",
    ),
    (
        "failure-limit-zero",
        {"failureLimit": 0},
        "spec.failureLimit: Invalid value: 0: spec.failureLimit in body should be greater than"
        " or equal to 1",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_apply_rejects_invalid_rollout_analysis(
    cluster: DevCluster, ns: str, overrides: dict[str, Any], expected: str
) -> None:
    result = cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("bad", **overrides)), check=False
    )

    assert result.returncode == 1
    # kubectl rewrites an Invalid Status from the details: kind, name, then the causes.
    assert result.stderr.startswith('The RolloutAnalysis "bad" is invalid: '), result.stderr
    assert expected in result.stderr
    stored = cluster.kubectl("get", "ra", "bad", "-n", ns, check=False)
    assert stored.returncode == 1
    assert "(NotFound)" in stored.stderr


def test_apply_reports_every_invalid_field_at_once(cluster: DevCluster, ns: str) -> None:
    manifest = ra_manifest("bad", failureLimit=0, interval="soon")

    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest), check=False)

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == 'The RolloutAnalysis "bad" is invalid: '
    assert sorted(line.split(":")[0] for line in lines[1:]) == [
        "* spec.failureLimit",
        "* spec.interval",
    ]


def test_apply_rejects_invalid_change_to_existing_object(cluster: DevCluster, ns: str) -> None:
    # A limit of its own: the analysis CRD defaults none (docs/templates.md), and the refused
    # apply must leave this one in place.
    cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("good", failureLimit=2))
    )

    result = cluster.kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=to_yaml(ra_manifest("good", failureLimit=0)),
        check=False,
    )

    assert result.returncode == 1
    assert result.stderr.startswith('The RolloutAnalysis "good" is invalid: ')
    assert "spec.failureLimit: Invalid value: 0" in result.stderr
    limit = cluster.kubectl("get", "ra", "good", "-n", ns, "-o", "jsonpath={.spec.failureLimit}")
    assert limit.stdout == "2"
