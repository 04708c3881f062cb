"""The operator under deploy/'s RBAC works; with a verb missing it says so, without crashing.

The ``ha`` overlay is applied for real to the session cluster of each kind (``deployed``
fixture: devcluster's RBAC authorizer, and the real kube-apiserver's); the operator runs as
``python manage.py runoperator`` with a kubeconfig holding the token minted by ``kubectl create
token rollout-sentinel-operator -n rollout-sentinel`` — so every request it makes is
authorized by exactly the ClusterRole, Role and bindings of deploy/base/rbac.yaml.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import create_token, kubeconfig_for_token, kubectl_apply
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric, to_yaml
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.observe import condition, events_for, wait_rows
from testkit.operator import OperatorProcess, StartOperator
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.deploy.kustomize import HOME, OPERATOR_ACCOUNT, Deployed, render

# The operator's list (docs/operations.md#two-serviceaccounts-rule-by-rule) as `kubectl auth can-i
# --list` prints it.
SPEC_ROWS = {
    "rolloutanalyses.sentinel.example.com": ["get", "list", "watch"],
    "rolloutanalyses.sentinel.example.com/status": ["update", "patch"],
    # docs/templates.md: the templates an analysis names, listed and watched into its caches.
    "rolloutanalysistemplates.sentinel.example.com": ["get", "list", "watch"],
    "clusterrolloutanalysistemplates.sentinel.example.com": ["get", "list", "watch"],
    "deployments.apps": ["get", "list", "watch", "patch"],
    "replicasets.apps": ["get", "list", "watch"],
    "statefulsets.apps": ["get", "list", "watch", "patch"],
    "daemonsets.apps": ["get", "list", "watch", "patch"],
    "controllerrevisions.apps": ["get", "list", "watch"],
    "events": ["create", "patch"],
    "events.events.k8s.io": ["create", "patch"],
}
LEASE_ROW = {"leases.coordination.k8s.io": ["get", "create", "update"]}
# What every authenticated identity may do on both servers (system:basic-user): ask the API
# server about itself. Not granted by deploy/.
SELF_REVIEWS = {
    "selfsubjectreviews.authentication.k8s.io": ["create"],
    "selfsubjectaccessreviews.authorization.k8s.io": ["create"],
    "selfsubjectrulesreviews.authorization.k8s.io": ["create"],
}


def _can_i_list(
    deployed: Deployed, token: str, namespace: str
) -> tuple[dict[str, list[str]], set[str]]:
    """Return the resource rows and the verbs on non-resource URLs of ``can-i --list``."""
    out = deployed.cluster.kubectl("auth", "can-i", "--list", "-n", namespace, token=token).stdout
    resources: dict[str, list[str]] = {}
    url_verbs: set[str] = set()
    for line in out.splitlines()[1:]:
        verbs = re.search(r"\[([^\]]*)\]\s*$", line)
        assert verbs, line
        verb_list = verbs.group(1).split()
        if line.startswith(" "):  # a non-resource URL row
            url_verbs.update(verb_list)
        else:
            resources[line.split()[0]] = verb_list
    return resources, url_verbs


def _baseline(deployed: Deployed, namespace: str) -> dict[str, list[str]]:
    """Return what a ServiceAccount bound to nothing may do: the server's own default policy.

    That is more than ``SELF_REVIEWS`` on the real kube-apiserver (1.37 binds
    system:cluster-trust-bundle-discovery, read access to clustertrustbundles, to every
    ServiceAccount), so it is asked of the server rather than written down.
    """
    name = f"bare-{uuid.uuid4().hex[:8]}"
    deployed.cluster.kubectl("create", "serviceaccount", name, "-n", HOME)
    try:
        token = create_token(deployed.cluster, name, HOME)
        resources, _ = _can_i_list(deployed, token, namespace)
    finally:
        deployed.cluster.kubectl("delete", "serviceaccount", name, "-n", HOME)
    return resources


@pytest.mark.parametrize("namespace_", [HOME, "some-team"])
def test_can_i_list_is_exactly_the_spec_rbac(deployed: Deployed, namespace_: str) -> None:
    baseline = _baseline(deployed, namespace_)
    # The default policy lets anyone ask about themselves and, beyond that, only read.
    assert SELF_REVIEWS.items() <= baseline.items()
    assert all(
        set(verbs) <= {"get", "list", "watch"}
        for resource, verbs in baseline.items()
        if resource not in SELF_REVIEWS
    ), baseline
    assert not set(baseline) & set(SPEC_ROWS)
    resources, url_verbs = _can_i_list(deployed, deployed.token, namespace_)
    expected = {**SPEC_ROWS, **baseline}
    if namespace_ == HOME:
        expected.update(LEASE_ROW)  # leases only where the operator keeps its Lease
    assert resources == expected
    assert url_verbs == {"get"}  # discovery, /version, /healthz: read-only
    # And the server agrees verb by verb on what is missing.
    for question in (
        ["delete", "deployments.apps"],
        ["update", "deployments.apps"],
        ["get", "secrets"],
        ["list", "configmaps"],
        ["delete", "leases.coordination.k8s.io"],
    ):
        answer = deployed.cluster.kubectl(
            "auth", "can-i", *question, "-n", namespace_, token=deployed.token, check=False
        )
        assert answer.stdout.strip() == "no", question


@pytest.fixture
def gauge(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str) -> GaugeSetter:
    return GaugeSetter(metrics_app, prometheus, case)


def _setup_analysis(deployed: Deployed, namespace: str, case: str, **kwargs: Any) -> str:
    kubectl_apply(deployed.cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(
        deployed.cluster,
        analysis_manifest("checkout", namespace, metrics=[gauge_metric(case, 0.5)], **kwargs),
    )
    return kube.analysis_path(namespace, "checkout")


def test_operator_works_under_the_deploy_rbac(
    deployed: Deployed,
    start_operator: StartOperator,
    prometheus: PrometheusServer,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    operator = start_operator(
        kubeconfig=deployed.kubeconfig, prometheus_url=prometheus.url, namespaces=[namespace]
    )
    path = _setup_analysis(deployed, namespace, case, failure_limit=1)
    admin = deployed.admin

    def paused() -> dict[str, Any] | None:
        resource = admin.request("GET", path)
        return resource if condition(resource, "RolloutPaused").get("status") == "True" else None

    resource = wait_until(paused, timeout=20, what=f"RolloutPaused=True\n{operator.log}")
    assert resource["status"]["lastVerdict"] == "Fail"
    assert condition(resource, "Ready")["reason"] == "Evaluating"
    deployment = admin.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"]["paused"] is True
    assert deployment["metadata"]["annotations"]["sentinel.example.com/paused-by"] == (
        f"{namespace}/checkout"
    )
    wait_until(
        lambda: (
            [e["reason"] for e in events_for(admin, namespace, "checkout")] == ["RolloutPaused"]
        ),
        timeout=5,
        what="the RolloutPaused event",
    )
    # The Lease, in the operator's own namespace, held by this process.
    lease = admin.request("GET", kube.lease_path(HOME, operator.lease_name))
    assert lease["spec"]["holderIdentity"] == operator.identity
    assert operator.metric("sentinel_leader") == 1.0
    # The history row is written after the status and the event.
    rows = wait_rows(operator, namespace, "checkout", bool, timeout=5, what="a history row")
    assert rows[0]["outcome"] == "Fail" and rows[0]["paused"]
    assert "refused" not in operator.log and "Forbidden" not in operator.log


@pytest.fixture
def crippled_identity(deployed: Deployed, tmp_path: Path) -> Iterator[Any]:
    """Return ``make(resource, verb)``: a ServiceAccount bound to deploy's RBAC minus one verb.

    The ClusterRole is the rendered one with that verb removed from that rule; the leader
    election Role of deploy/ is bound unchanged. The real ``rollout-sentinel`` objects are left
    alone, and everything made here is deleted afterwards.
    """
    made: list[tuple[str, ...]] = []
    rendered = render(deployed.cluster, "base")

    def make(resource: str, verb: str) -> Path:
        name = f"crippled-{uuid.uuid4().hex[:8]}"
        role = next(
            o
            for o in rendered
            if o["kind"] == "ClusterRole" and o["metadata"]["name"] == OPERATOR_ACCOUNT
        )
        rules = [dict(rule) for rule in role["rules"]]
        target = next(rule for rule in rules if rule["resources"] == [resource])
        assert verb in target["verbs"]
        target["verbs"] = [v for v in target["verbs"] if v != verb]
        subject = {"kind": "ServiceAccount", "name": name, "namespace": HOME}
        objects = [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": HOME},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [subject],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": HOME},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "rollout-sentinel-leader-election",
                },
                "subjects": [subject],
            },
        ]
        deployed.cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects))
        made.append(("clusterrolebinding", name))
        made.append(("clusterrole", name))
        made.append(("rolebinding", name, "-n", HOME))
        made.append(("serviceaccount", name, "-n", HOME))
        token = create_token(deployed.cluster, name, HOME)
        denied = deployed.cluster.kubectl(
            "auth",
            "can-i",
            verb,
            resource.replace("/status", "") + _group(resource),
            *(["--subresource=status"] if resource.endswith("/status") else []),
            token=token,
            check=False,
        )
        assert denied.stdout.strip() == "no"
        return kubeconfig_for_token(deployed.cluster, token, tmp_path / f"{name}.kubeconfig")

    try:
        yield make
    finally:
        for args in made:
            deployed.cluster.kubectl("delete", *args, check=False)


def _group(resource: str) -> str:
    return ".apps" if resource == "deployments" else ".sentinel.example.com"


def _forbidden_rows(operator: OperatorProcess, namespace: str) -> list[dict[str, Any]]:
    return [
        row
        for row in operator.evaluations(namespace, "checkout")
        if row["error_reason"] == "KubernetesForbidden"
    ]


def _started(row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(row["started_at"]))


def test_missing_deployment_patch_is_reported_and_backed_off(
    deployed: Deployed,
    # Before start_operator: set up first, so torn down last, after the operator has stopped
    # (it releases its Lease with the identity it still has).
    crippled_identity: Any,
    start_operator: StartOperator,
    prometheus: PrometheusServer,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    kubeconfig = crippled_identity("deployments", "patch")
    gauge(0.9)
    operator = start_operator(
        kubeconfig=kubeconfig, prometheus_url=prometheus.url, namespaces=[namespace]
    )
    path = _setup_analysis(deployed, namespace, case, failure_limit=1, interval="5s")

    # The pause is refused three times; the gaps grow (5 s, then 10 s) instead of the 5 s cadence.
    rows = wait_until(
        lambda: (found := _forbidden_rows(operator, namespace)) and len(found) >= 3 and found,
        timeout=40,
        interval=0.5,
        what=f"three refused pauses\n{operator.log}",
    )
    first_gap = (_started(rows[1]) - _started(rows[0])).total_seconds()
    second_gap = (_started(rows[2]) - _started(rows[1])).total_seconds()
    print(f"backoff between refused attempts: {first_gap:.1f} s, {second_gap:.1f} s")
    # Backoff 5 s then 10 s (±10 % jitter), each plus the dispatch and reconcile time.
    assert 4.0 <= first_gap <= 9.0
    assert second_gap >= first_gap + 2.0
    assert all(row["outcome"] == "Error" and not row["paused"] for row in rows)
    assert "deployments" in rows[0]["error_message"] and "patch" in rows[0]["error_message"]

    # One clear line per attempt naming the refused request; the process never died.
    refusals = [line for line in operator.log.splitlines() if "refused a request" in line]
    assert refusals, operator.log
    assert "check the operator's RBAC" in refusals[0]
    assert 'cannot patch resource "deployments"' in refusals[0]
    assert operator.running
    assert "Traceback" not in operator.log

    # Nothing was paused; no status claims a pause the cluster does not show.
    deployment = deployed.admin.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"].get("paused") is not True
    resource = deployed.admin.request("GET", path)
    assert condition(resource, "RolloutPaused").get("status") != "True"


def test_missing_status_update_is_reported_without_crashing(
    deployed: Deployed,
    # Before start_operator: set up first, so torn down last, after the operator has stopped
    # (it releases its Lease with the identity it still has).
    crippled_identity: Any,
    start_operator: StartOperator,
    prometheus: PrometheusServer,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    kubeconfig = crippled_identity("rolloutanalyses/status", "update")
    gauge(0.1)
    operator = start_operator(
        kubeconfig=kubeconfig, prometheus_url=prometheus.url, namespaces=[namespace]
    )
    path = _setup_analysis(deployed, namespace, case, interval="5s")

    rows = wait_until(
        lambda: _forbidden_rows(operator, namespace),
        timeout=20,
        interval=0.2,
        what=f"a refused status write\n{operator.log}",
    )
    assert rows[0]["outcome"] == "Error"
    assert "rolloutanalyses/status" in rows[0]["error_message"]
    refusals = [line for line in operator.log.splitlines() if "refused a request" in line]
    assert refusals and 'cannot update resource "rolloutanalyses/status"' in refusals[0], (
        operator.log
    )
    assert operator.running and "Traceback" not in operator.log
    # The status could not be written, and was not.
    assert "status" not in deployed.admin.request("GET", path)
    assert (operator.metric("sentinel_reconciles_total", {"result": "forbidden"}) or 0) >= 1.0
