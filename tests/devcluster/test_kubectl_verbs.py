"""`kubectl describe`, `explain`, `edit`, `delete` and `rollout pause|resume` against devcluster."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from testkit.devcluster import DevCluster
from testkit.kubectl import kubectl_command
from testkit.manifests import deployment_manifest, ra_manifest, to_yaml


def _apply(cluster: DevCluster, ns: str, *manifests: dict) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(*manifests))


def test_describe_rollout_analysis(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout", interval="30s", failureLimit=3))

    out = cluster.kubectl("describe", "ra", "checkout", "-n", ns).stdout

    lines = [line.split() for line in out.splitlines()]
    assert ["Name:", "checkout"] in lines
    assert ["Namespace:", ns] in lines
    assert ["API", "Version:", "sentinel.example.com/v1alpha1"] in lines
    assert ["Kind:", "RolloutAnalysis"] in lines
    assert ["Failure", "Limit:", "3"] in lines
    assert ["Interval:", "30s"] in lines
    assert ["Events:", "<none>"] in lines


def test_describe_shows_events_of_the_object(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))
    uid = cluster.kubectl("get", "ra", "checkout", "-n", ns, "-o", "jsonpath={.metadata.uid}")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "checkout.paused", "namespace": ns},
        "involvedObject": {
            "apiVersion": "sentinel.example.com/v1alpha1",
            "kind": "RolloutAnalysis",
            "name": "checkout",
            "namespace": ns,
            "uid": uid.stdout,
        },
        "reason": "RolloutPaused",
        "message": "p99-latency above 0.25 three times",
        "type": "Warning",
        "count": 1,
        "firstTimestamp": "2026-11-29T10:00:30Z",
        "lastTimestamp": "2026-11-29T10:00:30Z",
        "source": {"component": "rollout-sentinel"},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(event))

    out = cluster.kubectl("describe", "ra", "checkout", "-n", ns).stdout

    events_part = out.split("Events:", 1)[1]
    assert "Warning" in events_part
    assert "RolloutPaused" in events_part
    assert "p99-latency above 0.25 three times" in events_part


def test_explain_spec_shows_crd_descriptions(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "rolloutanalysis.spec").stdout

    assert "KIND:       RolloutAnalysis" in out
    assert "VERSION:    v1alpha1" in out
    assert "FIELD: spec <Object>" in out
    assert "What to measure, against which workload, and when to pause it." in out
    fields = out.split("FIELDS:", 1)[1]
    assert "failureLimit\t<integer>" in fields
    assert "Consecutive failed evaluations that pause the target." in fields
    # Not required by the schema: an analysis may take its metrics from templates instead (a
    # CEL rule asks for one of the two, docs/templates.md).
    assert "metrics\t<[]Object>\n" in fields
    assert "templates\t<[]Object>" in fields
    assert "target\t<Object> -required-" in fields
    assert "interval\t<string>" in fields
    assert "dryRun\t<boolean>" in fields


def test_explain_spec_metrics_shows_item_fields(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "ra.spec.metrics").stdout

    assert "FIELD: metrics <[]Object>" in out
    assert "PromQL metrics evaluated every interval." in out
    fields = out.split("FIELDS:", 1)[1]
    assert "maxValue\t<number>\n" in fields
    assert "name\t<string> -required-" in fields
    # query or sequential, one of them (a CEL rule): neither is required on its own.
    assert "query\t<string>\n" in fields
    assert "sequential\t<Object>\n" in fields
    assert "Highest acceptable value; anything above it fails the metric." in fields


def test_explain_built_in_deployment_spec_paused(cluster: DevCluster) -> None:
    out = cluster.kubectl("explain", "deployment.spec.paused").stdout

    assert "KIND:       Deployment" in out
    assert "FIELD: paused <boolean>" in out


def _editor(tmp_path: Path, sed_expression: str) -> str:
    # Keeps a copy of every buffer kubectl hands over, so a test can read the error comments
    # kubectl writes when it re-opens the editor after the server refused the change.
    script = tmp_path / "editor.sh"
    seen = tmp_path / "seen.yaml"
    script.write_text(f"#!/bin/sh\ncat \"$1\" >> '{seen}'\nsed -i '{sed_expression}' \"$1\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _kubectl_with_editor(
    cluster: DevCluster, editor: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        kubectl_command(
            args, kubeconfig=cluster.kubeconfig, cache_dir=cluster.workdir / "kube-cache"
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), KUBE_EDITOR=editor),
        check=False,
    )


def test_edit_rollout_analysis_changes_spec(cluster: DevCluster, ns: str, tmp_path: Path) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    editor = _editor(tmp_path, "s/failureLimit: 3/failureLimit: 6/")

    result = _kubectl_with_editor(cluster, editor, "edit", "ra", "checkout", "-n", ns)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "rolloutanalysis.sentinel.example.com/checkout edited\n"
    got = cluster.kubectl(
        "get",
        "ra",
        "checkout",
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.failureLimit} {.metadata.generation}",
    )
    assert got.stdout == "6 2"


def test_edit_to_invalid_value_is_rejected(cluster: DevCluster, ns: str, tmp_path: Path) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    editor = _editor(tmp_path, "s/failureLimit: 3/failureLimit: 0/")

    result = _kubectl_with_editor(cluster, editor, "edit", "ra", "checkout", "-n", ns)

    # kubectl re-opens the editor with the server's causes as comments; the second, unchanged
    # buffer makes it give up.
    assert result.returncode == 1
    assert 'error: rolloutanalyses.sentinel.example.com "checkout" is invalid' in result.stderr
    assert "Edit cancelled, no valid changes were saved." in result.stderr
    buffers = (tmp_path / "seen.yaml").read_text()
    assert "was not valid" in buffers
    assert "spec.failureLimit: Invalid value: 0" in buffers
    got = cluster.kubectl("get", "ra", "checkout", "-n", ns, "-o", "jsonpath={.spec.failureLimit}")
    assert got.stdout == "3"


def test_edit_deployment_image(cluster: DevCluster, ns: str, tmp_path: Path) -> None:
    _apply(cluster, ns, deployment_manifest("web"))
    editor = _editor(tmp_path, "s/image: nginx:1.27/image: nginx:1.28/")

    result = _kubectl_with_editor(cluster, editor, "edit", "deployment/web", "-n", ns)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "deployment.apps/web edited\n"
    image = cluster.kubectl(
        "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert image.stdout == "nginx:1.28"


def test_delete_rollout_analysis(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    result = cluster.kubectl("delete", "ra", "checkout", "-n", ns, timeout=30)

    assert result.stdout == (
        f'rolloutanalysis.sentinel.example.com "checkout" deleted from {ns} namespace\n'
    )
    assert cluster.kubectl("get", "ra", "checkout", "-n", ns, check=False).returncode == 1


def test_delete_missing_object_is_not_found(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("delete", "ra", "nope", "-n", ns, check=False)

    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (NotFound): rolloutanalyses.sentinel.example.com "nope" not found'
    )


def test_delete_by_label_selector(cluster: DevCluster, ns: str) -> None:
    labelled = ra_manifest("a")
    labelled["metadata"]["labels"] = {"team": "pay"}
    _apply(cluster, ns, labelled, ra_manifest("b"))

    result = cluster.kubectl("delete", "ra", "-n", ns, "-l", "team=pay", timeout=30)

    assert (
        result.stdout == f'rolloutanalysis.sentinel.example.com "a" deleted from {ns} namespace\n'
    )
    left = cluster.kubectl("get", "ra", "-n", ns, "-o", "name").stdout
    assert left == "rolloutanalysis.sentinel.example.com/b\n"


def _paused(cluster: DevCluster, ns: str) -> str:
    return cluster.kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.paused}").stdout


def test_rollout_pause_and_resume_flip_spec_paused(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, deployment_manifest("web"))

    paused = cluster.kubectl("rollout", "pause", "deployment/web", "-n", ns)

    assert paused.stdout == "deployment.apps/web paused\n"
    assert _paused(cluster, ns) == "true"

    resumed = cluster.kubectl("rollout", "resume", "deployment/web", "-n", ns)

    assert resumed.stdout == "deployment.apps/web resumed\n"
    assert _paused(cluster, ns) in ("", "false")


def test_rollout_resume_of_running_deployment_is_an_error(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, deployment_manifest("web"))

    result = cluster.kubectl("rollout", "resume", "deployment/web", "-n", ns, check=False)

    assert result.returncode == 1
    assert "is not paused" in result.stderr
