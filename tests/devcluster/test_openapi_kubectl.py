"""The real kubectl reading devcluster's OpenAPI v3 documents: explain, server-side field
validation instead of client-side validation, and strategic merge patches from the schema."""

from __future__ import annotations

import json

import yaml

from testkit.devcluster import DevCluster


def test_explain_rolloutanalysis_spec_prints_the_crd_descriptions(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "rolloutanalysis.spec").stdout
    assert "GROUP:      sentinel.example.com" in out
    assert "KIND:       RolloutAnalysis" in out
    assert "FIELD: spec <Object>" in out
    assert "What to measure, against which workload, and when to pause it." in out
    # Not required by the schema: an analysis may take its metrics from templates instead.
    assert "metrics\t<[]Object>\n" in out
    assert "failureLimit\t<integer>" in out
    assert "Consecutive failed evaluations that pause the target." in out


def test_explain_rolloutanalysis_spec_metrics_lists_item_fields(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "rolloutanalysis.spec.metrics").stdout
    assert "FIELD: metrics <[]Object>" in out
    assert "maxValue\t<number>\n" in out
    assert "Highest acceptable value; anything above it fails the metric." in out


def test_explain_deployment_spec_replicas(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "deployment.spec.replicas").stdout
    assert "GROUP:      apps" in out
    assert "FIELD: replicas <integer>" in out
    assert "Number of desired pods." in out


def test_explain_deployment_spec_names_the_referenced_types(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "deployment.spec").stdout
    assert "FIELD: spec <DeploymentSpec>" in out
    assert "template\t<PodTemplateSpec> -required-" in out
    assert "selector\t<LabelSelector> -required-" in out
    assert "<no description>" not in out


def test_apply_leaves_validation_to_the_server(cluster: DevCluster, ns: str) -> None:
    """kubectl finds fieldValidation on the PATCH operation, so errors come from the server."""
    bad = {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "bad", "namespace": ns},
        "spec": {
            "target": {"name": "checkout"},
            "metrics": [{"name": "p99", "query": "up", "maxValue": 1}],
            "failureLimit": 0,
        },
    }
    result = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert (
        "spec.failureLimit: Invalid value: 0: spec.failureLimit in body should be greater than "
        "or equal to 1" in result.stderr
    )
    bad["spec"]["failureLimit"] = 3
    bad["spec"]["bogus"] = True
    result = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.bogus"' in result.stderr


def test_custom_resource_apply_falls_back_to_merge_patch(cluster: DevCluster, ns: str) -> None:
    """For a CRD kind kubectl asks /openapi/v2 once; devcluster's 404 is a clean fallback."""
    analysis = {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "ok", "namespace": ns},
        "spec": {
            "target": {"name": "checkout"},
            "metrics": [{"name": "p99", "query": "up", "maxValue": 1}],
            "failureLimit": 2,
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(analysis))
    analysis["spec"]["failureLimit"] = 4
    result = cluster.kubectl("apply", "-v=6", "-f", "-", input=json.dumps(analysis))
    assert 'url="https://' in result.stderr and "/openapi/v2" in result.stderr
    assert "configured" in result.stdout
    limit = cluster.kubectl(
        "get", "ra", "ok", "-n", ns, "-o", "jsonpath={.spec.failureLimit}"
    ).stdout
    assert limit == "4"


def test_apply_computes_strategic_merge_patches_from_the_schema(
    cluster: DevCluster, ns: str
) -> None:
    container = {"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [container, {"name": "side", "image": "busybox"}]},
            },
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(deployment))
    deployment["spec"]["template"]["spec"]["containers"] = [{**container, "env": []}]
    # -v=6 logs every request: the patch is computed from /openapi/v3 alone (a server
    # without strategic-merge support there would make kubectl ask /openapi/v2).
    result = cluster.kubectl("apply", "-v=6", "-f", "-", input=yaml.safe_dump(deployment))
    assert "/openapi/v3/apis/apps/v1?hash=" in result.stderr
    assert "/openapi/v2" not in result.stderr
    assert "error calculating patch" not in result.stderr
    stored = json.loads(cluster.kubectl("get", "deployment", "web", "-n", ns, "-o", "json").stdout)
    containers = stored["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web"]
    assert "env" not in containers[0] or containers[0]["env"] == []
