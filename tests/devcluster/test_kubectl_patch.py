"""`kubectl patch`, `label`, `annotate`, `scale`, `create` and `replace` against devcluster.

These are the write paths kubectl and the operator use besides `apply`: strategic merge for
built-in kinds (refused for custom resources, as a real server does), JSON merge and JSON
patches, the scale subresource, and the conflict answers of create and replace.
"""

from __future__ import annotations

import json

from testkit.devcluster import DevCluster
from testkit.manifests import deployment_manifest, ra_manifest, to_yaml


def _apply(cluster: DevCluster, ns: str, *manifests: dict) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(*manifests))


def _json(cluster: DevCluster, ns: str, *resource: str) -> dict:
    return json.loads(cluster.kubectl("get", *resource, "-n", ns, "-o", "json").stdout)


def _two_container_deployment() -> dict:
    manifest = deployment_manifest("web")
    manifest["spec"]["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": "busybox:1.36"}
    )
    return manifest


def test_strategic_merge_patch_keeps_other_containers(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, _two_container_deployment())
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}

    result = cluster.kubectl("patch", "deployment", "web", "-n", ns, "-p", json.dumps(patch))

    assert result.stdout == "deployment.apps/web patched\n"
    containers = _json(cluster, ns, "deploy", "web")["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("app", "nginx:2"),
        ("sidecar", "busybox:1.36"),
    ]


def test_merge_patch_replaces_lists(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, _two_container_deployment())
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}

    cluster.kubectl("patch", "deploy", "web", "-n", ns, "--type=merge", "-p", json.dumps(patch))

    containers = _json(cluster, ns, "deploy", "web")["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:2")]


