"""docs/templates.md: the operator resolves an analysis's templates, on each cluster, against
the real Prometheus.

Each test drives ``Reconciler.reconcile`` by hand. An analysis of five lines names a cluster
template with an argument and pauses its Deployment on a regression; an edit of the template
makes each analysis using it count afresh; a deleted template makes its users
``Ready=False/TemplateNotFound`` and never pauses them; each reason comes with its message.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from analyses import mirror
from sentinel_cluster import kube
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from sentinel_operator.reconcile import Reconciler
from testkit.manifests import deployment_manifest, rollout_analysis
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition
from testkit.prometheus import PrometheusServer

pytestmark = pytest.mark.django_db
_BASE = f"/apis/{kube.GROUP}/{kube.VERSION}"
_CLUSTER = f"{_BASE}/clusterrolloutanalysistemplates"


@pytest.fixture
def reconciler(kube_client: kube.KubeClient, prometheus: PrometheusServer) -> Reconciler:
    client = PrometheusClient(prometheus.url, timeout=5.0)
    return Reconciler(kube_client, Providers.single(client), rng=random.Random(7), instance="t")


@pytest.fixture
def cluster_template(
    kube_client: kube.KubeClient, namespace: str, case: str
) -> Iterator[dict[str, Any]]:
    """A ClusterRolloutAnalysisTemplate guarding the test's gauge, deleted afterwards."""
    name = f"gauge-{namespace}"
    body = {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": "ClusterRolloutAnalysisTemplate",
        "metadata": {"name": name},
        "spec": {
            "args": [{"name": "case", "description": "the gauge's case label"}],
            "metrics": [
                {
                    "name": "value",
                    "query": 'max(sentinel_test_value{case="{{ args.case }}"})',
                    "maxValue": 0.5,
                }
            ],
        },
    }
    created = kube_client.request("POST", _CLUSTER, body=body)
    yield created
    with contextlib.suppress(kube.NotFound):
        kube_client.request("DELETE", f"{_CLUSTER}/{name}")


def _deploy(client: kube.KubeClient, namespace: str) -> None:
    client.request(
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        body=deployment_manifest("checkout", namespace),
    )


def _five_lines(template: str, case: str) -> dict[str, Any]:
    # The analysis of docs/templates.md: a target, a template, an argument.
    return {
        "target": {"kind": "Deployment", "name": "checkout"},
        "templates": [{"name": template, "clusterScope": True}],
        "args": [{"name": "case", "value": case}],
    }


@dataclass(frozen=True)
class Scene:
    """The test's Deployment, a cluster template of its gauge, and the steps every test takes."""

    reconciler: Reconciler
    client: kube.KubeClient
    namespace: str
    gauge: GaugeSetter
    case: str
    # The cluster template as created, and its name.
    created: dict[str, Any]
    template: str

    def analysis(self, name: str = "ra", **changes: Any) -> None:
        """Create the analysis of five lines, with ``changes`` (None leaves a field out)."""
        spec = {**_five_lines(self.template, self.case), **changes}
        body = rollout_analysis(
            name, self.namespace, {k: v for k, v in spec.items() if v is not None}
        )
        self.client.request("POST", kube.analyses_path(self.namespace), body=body)

    def reconcile(self, name: str = "ra", times: int = 1) -> dict[str, Any]:
        """Reconcile the analysis ``times`` times; return its status."""
        for _ in range(times):
            self.reconciler.reconcile(self.namespace, name)
        return self.client.request("GET", kube.analysis_path(self.namespace, name))["status"]

    @property
    def paused(self) -> bool:
        deployment = self.client.request("GET", kube.deployment_path(self.namespace, "checkout"))
        return bool(deployment["spec"].get("paused"))


@pytest.fixture
def scene(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
    cluster_template: dict[str, Any],
) -> Scene:
    _deploy(kube_client, namespace)
    name = cluster_template["metadata"]["name"]
    return Scene(reconciler, kube_client, namespace, gauge, case, cluster_template, name)


