"""`kubectl get` against devcluster: printer-column tables, -o yaml/json/name, selectors, -w.

Tables come from the server (Table responses built from the CRD's
additionalPrinterColumns), so the header and cells printed here are devcluster's work.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading

import kubernetes.client
import yaml

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, ra_manifest, to_yaml

HEADER = ["NAME", "KIND", "TARGET", "VERDICT", "FAILURES", "LIMIT", "PAUSED", "AGE"]


def _apply(cluster: DevCluster, ns: str, *manifests: dict) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(*manifests))


def _labelled(name: str, **labels: str) -> dict:
    manifest = ra_manifest(name)
    manifest["metadata"]["labels"] = labels
    return manifest


def _table(output: str) -> list[dict[str, str]]:
    """Split kubectl's aligned table at the header's column offsets (cells may be blank)."""
    header, *rows = output.splitlines()
    starts = [
        index
        for index, char in enumerate(header)
        if char != " " and (index == 0 or header[index - 1] == " ")
    ]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in bounds]
    return [
        {name: row[a:b].strip() for name, (a, b) in zip(names, bounds, strict=True)} for row in rows
    ]


def test_get_table_shows_crd_printer_columns(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    output = cluster.kubectl("get", "rolloutanalyses", "-n", ns).stdout

    assert output.splitlines()[0].split() == HEADER
    [row] = _table(output)
    # Columns whose JSONPath finds nothing (no status yet; no failureLimit, which the operator
    # defaults, not the schema) are blank cells, as on a real server.
    assert row == {
        "NAME": "checkout",
        "KIND": "Deployment",
        "TARGET": "checkout",
        "VERDICT": "",
        "FAILURES": "",
        "LIMIT": "",
        "PAUSED": "",
        "AGE": row["AGE"],
    }
    assert row["AGE"].endswith("s")


def test_get_table_shows_status_columns(
    cluster: DevCluster, ns: str, custom: kubernetes.client.CustomObjectsApi
) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    status = {
        "lastVerdict": "Fail",
        "failures": 2,
        "conditions": [
            {
                "type": "RolloutPaused",
                "status": "True",
                "reason": "FailureLimitReached",
                "message": "paused",
                "lastTransitionTime": "2026-11-29T10:00:30Z",
            }
        ],
    }
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", {"status": status}
    )

    [row] = _table(cluster.kubectl("get", "ra", "-n", ns).stdout)

    assert [row[column] for column in HEADER[:7]] == [
        "checkout",
        "Deployment",
        "checkout",
        "Fail",
        "2",
        "3",
        "True",
    ]


def test_get_empty_namespace_says_no_resources(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("get", "ra", "-n", ns)

    assert result.stdout == ""
    assert result.stderr.strip() == f"No resources found in {ns} namespace."


def test_get_missing_object_is_not_found(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl("get", "ra", "nope", "-n", ns, check=False)

    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (NotFound): rolloutanalyses.sentinel.example.com "nope" not found'
    )


def test_get_short_name_singular_and_qualified_name_agree(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    outputs = {
        name: cluster.kubectl("get", name, "-n", ns, "-o", "name").stdout
        for name in ("ra", "rolloutanalysis", "rolloutanalyses", f"{PLURAL}.{GROUP}")
    }

    assert set(outputs.values()) == {"rolloutanalysis.sentinel.example.com/checkout\n"}


def test_get_output_yaml_is_the_stored_object(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    stored = yaml.safe_load(cluster.kubectl("get", "ra", "checkout", "-n", ns, "-o", "yaml").stdout)

    assert stored["apiVersion"] == f"{GROUP}/{VERSION}"
    assert stored["kind"] == "RolloutAnalysis"
    assert stored["metadata"]["name"] == "checkout"
    assert stored["metadata"]["creationTimestamp"].endswith("Z")
    assert stored["spec"]["metrics"][0]["maxValue"] == 0.25


def test_get_output_json_of_a_list(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("a"), ra_manifest("b"))

    listed = json.loads(cluster.kubectl("get", "ra", "-n", ns, "-o", "json").stdout)

    assert listed["kind"] == "List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a", "b"]
    assert {item["kind"] for item in listed["items"]} == {"RolloutAnalysis"}


def test_get_with_label_selector(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, _labelled("a", team="pay"), _labelled("b", team="shop"), ra_manifest("c"))

    def names(*selector: str) -> list[str]:
        out = cluster.kubectl("get", "ra", "-n", ns, "-o", "name", *selector).stdout
        return [line.rsplit("/", 1)[1] for line in out.splitlines()]

    assert names("-l", "team=pay") == ["a"]
    assert names("-l", "team!=pay") == ["b", "c"]
    assert names("-l", "team") == ["a", "b"]
    assert names("-l", "team in (pay,shop)") == ["a", "b"]
    assert names("-l", "!team") == ["c"]


def test_get_with_field_selector(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("a"), ra_manifest("b"))

    out = cluster.kubectl(
        "get", "ra", "-n", ns, "-o", "name", "--field-selector", "metadata.name=b"
    ).stdout

    assert out == "rolloutanalysis.sentinel.example.com/b\n"


def test_get_with_unsupported_field_selector_is_rejected(cluster: DevCluster, ns: str) -> None:
    result = cluster.kubectl(
        "get", "ra", "-n", ns, "--field-selector", "spec.interval=30s", check=False
    )

    assert result.returncode == 1
    assert "Error from server (BadRequest)" in result.stderr
    assert "field label not supported: spec.interval" in result.stderr


def test_get_all_namespaces_adds_namespace_column(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout"))

    lines = cluster.kubectl("get", "ra", "-A").stdout.splitlines()

    assert lines[0].split() == ["NAMESPACE", *HEADER]
    assert any(line.split()[:2] == [ns, "checkout"] for line in lines[1:])


def _lines_of(process: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_get_watch_prints_a_line_per_change(cluster: DevCluster, ns: str) -> None:
    _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
    watcher = cluster.kubectl_popen("get", "ra", "checkout", "-n", ns, "-w")
    try:
        lines = _lines_of(watcher)
        assert lines.get(timeout=15).split() == HEADER
        assert lines.get(timeout=15).split()[:4] == ["checkout", "Deployment", "checkout", "3"]

        cluster.kubectl(
            "patch", "ra", "checkout", "-n", ns, "--type=merge", "-p", '{"spec":{"failureLimit":5}}'
        )

        assert lines.get(timeout=15).split()[:4] == ["checkout", "Deployment", "checkout", "5"]
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_get_watch_output_watch_events_shows_event_types(cluster: DevCluster, ns: str) -> None:
    watcher = cluster.kubectl_popen("get", "ra", "-n", ns, "-w", "--output-watch-events")
    try:
        lines = _lines_of(watcher)
        _apply(cluster, ns, ra_manifest("checkout", failureLimit=3))
        assert lines.get(timeout=15).split() == ["EVENT", *HEADER]
        assert lines.get(timeout=15).split()[:5] == [
            "ADDED",
            "checkout",
            "Deployment",
            "checkout",
            "3",
        ]

        cluster.kubectl("delete", "ra", "checkout", "-n", ns)

        seen = [lines.get(timeout=15).split()[0]]
        while seen[-1] != "DELETED":
            seen.append(lines.get(timeout=15).split()[0])
        assert set(seen) <= {"MODIFIED", "DELETED"}
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
