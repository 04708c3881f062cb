"""Saving, adding and deleting in the admin write to a real devcluster first (docs/api.md,
"Writes go to the cluster first").

Each test uses its own namespace. ``settings.SENTINEL_KUBECONFIG`` points the services at the
session's devcluster; the mirror rows the tests start from are the API server's own objects,
mirrored as the watch would.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.test import Client
from django.urls import reverse

from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube, writes
from sentinel_core.workload_kinds import PauseTarget
from testkit.clusters import kube_client
from testkit.devcluster import DevCluster
from testkit.manifests import ra_manifest, workload_manifest
from tests.ui import factories
from tests.ui.forms import change_form

pytestmark = pytest.mark.django_db


def _manifest(namespace: str, name: str, *, max_value: float = 0.25) -> dict[str, Any]:
    metric = {"name": "p99-latency", "query": "up", "maxValue": max_value}
    return ra_manifest(name, namespace, metrics=[metric])


def _get(cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    result = cluster.kubectl("get", "rolloutanalysis", name, "-n", namespace, "-o", "json")
    return json.loads(result.stdout)


def _applied(cluster: DevCluster, namespace: str, name: str, **kwargs: Any) -> Analysis:
    """Create the resource with kubectl and mirror the API server's object."""
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(_manifest(namespace, name, **kwargs)))
    row, _ = mirror.upsert_from_resource(_get(cluster, namespace, name))
    return row