def test_an_analysis_of_five_lines_pauses_on_a_regression(scene: Scene) -> None:
    scene.gauge(0.9)
    # The template's failureLimit and interval apply: the analysis's CRD has no default that
    # would hide them.
    scene.client.request(
        "PATCH",
        f"{_CLUSTER}/{scene.template}",
        body={"spec": {"failureLimit": 2, "interval": "1m"}},
        content_type="application/merge-patch+json",
    )
    scene.analysis()
    path = kube.analysis_path(scene.namespace, "ra")
    spec = scene.client.request("GET", path)["spec"]
    assert "failureLimit" not in spec
    # The watch mirrors the analysis as the API server keeps it: no template resolved yet.
    row, _ = mirror.upsert_from_resource(scene.client.request("GET", path))
    assert (row.interval_seconds, row.failure_limit) == (30.0, 3)
    scene.reconcile()
    assert not scene.paused
    # The reconciler's bookkeeping mirrors what its templates gave the analysis (the admin's
    # "every" and "failures x / limit"); a later write the watch mirrors keeps it.
    row.refresh_from_db()
    assert (row.interval_seconds, row.failure_limit) == (60.0, 2)
    scene.client.request(
        "PATCH",
        path,
        body={"metadata": {"labels": {"team": "checkout"}}},
        content_type="application/merge-patch+json",
    )
    row, _ = mirror.upsert_from_resource(scene.client.request("GET", path))
    assert (row.interval_seconds, row.failure_limit) == (60.0, 2)
    status = scene.reconcile()
    assert status["templates"] == [{"name": scene.template, "clusterScope": True, "generation": 2}]
    # What kubectl sees of the resolved metrics: the query with the argument in its literal.
    assert status["resolvedMetrics"] == [
        {
            "name": "value",
            "query": f'max(sentinel_test_value{{case="{scene.case}"}})',
            "maxValue": 0.5,
            "template": {"name": scene.template, "clusterScope": True},
        }
    ]
    assert status["metricResults"][0]["name"] == "value"
    assert status["metricResults"][0]["value"] == "0.9"
    assert status["failures"] == 2
    assert condition({"status": status}, "RolloutPaused")["reason"] == "FailureLimitReached"
    assert condition({"status": status}, "Ready")["status"] == "True"
    assert scene.paused


def test_a_good_rollout_is_not_paused(scene: Scene) -> None:
    scene.gauge(0.1)
    scene.analysis()
    status = scene.reconcile(times=3)
    assert (status["lastVerdict"], status["failures"]) == ("Pass", 0)
    assert not scene.paused


def test_a_template_edit_resets_the_counts_of_the_analyses_using_it(scene: Scene) -> None:
    scene.gauge(0.9)
    name = scene.template
    for analysis in ("first", "second"):
        scene.analysis(analysis)
        assert scene.reconcile(analysis, times=2)["failures"] == 2

    edited = scene.client.request("GET", f"{_CLUSTER}/{name}")
    edited["spec"]["metrics"][0]["maxValue"] = 0.6
    edited = scene.client.request("PUT", f"{_CLUSTER}/{name}", body=edited)
    assert edited["metadata"]["generation"] == 2

    for analysis in ("first", "second"):
        status = scene.reconcile(analysis)
        # Counted afresh: the evaluation after the edit is the first failure, not the third.
        assert status["failures"] == 1, analysis
        assert status["templates"] == [{"name": name, "clusterScope": True, "generation": 2}]
        assert status["metricResults"][0]["maxValue"] == 0.6
    assert not scene.paused


def test_a_deleted_template_makes_its_users_not_ready_and_never_paused(scene: Scene) -> None:
    scene.gauge(0.9)
    name = scene.template
    scene.analysis()
    scene.reconcile(times=2)
    scene.client.request("DELETE", f"{_CLUSTER}/{name}")
    status = scene.reconcile(times=3)
    ready = condition({"status": status}, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "TemplateNotFound")
    assert ready["message"] == f"ClusterRolloutAnalysisTemplate {name} not found"
    assert status["failures"] == 2  # nothing counted since
    assert status["templates"] == []
    assert condition({"status": status}, "RolloutPaused")["status"] == "False"
    assert not scene.paused

    # Created again, it is another guard under the same name and generation: counted afresh.
    body = {key: scene.created[key] for key in ("apiVersion", "kind", "spec")}
    scene.client.request("POST", _CLUSTER, body={**body, "metadata": {"name": name}})
    status = scene.reconcile()
    assert condition({"status": status}, "Ready")["status"] == "True"
    assert status["failures"] == 1
    assert status["templates"] == [{"name": name, "clusterScope": True, "generation": 1}]
    assert not scene.paused


@pytest.mark.parametrize(
    ("label", "changes", "reason", "message"),
    [
        (
            "not-found",
            {"templates": [{"name": "latency"}], "args": None},
            "TemplateNotFound",
            "RolloutAnalysisTemplate latency not found in namespace {namespace}",
        ),
        (
            "missing-argument",
            {"args": None},
            "MissingArgument",
            "ClusterRolloutAnalysisTemplate {template} needs the argument case, which spec.args "
            "does not give and the template has no default for",
        ),
        (
            "defined-twice",
            {"metrics": [{"name": "value", "query": "vector(1)", "maxValue": 2}]},
            "InvalidTemplate",
            "metric value is defined twice: by ClusterRolloutAnalysisTemplate {template} and by "
            "the analysis",
        ),
    ],
)
def test_each_reason_with_its_message_and_nothing_measured(
    scene: Scene, label: str, changes: dict[str, Any], reason: str, message: str
) -> None:
    scene.gauge(0.9)
    scene.analysis(**changes)
    status = scene.reconcile()
    ready = condition({"status": status}, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", reason)
    assert ready["message"] == message.format(namespace=scene.namespace, template=scene.template)
    assert condition({"status": status}, "Healthy")["reason"] == "NotEvaluated"
    assert status.get("failures", 0) == 0 and not status.get("metricResults")
    assert (status["templates"], status["resolvedMetrics"]) == ([], [])
    assert not scene.paused
