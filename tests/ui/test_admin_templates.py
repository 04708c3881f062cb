"""The admin's template pages (docs/templates.md): both kinds listed from the cluster, a page per
template with the analyses using it, its spec edited in the cluster; an analysis's page lists
the metrics evaluated and where each came from.

On the UI's devcluster (its fault hook plays the unreachable cluster); the REST API's template
tests check the same service on the real kube-apiserver.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from analyses import mirror
from analyses.models import Analysis
from testkit.devcluster import DevCluster
from testkit.manifests import ra_manifest
from tests.api.authz_setup import use_mode
from tests.ui import factories

pytestmark = pytest.mark.django_db


def _template_spec(max_value: float) -> dict[str, Any]:
    return {
        "description": "Share of 5xx responses.",
        "args": [{"name": "service", "description": "the service label"}],
        "metrics": [
            {
                "name": "error-rate",
                "query": 'sum(rate(http_requests_total{service="{{ args.service }}"}[5m]))',
                "maxValue": max_value,
            }
        ],
    }


def _cratmpl(cluster: DevCluster, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "cratmpl", name, "-o", "json").stdout
    return dict(json.loads(out))


def _apply(cluster: DevCluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


def _user_of(cluster: DevCluster, namespace: str, template: str) -> Analysis:
    """An analysis naming the cluster template, mirrored with the status the operator writes."""
    manifest = ra_manifest("checkout", namespace)
    manifest["spec"].update(
        templates=[{"name": template, "clusterScope": True}],
        args=[{"name": "service", "value": "checkout"}],
    )
    _apply(cluster, manifest)
    found = json.loads(
        cluster.kubectl("get", "ra", "checkout", "-n", namespace, "-o", "json").stdout
    )
    resolved = {
        "name": "error-rate",
        "query": 'sum(rate(http_requests_total{service="checkout"}[5m]))',
        "maxValue": 0.01,
        "template": {"name": template, "clusterScope": True},
    }
    found["status"] = {
        **factories.status(),
        "templates": [{"name": template, "clusterScope": True, "generation": 1}],
        "resolvedMetrics": [resolved, {"name": "p99-latency", "query": "up", "maxValue": 0.25}],
    }
    row, _ = mirror.upsert_from_resource(found)
    return row


def test_templates_listed_shown_with_their_users_and_edited_in_the_cluster(
    staff_client: Client,
    viewer_client: Client,
    ui_cluster: DevCluster,
    namespace: str,
    settings: Settings,
) -> None:
    cluster_name = f"errors-{namespace}"
    _apply(
        ui_cluster,
        {
            "apiVersion": "sentinel.example.com/v1alpha1",
            "kind": "ClusterRolloutAnalysisTemplate",
            "metadata": {"name": cluster_name},
            "spec": _template_spec(0.01),
        },
        {
            "apiVersion": "sentinel.example.com/v1alpha1",
            "kind": "RolloutAnalysisTemplate",
            "metadata": {"name": "latency", "namespace": namespace},
            "spec": {**_template_spec(0.5), "description": "p99 of a service", "interval": "1m"},
        },
    )
    try:
        analysis = _user_of(ui_cluster, namespace, cluster_name)

        # The list: both kinds, read from the cluster, each with how many analyses use it.
        page = staff_client.get(reverse("admin:analyses_templates"))
        assert page.status_code == 200
        rows = {row.name: row for row in page.context["cluster_rows"]}
        assert rows[cluster_name].used_by == 1
        assert rows[cluster_name].args == ("service",)
        (mine,) = [r for r in page.context["namespaced_rows"] if r.namespace == namespace]
        assert (mine.name, mine.description, mine.used_by) == ("latency", "p99 of a service", 0)
        listed = staff_client.get(reverse("admin:analyses_analysis_changelist"))
        assert reverse("admin:analyses_templates") in listed.content.decode()

        # A template's page: the analyses using it, and the generation each resolved.
        url = reverse("admin:analyses_clustertemplate", args=[cluster_name])
        page = staff_client.get(url)
        assert page.status_code == 200
        (user,) = page.context["users"]
        assert (user.analysis.pk, user.generation) == (analysis.pk, 1)
        form = page.context["form"]
        version = form.initial["resource_version"]
        assert yaml.safe_load(form.initial["spec"]) == _template_spec(0.01)

        # Refusals are one message on the form, the user's text kept, nothing written.
        edited = yaml.safe_dump(_template_spec(0.02))
        stale = staff_client.post(url, {"spec": edited, "resource_version": "1"})
        assert stale.status_code == 200
        (message,) = stale.context["form"].non_field_errors()
        assert message.startswith("Not saved. Changed in the cluster:")
        assert stale.context["form"]["spec"].value() == edited
        invalid = yaml.safe_dump({**_template_spec(0.02), "metrics": []})
        refused = staff_client.post(url, {"spec": invalid, "resource_version": version})
        (message,) = refused.context["form"].non_field_errors()
        assert message.startswith("Not saved.") and "spec.metrics" in message, message
        assert (
            "Not YAML"
            in staff_client.post(url, {"spec": "a: [", "resource_version": ""})
            .context["form"]
            .errors["spec"][0]
        )
        ui_cluster.inject_fault(
            path_regex="clusterrolloutanalysistemplates", methods=["PUT"], status=503
        )
        try:
            down = staff_client.post(url, {"spec": edited, "resource_version": version})
        finally:
            ui_cluster.clear_faults()
        (message,) = down.context["form"].non_field_errors()
        assert message.startswith("Not saved. Cluster unreachable"), message
        assert _cratmpl(ui_cluster, cluster_name)["metadata"]["generation"] == 1

        saved = staff_client.post(url, {"spec": edited, "resource_version": version})
        assert saved.status_code == 302 and saved["Location"] == url
        stored = _cratmpl(ui_cluster, cluster_name)
        assert stored["metadata"]["generation"] == 2
        assert stored["spec"]["metrics"][0]["maxValue"] == 0.02
        page = staff_client.get(url).content.decode()
        assert "not the current 2" in page

        # Who may not write cluster templates reads it, with no form, and a POST is refused.
        page = viewer_client.get(url)
        assert page.status_code == 200 and page.context["form"] is None
        assert "error-rate" in page.content.decode()
        assert viewer_client.post(url, {"spec": edited}).status_code == 403
        ns_url = reverse("admin:analyses_template", args=[namespace, "latency"])
        assert viewer_client.get(ns_url).context["form"] is None
        assert staff_client.get(ns_url).context["form"] is not None
        assert (
            staff_client.get(
                reverse("admin:analyses_template", args=[namespace, "nosuch"])
            ).status_code
            == 404
        )

        # The analysis page: each metric evaluated, and where it came from.
        page = staff_client.get(reverse("admin:analyses_analysis_change", args=[analysis.pk]))
        rows = page.context["resolved_metrics"]
        assert [(r.name, r.origin, r.url) for r in rows] == [
            ("error-rate", f"ClusterRolloutAnalysisTemplate {cluster_name}", url),
            ("p99-latency", "this analysis", ""),
        ]
        assert 'service="checkout"' in rows[0].reads
        assert 'id="resolved-metrics"' in page.content.decode()

        # With SENTINEL_AUTHZ=kubernetes the cluster's RBAC decides, not the superuser flag:
        # bound to nothing, the superuser reads the cluster template and may not edit it.
        use_mode(settings, "kubernetes")
        assert staff_client.get(url).context["form"] is None
        assert staff_client.post(url, {"spec": edited}).status_code == 403
    finally:
        ui_cluster.kubectl("delete", "cratmpl", cluster_name, "--ignore-not-found")


def test_a_template_edit_without_the_csrf_token_is_refused(
    superuser: User, ui_cluster: DevCluster, namespace: str
) -> None:
    _apply(
        ui_cluster,
        {
            "apiVersion": "sentinel.example.com/v1alpha1",
            "kind": "RolloutAnalysisTemplate",
            "metadata": {"name": "latency", "namespace": namespace},
            "spec": _template_spec(0.5),
        },
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(superuser)
    url = reverse("admin:analyses_template", args=[namespace, "latency"])
    assert 'name="csrfmiddlewaretoken"' in client.get(url).content.decode()
    response = client.post(url, {"spec": yaml.safe_dump(_template_spec(0.9))})
    assert response.status_code == 403
    found = ui_cluster.kubectl("get", "ratmpl", "latency", "-n", namespace, "-o", "json").stdout
    assert json.loads(found)["metadata"]["generation"] == 1