def test_json_patch_on_rollout_analysis(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    operations = [
        {"op": "test", "path": "/spec/failureLimit", "value": 3},
        {"op": "replace", "path": "/spec/failureLimit", "value": 4},
        {
            "op": "add",
            "path": "/spec/metrics/-",
            "value": {"name": "errors", "query": "up", "maxValue": 1},
        },
    ]

    result = cluster.kubectl(
        "patch", "ra", "checkout", "-n", ns, "--type=json", "-p", json.dumps(operations)
    )

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout patched\n"
    spec = _json(cluster, ns, "ra", "checkout")["spec"]
    assert spec["failureLimit"] == 4
    assert [m["name"] for m in spec["metrics"]] == ["p99-latency", "errors"]


def test_failed_json_patch_test_operation_changes_nothing(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    operations = [
        {"op": "replace", "path": "/spec/failureLimit", "value": 4},
        {"op": "test", "path": "/spec/interval", "value": "1m"},
    ]

    result = cluster.kubectl(
        "patch",
        "ra",
        "checkout",
        "-n",
        ns,
        "--type=json",
        "-p",
        json.dumps(operations),
        check=False,
    )

    assert result.returncode == 1
    # A real server answers 422 Invalid without kind or name, which kubectl prints like this.
    assert result.stderr.startswith("The request is invalid"), result.stderr
    assert _json(cluster, ns, "ra", "checkout")["spec"]["failureLimit"] == 3


def test_strategic_merge_patch_on_custom_resource_is_unsupported(
    cluster: DevCluster, ns: str
) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    result = cluster.kubectl(
        "patch",
        "ra",
        "checkout",
        "-n",
        ns,
        "--type=strategic",
        "-p",
        '{"spec":{"dryRun":true}}',
        check=False,
    )

    assert result.returncode == 1
    # kubectl wraps the server's 415 UnsupportedMediaType Status in its own sentence.
    assert result.stderr.strip() == (
        "error: application/strategic-merge-patch+json is not supported by"
        " sentinel.example.com/v1alpha1, Kind=RolloutAnalysis: the body of the request was in an"
        " unknown format - accepted media types include: application/json-patch+json,"
        " application/merge-patch+json, application/apply-patch+yaml"
    )


def test_patch_making_object_invalid_is_rejected(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    result = cluster.kubectl(
        "patch",
        "ra",
        "checkout",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"metrics":[]}}',
        check=False,
    )

    assert result.returncode == 1
    assert result.stderr.startswith('The RolloutAnalysis "checkout" is invalid: spec.metrics')


def test_label_and_annotate_do_not_bump_generation(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    labelled = cluster.kubectl("label", "ra", "checkout", "-n", ns, "team=pay")
    annotated = cluster.kubectl("annotate", "ra", "checkout", "-n", ns, "note=hello")

    assert labelled.stdout == "rolloutanalysis.sentinel.example.com/checkout labeled\n"
    assert annotated.stdout == "rolloutanalysis.sentinel.example.com/checkout annotated\n"
    meta = _json(cluster, ns, "ra", "checkout")["metadata"]
    assert meta["labels"] == {"team": "pay"}
    assert meta["annotations"]["note"] == "hello"
    assert meta["generation"] == 1


def test_label_removal(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))
    cluster.kubectl("label", "ra", "checkout", "-n", ns, "team=pay", "tier=gold")

    cluster.kubectl("label", "ra", "checkout", "-n", ns, "team-")

    assert _json(cluster, ns, "ra", "checkout")["metadata"]["labels"] == {"tier": "gold"}


def test_scale_deployment_through_scale_subresource(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, deployment_manifest("web"))

    result = cluster.kubectl("scale", "deployment/web", "-n", ns, "--replicas=3")

    assert result.stdout == "deployment.apps/web scaled\n"
    deployment = _json(cluster, ns, "deploy", "web")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["metadata"]["generation"] == 2


def test_scale_with_wrong_current_replicas_is_refused(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, deployment_manifest("web"))

    result = cluster.kubectl(
        "scale", "deployment/web", "-n", ns, "--current-replicas=5", "--replicas=3", check=False
    )

    assert result.returncode == 1
    assert "Expected replicas to be 5, was 1" in result.stderr
    assert _json(cluster, ns, "deploy", "web")["spec"]["replicas"] == 1


def test_create_existing_object_is_already_exists(cluster: DevCluster, ns: str) -> None:
    manifest = to_yaml(ra_manifest("checkout"))
    created = cluster.kubectl("create", "-n", ns, "-f", "-", input=manifest)

    again = cluster.kubectl("create", "-n", ns, "-f", "-", input=manifest, check=False)

    assert created.stdout == "rolloutanalysis.sentinel.example.com/checkout created\n"
    assert again.returncode == 1
    assert again.stderr.strip() == (
        'Error from server (AlreadyExists): error when creating "STDIN":'
        ' rolloutanalyses.sentinel.example.com "checkout" already exists'
    )


def test_replace_with_stale_resource_version_conflicts(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))
    stale = _json(cluster, ns, "ra", "checkout")
    cluster.kubectl("label", "ra", "checkout", "-n", ns, "team=pay")
    stale["spec"]["failureLimit"] = 5

    result = cluster.kubectl("replace", "-f", "-", input=json.dumps(stale), check=False)

    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be'
        ' fulfilled on rolloutanalyses.sentinel.example.com "checkout": the object has been'
        " modified; please apply your changes to the latest version and try again"
    )


def test_replace_current_object(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))
    current = _json(cluster, ns, "ra", "checkout")
    current["spec"]["failureLimit"] = 5

    result = cluster.kubectl("replace", "-f", "-", input=json.dumps(current))

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout replaced\n"
    assert _json(cluster, ns, "ra", "checkout")["spec"]["failureLimit"] == 5


def test_patch_status_subresource_with_kubectl(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))

    result = cluster.kubectl(
        "patch",
        "ra",
        "checkout",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"failures":2,"lastVerdict":"Fail"},"spec":{"failureLimit":9}}',
    )

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout patched\n"
    stored = _json(cluster, ns, "ra", "checkout")
    assert stored["status"] == {"failures": 2, "lastVerdict": "Fail"}
    assert stored["spec"]["failureLimit"] == 3
    status_only = json.loads(
        cluster.kubectl(
            "get", "ra", "checkout", "-n", ns, "--subresource=status", "-o", "json"
        ).stdout
    )
    assert status_only["status"] == {"failures": 2, "lastVerdict": "Fail"}
