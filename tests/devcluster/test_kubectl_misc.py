"""Smaller kubectl paths: field validation modes and the exact unknown-field errors for
built-ins and custom resources, health endpoints, version and cluster-info, the events table,
and chunked lists.
"""

from __future__ import annotations

import json

import pytest

from testkit.devcluster import DevCluster
from testkit.manifests import deployment_manifest, ra_manifest, to_yaml


def test_validate_warn_prints_server_warning_and_prunes(cluster: DevCluster, ns: str) -> None:
    manifest = ra_manifest("checkout", bogusField="x")

    result = cluster.kubectl(
        "apply", "--validate=warn", "-n", ns, "-f", "-", input=to_yaml(manifest)
    )

    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout created\n"
    assert 'Warning: unknown field "spec.bogusField"' in result.stderr
    spec = cluster.kubectl("get", "ra", "checkout", "-n", ns, "-o", "json").stdout
    assert "bogusField" not in json.loads(spec)["spec"]


def test_health_endpoints_answer_ok(cluster: DevCluster) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        assert cluster.kubectl("get", "--raw", path).stdout == "ok"


def test_version_reports_a_server_version(cluster: DevCluster) -> None:
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)

    server = version["serverVersion"]
    assert server["major"] == "1"
    assert server["gitVersion"].startswith("v1.")


def test_get_events_table(cluster: DevCluster, ns: str) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "checkout.1", "namespace": ns},
        "involvedObject": {
            "apiVersion": "sentinel.example.com/v1alpha1",
            "kind": "RolloutAnalysis",
            "name": "checkout",
            "namespace": ns,
        },
        "reason": "RolloutPaused",
        "message": "failure limit reached",
        "type": "Warning",
        "lastTimestamp": "2026-11-29T10:00:30Z",
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(event))

    lines = cluster.kubectl("get", "events", "-n", ns).stdout.splitlines()

    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[1:] == [
        "Warning",
        "RolloutPaused",
        "rolloutanalysis/checkout",
        "failure",
        "limit",
        "reached",
    ]


def test_chunked_get_lists_every_object(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl(
        "apply", "-n", ns, "-f", "-", input=to_yaml(*(ra_manifest(n) for n in ("a", "b", "c")))
    )

    table = cluster.kubectl("get", "ra", "-n", ns, "--chunk-size=1").stdout.splitlines()

    assert [line.split()[0] for line in table] == ["NAME", "a", "b", "c"]


def _with_unknown_fields(manifest: dict, *names: str) -> dict:
    for name in names:
        manifest["spec"][name] = 2
    return manifest


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            _with_unknown_fields(deployment_manifest("web"), "replica"),
            'Deployment in version "v1" cannot be handled as a Deployment: strict decoding'
            ' error: unknown field "spec.replica"',
        ),
        (
            _with_unknown_fields(ra_manifest("web"), "limit", "owner"),
            'RolloutAnalysis in version "v1alpha1" cannot be handled as a RolloutAnalysis:'
            ' strict decoding error: unknown field "spec.limit", unknown field "spec.owner"',
        ),
    ],
    ids=["deployment", "rolloutanalysis"],
)
def test_unknown_fields_are_a_strict_decoding_error(
    cluster: DevCluster, ns: str, manifest: dict, expected: str
) -> None:
    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest), check=False)

    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'Error from server (BadRequest): error when creating "STDIN": {expected}'
    )
    assert cluster.kubectl("get", manifest["kind"], "web", "-n", ns, check=False).returncode == 1


def test_cluster_info_names_the_server(cluster: DevCluster) -> None:
    out = cluster.kubectl("cluster-info").stdout

    assert "Kubernetes control plane" in out
    assert cluster.url in out


@pytest.mark.parametrize(
    ("manifest", "unknown"),
    [
        (deployment_manifest("web"), "spec.volumes"),
        (ra_manifest("web"), "spec.volumes"),
    ],
    ids=["deployment-strategic-merge", "rolloutanalysis-merge"],
)
def test_unknown_field_in_apply_patch_of_existing_object(
    cluster: DevCluster, ns: str, manifest: dict, unknown: str
) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest))
    manifest = {**manifest, "spec": {**manifest["spec"], "volumes": []}}

    result = cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest), check=False)

    # A real server refuses the patched object as a whole: 422 Invalid on the field "patch".
    assert result.returncode == 1
    assert result.stderr.startswith('The request is invalid: patch: Invalid value: "'), (
        result.stderr
    )
    assert f'strict decoding error: unknown field "{unknown}"' in result.stderr
