"""`kubectl apply` against devcluster: create, re-apply, configure, dry-run, defaults, pruning.

kubectl runs with its default (strict) validation, never ``--validate=false`` unless a test
is about pruning, so it exercises devcluster's discovery, OpenAPI and field validation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testkit.devcluster import DevCluster
from testkit.manifests import deployment_manifest, ra_manifest, to_yaml
from testkit.paths import CRD_PATH


def _get_json(cluster: DevCluster, ns: str, *resource: str) -> dict:
    return json.loads(cluster.kubectl("get", *resource, "-n", ns, "-o", "json").stdout)


def test_apply_crd_again_is_unchanged(cluster: DevCluster) -> None:
    result = cluster.kubectl("apply", "-f", str(CRD_PATH))

    assert result.stdout == (
        "customresourcedefinition.apiextensions.k8s.io/rolloutanalyses.sentinel.example.com"
        " unchanged\n"
    )


def test_crd_is_established(cluster: DevCluster) -> None:
    result = cluster.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=10s",
        "crd/rolloutanalyses.sentinel.example.com",
    )

    assert "condition met" in result.stdout


def test_apply_new_rollout_analysis_creates_it(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout")))

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout created\n"
    stored = _get_json(cluster, ns, "rolloutanalysis", "checkout")
    assert stored["spec"]["target"] == {"kind": "Deployment", "name": "checkout"}
    assert stored["metadata"]["namespace"] == ns
    assert stored["metadata"]["uid"]
    assert stored["metadata"]["generation"] == 1
    annotations = stored["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations


def test_apply_same_rollout_analysis_twice_is_unchanged(cluster: DevCluster, ns: str) -> None:
    manifest = to_yaml(ra_manifest("checkout"))
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)

    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest)

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout unchanged\n"


def test_apply_changed_rollout_analysis_configures_it(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout")))

    result = cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout", failureLimit=7))
    )

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout configured\n"
    stored = _get_json(cluster, ns, "rolloutanalysis", "checkout")
    assert stored["spec"]["failureLimit"] == 7
    assert stored["metadata"]["generation"] == 2


def test_apply_new_deployment_creates_it(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(deployment_manifest("web"))
    )

    assert result.stdout == "deployment.apps/web created\n"
    stored = _get_json(cluster, ns, "deployment", "web")
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_apply_changed_deployment_patches_container_image(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(deployment_manifest("web")))

    result = cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(deployment_manifest("web", image="nginx:1.28"))
    )

    assert result.stdout == "deployment.apps/web configured\n"
    stored = _get_json(cluster, ns, "deployment", "web")
    containers = stored["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:1.28")]
    assert stored["metadata"]["generation"] == 2


def test_apply_defaults_dry_run_but_not_interval_or_failure_limit(
    cluster: DevCluster, ns: str
) -> None:
    # interval and failureLimit are the operator's to default: a template may give them.
    manifest = ra_manifest("checkout")
    del manifest["spec"]["target"]["kind"]
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest))

    spec = _get_json(cluster, ns, "rolloutanalysis", "checkout")["spec"]

    assert "interval" not in spec
    assert "failureLimit" not in spec
    assert spec["dryRun"] is False
    assert spec["target"]["kind"] == "Deployment"


def test_apply_server_dry_run_stores_nothing(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout"))
    )

    assert (
        result.stdout == "rolloutanalysis.sentinel.example.com/checkout created (server dry run)\n"
    )
    missing = cluster.kubectl("get", "ra", "checkout", "-n", ns, check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        'Error from server (NotFound): rolloutanalyses.sentinel.example.com "checkout" not found'
    )


def test_apply_server_dry_run_on_existing_object_changes_nothing(
    cluster: DevCluster, ns: str
) -> None:
    applied = ra_manifest("checkout", failureLimit=3)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(applied))
    before = _get_json(cluster, ns, "ra", "checkout")

    result = cluster.kubectl(
        "apply",
        "--dry-run=server",
        "-n",
        ns,
        "-f",
        "-",
        input=to_yaml(ra_manifest("checkout", failureLimit=9)),
    )

    assert "configured (server dry run)" in result.stdout
    after = _get_json(cluster, ns, "ra", "checkout")
    assert after["spec"]["failureLimit"] == 3
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_apply_rejects_unknown_field_with_strict_validation(cluster: DevCluster, ns: str) -> None:
    manifest = ra_manifest("checkout", bogusField="x")

    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest), check=False)

    assert result.returncode == 1
    # A real server (fieldValidation=Strict): strict decoding error: unknown field "spec.bogusField"
    assert 'unknown field "spec.bogusField"' in result.stderr
    assert cluster.kubectl("get", "ra", "checkout", "-n", ns, check=False).returncode == 1


def test_apply_without_validation_prunes_unknown_field(cluster: DevCluster, ns: str) -> None:
    manifest = ra_manifest("checkout", bogusField="x")
    manifest["spec"]["target"]["extra"] = 1

    cluster.kubectl("apply", "--validate=false", "-n", ns, "-f", "-", input=to_yaml(manifest))

    spec = _get_json(cluster, ns, "ra", "checkout")["spec"]
    assert "bogusField" not in spec
    assert spec["target"] == {"kind": "Deployment", "name": "checkout"}


def test_apply_several_documents_at_once(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=to_yaml(deployment_manifest("checkout"), ra_manifest("checkout")),
    )

    assert result.stdout.splitlines() == [
        "deployment.apps/checkout created",
        "rolloutanalysis.sentinel.example.com/checkout created",
    ]


def test_apply_server_side(cluster: DevCluster, ns: str) -> None:
    manifest = ra_manifest("checkout", failureLimit=5)

    result = cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=to_yaml(manifest))

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout serverside-applied\n"
    stored = _get_json(cluster, ns, "ra", "checkout")
    assert stored["spec"]["failureLimit"] == 5
    assert stored["spec"]["dryRun"] is False
    assert "interval" not in stored["spec"]


def test_diff_shows_the_change_and_exits_one(cluster: DevCluster, ns: str) -> None:
    applied = ra_manifest("checkout", failureLimit=3)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(applied))

    same = cluster.kubectl("diff", "-n", ns, "-f", "-", input=to_yaml(applied))
    changed = cluster.kubectl(
        "diff",
        "-n",
        ns,
        "-f",
        "-",
        input=to_yaml(ra_manifest("checkout", failureLimit=5)),
        check=False,
    )

    assert same.stdout == ""
    assert changed.returncode == 1, changed.stderr
    assert "-  failureLimit: 3\n+  failureLimit: 5\n" in changed.stdout
    assert "-  generation: 1\n+  generation: 2\n" in changed.stdout
    assert _get_json(cluster, ns, "ra", "checkout")["spec"]["failureLimit"] == 3


def test_applying_a_changed_crd_serves_it_at_once(
    persistent_cluster: DevCluster, persistent_ns: str
) -> None:
    crd = yaml.safe_load(CRD_PATH.read_text())
    version = crd["spec"]["versions"][0]
    version["additionalPrinterColumns"].insert(
        2, {"name": "Interval", "type": "string", "jsonPath": ".spec.interval"}
    )
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["owner"] = {
        "type": "string",
        "description": "Team that owns this analysis.",
    }
    ns = persistent_ns

    try:
        configured = persistent_cluster.kubectl("apply", "-f", "-", input=to_yaml(crd))
        persistent_cluster.kubectl(
            "apply",
            "-n",
            ns,
            "-f",
            "-",
            input=to_yaml(ra_manifest("a", owner="payments", interval="30s")),
        )
        table = persistent_cluster.kubectl("get", "ra", "-n", ns).stdout.splitlines()
        owner = persistent_cluster.kubectl(
            "get", "ra", "a", "-n", ns, "-o", "jsonpath={.spec.owner}"
        )
    finally:
        persistent_cluster.kubectl("apply", "-f", str(CRD_PATH))

    assert configured.stdout.endswith("rolloutanalyses.sentinel.example.com configured\n")
    assert table[0].split()[:4] == ["NAME", "KIND", "TARGET", "INTERVAL"]
    assert table[1].split()[:4] == ["a", "Deployment", "checkout", "30s"]
    assert owner.stdout == "payments"


@pytest.mark.server
def test_deleting_the_crd_removes_the_api_and_its_objects(tmp_path: Path) -> None:
    with DevCluster(tmp_path) as dev:
        dev.kubectl("apply", "-f", str(CRD_PATH))
        dev.kubectl("apply", "-n", "default", "-f", "-", input=to_yaml(ra_manifest("a")))

        deleted = dev.kubectl("delete", "-f", str(CRD_PATH), timeout=30)
        missing = dev.kubectl("get", "ra", "-n", "default", check=False)
        dev.kubectl("apply", "-f", str(CRD_PATH))
        after = dev.kubectl("get", "rolloutanalyses", "-n", "default", "-o", "name")

    assert deleted.stdout == (
        "customresourcedefinition.apiextensions.k8s.io"
        ' "rolloutanalyses.sentinel.example.com" deleted\n'
    )
    assert missing.returncode == 1
    # With kubectl's discovery cache still warm it lists and gets a 404 for the unserved path;
    # with a cold cache it finds no such type. Either way, as against a real server.
    assert (
        "the server could not find the requested resource" in missing.stderr
        or 'the server doesn\'t have a resource type "ra"' in missing.stderr
    ), missing.stderr
    assert after.stdout == ""