def _paused_by_the_operator(cluster: DevCluster, namespace: str, name: str) -> Analysis:
    """Write a status saying the analysis paused its target, as the operator would; mirror it."""
    status = factories.status(verdict="Fail", failures=3, paused=True)
    cluster.kubectl(
        "patch", "rolloutanalysis", name, "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    row, _ = mirror.upsert_from_resource(_get(cluster, namespace, name))
    return row


def test_adding_creates_the_resource_in_the_cluster(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    data = change_form(
        None,
        namespace=namespace,
        name="checkout",
        interval="1m",
        failure_limit=2,
        metrics=[("p99-latency", "up", 0.3), ("error-rate", "vector(0)", 0.01)],
    )
    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    spec = _get(ui_cluster, namespace, "checkout")["spec"]
    assert spec == {
        "target": {"kind": "Deployment", "name": "checkout"},
        "metrics": [
            {"name": "p99-latency", "query": "up", "maxValue": 0.3},
            {"name": "error-rate", "query": "vector(0)", "maxValue": 0.01},
        ],
        "interval": "1m",
        "failureLimit": 2,
        "dryRun": False,
    }
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    assert response["Location"] == reverse("admin:analyses_analysis_changelist")
    assert row.uid and row.failure_limit == 2
    assert [m.name for m in row.metrics.all()] == ["p99-latency", "error-rate"]


@pytest.mark.parametrize("kind", ["StatefulSet", "DaemonSet"])
def test_adding_an_analysis_of_another_kind_names_it_everywhere(
    staff_client: Client, ui_cluster: DevCluster, namespace: str, kind: str
) -> None:
    """docs/status.md#pausing-each-kind: the form's kind reaches the cluster and the page."""
    data = change_form(None, namespace=namespace, name="db", target="db")
    data["target_kind"] = kind
    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert _get(ui_cluster, namespace, "db")["spec"]["target"] == {"kind": kind, "name": "db"}
    row = Analysis.objects.live().get(namespace=namespace, name="db")
    assert row.target_kind == kind
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    assert f"{kind} <strong>{namespace}/db</strong>" in page.content.decode()
    assert page.context["adminform"].form.fields["target_kind"].initial == kind


def test_adding_an_existing_name_is_refused_and_writes_nothing(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    ui_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(_manifest(namespace, "taken")))
    response = staff_client.post(
        reverse("admin:analyses_analysis_add"),
        change_form(None, namespace=namespace, name="taken", metrics=[("other", "up", 9.0)]),
    )
    assert response.status_code == 200
    assert "already exists in the cluster" in response.content.decode()
    assert not Analysis.objects.filter(namespace=namespace).exists()
    assert _get(ui_cluster, namespace, "taken")["spec"]["metrics"][0]["name"] == "p99-latency"


def test_adding_into_a_missing_namespace_names_the_problem_and_writes_nothing(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    missing = f"{namespace}-missing"
    response = staff_client.post(
        reverse("admin:analyses_analysis_add"),
        change_form(None, namespace=missing, name="checkout"),
    )
    assert response.status_code == 200
    assert f"Namespace {missing} does not exist in the cluster" in response.content.decode()
    assert not Analysis.objects.filter(namespace=missing).exists()


def test_saving_updates_the_cluster_then_the_mirror(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    row = _applied(ui_cluster, namespace, "checkout")
    data = change_form(
        row,
        target="checkout-v2",
        dry_run=True,
        metrics=[("p99-latency", "up", 0.5), ("error-rate", "vector(0)", 0.01)],
    )
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    remote = _get(ui_cluster, namespace, "checkout")
    assert remote["metadata"]["generation"] == 2
    assert remote["spec"]["target"]["name"] == "checkout-v2"
    assert remote["spec"]["dryRun"] is True
    assert [m["maxValue"] for m in remote["spec"]["metrics"]] == [0.5, 0.01]
    mirrored = Analysis.objects.get(pk=row.pk)
    assert mirrored.resource_version == remote["metadata"]["resourceVersion"]
    assert mirrored.target_name == "checkout-v2" and mirrored.dry_run
    assert [(m.name, m.max_value) for m in mirrored.metrics.all()] == [
        ("p99-latency", 0.5),
        ("error-rate", 0.01),
    ]
    (entry,) = LogEntry.objects.filter(object_id=str(row.pk))
    assert entry.action_flag == CHANGE
    assert "metrics" in entry.get_change_message() and "Target" in entry.get_change_message()

    # Ticking "delete" on a metric row removes that metric from the spec.
    data = change_form(mirrored, target="checkout-v2", metrics=[("p99-latency", "up", 0.5)])
    assert data["metrics-1-DELETE"] == "on"
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    remote = _get(ui_cluster, namespace, "checkout")
    assert [m["name"] for m in remote["spec"]["metrics"]] == ["p99-latency"]
    assert [m.name for m in Analysis.objects.get(pk=row.pk).metrics.all()] == ["p99-latency"]


def test_saving_an_analysis_naming_templates_keeps_its_templates_and_args(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    # docs/templates.md: a post that leaves the fields out (a script, an older page) keeps them.
    manifest = _manifest(namespace, "checkout")
    uses = {
        "templates": [{"name": "golden-signals", "clusterScope": True}],
        "args": [{"name": "service", "value": "checkout"}],
    }
    manifest["spec"].update(uses)
    ui_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    row, _ = mirror.upsert_from_resource(_get(ui_cluster, namespace, "checkout"))
    data = change_form(row, metrics=[("p99-latency", "up", 0.5)])
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    remote = _get(ui_cluster, namespace, "checkout")
    assert remote["metadata"]["generation"] == 2
    assert [m["maxValue"] for m in remote["spec"]["metrics"]] == [0.5]
    assert {key: remote["spec"][key] for key in uses} == uses

    # The page shows them in its fields; the fields change them, in order, and with interval
    # and failure limit left empty the spec has neither (a template's values apply).
    row = Analysis.objects.get(pk=row.pk)
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    form = page.context["adminform"].form
    assert form["templates"].value() == "cluster/golden-signals"
    assert form["args"].value() == "service=checkout"
    data = change_form(row, metrics=[("p99-latency", "up", 0.5)], interval="", failure_limit="")
    data["templates"] = "cluster/istio\nlatency\n"
    data["args"] = " service = check=out \n\nwindow=2m"
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    spec = _get(ui_cluster, namespace, "checkout")["spec"]
    # (clusterScope: false is the CRD's default for a template of the namespace.)
    assert spec["templates"] == [
        {"name": "istio", "clusterScope": True},
        {"name": "latency", "clusterScope": False},
    ]
    assert spec["args"] == [
        {"name": "service", "value": "check=out"},
        {"name": "window", "value": "2m"},
    ]
    assert "interval" not in spec and "failureLimit" not in spec

    # A line that is not NAME=VALUE is the field's error; nothing is written.
    row = Analysis.objects.get(pk=row.pk)
    data = change_form(row, metrics=[("p99-latency", "up", 0.5)], interval="1m")
    data["args"] = "service"
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["args"] == [
        "Line 1 is not NAME=VALUE: 'service'."
    ]
    assert _get(ui_cluster, namespace, "checkout")["spec"] == spec

    # Emptied, the templates and arguments are gone and the own metrics carry the analysis.
    data = change_form(row, metrics=[("p99-latency", "up", 0.5)], interval="1m", failure_limit=2)
    data.update(templates="", args="")
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    spec = _get(ui_cluster, namespace, "checkout")["spec"]
    assert "templates" not in spec and "args" not in spec
    assert (spec["interval"], spec["failureLimit"]) == ("1m", 2)


def test_a_409_from_the_cluster_says_changed_in_the_cluster_and_writes_nothing(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    row = _applied(ui_cluster, namespace, "checkout")
    # Someone edits the resource with kubectl; the mirror has not seen it yet.
    ui_cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(_manifest(namespace, "checkout", max_value=0.9))
    )
    response = staff_client.post(
        reverse("admin:analyses_analysis_change", args=[row.pk]),
        change_form(row, metrics=[("p99-latency", "up", 0.1)]),
    )
    assert response.status_code == 200
    page = response.content.decode()
    top = page[page.index('id="save-errors"') : page.index('id="conditions"')]
    assert "Changed in the cluster" in top and "reload" in top
    assert _get(ui_cluster, namespace, "checkout")["spec"]["metrics"][0]["maxValue"] == 0.9
    unchanged = Analysis.objects.get(pk=row.pk)
    assert unchanged.resource_version == row.resource_version
    assert [m.max_value for m in unchanged.metrics.all()] == [0.25]
    assert not LogEntry.objects.exists()


def test_a_503_from_the_cluster_says_cluster_unreachable_and_writes_nothing(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    row = _applied(ui_cluster, namespace, "checkout")
    ui_cluster.inject_fault(path_regex=f"/namespaces/{namespace}/", status=503)
    try:
        response = staff_client.post(
            reverse("admin:analyses_analysis_change", args=[row.pk]),
            change_form(row, metrics=[("p99-latency", "up", 0.1)]),
        )
    finally:
        ui_cluster.clear_faults()
    assert response.status_code == 200
    assert "Cluster unreachable" in response.content.decode()
    assert _get(ui_cluster, namespace, "checkout")["spec"]["metrics"][0]["maxValue"] == 0.25
    assert [m.max_value for m in Analysis.objects.get(pk=row.pk).metrics.all()] == [0.25]
    assert not LogEntry.objects.exists()


def test_deleting_deletes_in_the_cluster_and_keeps_the_history(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    row = _applied(ui_cluster, namespace, "checkout")
    url = reverse("admin:analyses_analysis_delete", args=[row.pk])
    confirm = staff_client.get(url)
    assert "its history is kept" in confirm.content.decode()
    response = staff_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    gone = ui_cluster.kubectl("get", "rolloutanalysis", "checkout", "-n", namespace, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    assert Analysis.objects.get(pk=row.pk).deleted_at is not None
    (entry,) = LogEntry.objects.filter(object_id=str(row.pk))
    assert entry.action_flag == DELETION


def test_deleting_a_resource_changed_meanwhile_is_refused(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    row = _applied(ui_cluster, namespace, "checkout")
    ui_cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(_manifest(namespace, "checkout", max_value=0.9))
    )
    response = staff_client.post(
        reverse("admin:analyses_analysis_delete", args=[row.pk]), {"post": "yes"}, follow=True
    )
    assert "Not deleted. Changed in the cluster" in response.content.decode()
    assert _get(ui_cluster, namespace, "checkout")["metadata"]["name"] == "checkout"
    assert Analysis.objects.get(pk=row.pk).deleted_at is None
    assert not LogEntry.objects.filter(object_id=str(row.pk)).exists()


def test_resuming_without_a_target_deployment_changes_nothing_and_says_so(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    # An analysis holds nothing on a target that does not exist: its resume changes nothing
    # (docs/status.md#pausing-each-kind), neither the target nor the status.
    _applied(ui_cluster, namespace, "checkout")
    row = _paused_by_the_operator(ui_cluster, namespace, "checkout")
    assert row.paused
    response = staff_client.post(
        reverse("admin:analyses_analysis_resume", args=[row.pk]), follow=True
    )
    page = response.content.decode()
    assert (
        f"Nothing to release: Deployment {namespace}/checkout was not found; nothing was changed."
        in page
    )
    remote = _get(ui_cluster, namespace, "checkout")["status"]
    paused = next(c for c in remote["conditions"] if c["type"] == "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("True", "FailureLimitReached")
    assert remote["failures"] == 3
    assert Analysis.objects.get(pk=row.pk).paused
    assert not LogEntry.objects.filter(object_id=str(row.pk)).exists()


def test_resuming_a_held_statefulset_restores_its_partition(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    """The UI's resume of the other kinds (docs/status.md#pausing-each-kind)."""
    ui_cluster.kubectl(
        "apply", "-f", "-",
        input=yaml.safe_dump(workload_manifest("StatefulSet", "db", namespace, replicas=3)),
    )  # fmt: skip
    manifest = _manifest(namespace, "db")
    manifest["spec"]["target"] = {"kind": "StatefulSet", "name": "db"}
    ui_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    client = kube_client(ui_cluster)
    statefulset = client.request("GET", kube.workload_path("StatefulSet", namespace, "db"))
    key = f"{namespace}/db"
    order = PauseTarget(namespace, "db", (key,), datetime.now(UTC), f"{key}: test", "StatefulSet")
    writes.pause(client, order, statefulset)
    row = _paused_by_the_operator(ui_cluster, namespace, "db")
    held = client.request("GET", kube.workload_path("StatefulSet", namespace, "db"))
    assert held["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 3
    response = staff_client.post(
        reverse("admin:analyses_analysis_resume", args=[row.pk]), follow=True
    )
    assert f"StatefulSet {namespace}/db is rolling out again" in response.content.decode()
    after = client.request("GET", kube.workload_path("StatefulSet", namespace, "db"))
    assert after["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 0
    assert not any(
        k.startswith("sentinel.example.com/") for k in after["metadata"].get("annotations", {})
    )


def test_pointing_an_analysis_that_holds_a_pause_elsewhere_is_refused_on_the_target_field(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    """docs/status.md#pausing-each-kind: the pause would be left behind; resume first."""
    ui_cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump(workload_manifest("Deployment", "checkout", namespace)),
    )
    row = _applied(ui_cluster, namespace, "checkout")
    client = kube_client(ui_cluster)
    deployment = client.request("GET", kube.deployment_path(namespace, "checkout"))
    key = f"{namespace}/checkout"
    writes.pause(
        client, PauseTarget(namespace, "checkout", (key,), datetime.now(UTC), "t"), deployment
    )
    data = change_form(row, target="checkout-v2")
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[row.pk]), data)
    assert response.status_code == 200
    form = response.context["adminform"].form
    message = (
        f"{key} holds a pause on Deployment {namespace}/checkout; resume it before pointing the "
        "analysis at another target, so that the pause is not left behind."
    )
    assert form.errors["target_name"] == [message]
    assert _get(ui_cluster, namespace, "checkout")["spec"]["target"]["name"] == "checkout"
    assert not LogEntry.objects.filter(object_id=str(row.pk)).exists()
