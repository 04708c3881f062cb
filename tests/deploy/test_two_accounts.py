"""Two ServiceAccounts (docs/security.md#what-each-account-can-touch): the web app's account can
do exactly its list, the operator's cannot do the web app's part, and the ``namespaced`` overlay
grants both only in the namespaces of ``SENTINEL_NAMESPACES``.

Tokens are minted by ``kubectl create token`` for the accounts deploy/ creates, so every answer
comes from exactly deploy/'s RBAC on the API server (the operator's own list and its run under
its token are tests/deploy/test_rbac.py).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, create_token, kube_client, kubeconfig_for_token, kubectl_apply
from testkit.devcluster import DevCluster
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric, to_yaml
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.operator import StartOperator
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.deploy.kustomize import (
    HOME,
    OPERATOR_ACCOUNT,
    WEB_ACCOUNT,
    Deployed,
    for_devcluster,
    render,
)

# The web app's list (docs/operations.md#two-serviceaccounts-rule-by-rule) as `kubectl auth can-i
# --list` prints it.
WEB_ROWS = {
    "rolloutanalyses.sentinel.example.com": [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
    ],
    "rolloutanalyses.sentinel.example.com/status": ["update", "patch"],
    # docs/api.md#templates: both template kinds, read and written for the REST API's users.
    "rolloutanalysistemplates.sentinel.example.com": ["get", "list", "create", "update", "delete"],
    "clusterrolloutanalysistemplates.sentinel.example.com": [
        "get",
        "list",
        "create",
        "update",
        "delete",
    ],
    "deployments.apps": ["get", "patch"],
    "statefulsets.apps": ["get", "patch"],
    "daemonsets.apps": ["get", "patch"],
    "subjectaccessreviews.authorization.k8s.io": ["create"],
}
# What every authenticated identity may do; not granted by deploy/.
SELF_REVIEWS = {
    "selfsubjectreviews.authentication.k8s.io": ["create"],
    "selfsubjectaccessreviews.authorization.k8s.io": ["create"],
    "selfsubjectrulesreviews.authorization.k8s.io": ["create"],
}


def _can_i_list(cluster: Cluster, token: str, namespace: str) -> dict[str, list[str]]:
    out = cluster.kubectl("auth", "can-i", "--list", "-n", namespace, token=token).stdout
    rows: dict[str, list[str]] = {}
    for line in out.splitlines()[1:]:
        verbs = re.search(r"\[([^\]]*)\]\s*$", line)
        assert verbs, line
        if not line.startswith(" "):  # resource rows; non-resource URLs are test_rbac's
            rows[line.split()[0]] = verbs.group(1).split()
    return rows


def _can(cluster: Cluster, token: str, *question: str) -> bool:
    answer = cluster.kubectl("auth", "can-i", *question, token=token, check=False)
    assert answer.stdout.strip() in {"yes", "no"}, answer.stdout + answer.stderr
    return answer.stdout.strip() == "yes"


@pytest.fixture(scope="module")
def web_token(deployed: Deployed) -> str:
    return create_token(deployed.cluster, WEB_ACCOUNT, HOME)


def _default_rows(cluster: Cluster, namespace: str) -> dict[str, list[str]]:
    """Return what a ServiceAccount bound to nothing may do: the server's own default policy.

    ``SELF_REVIEWS`` on devcluster; on the real kube-apiserver also read access to
    clustertrustbundles (1.37 binds system:cluster-trust-bundle-discovery to every
    ServiceAccount), so it is asked of the server rather than written down.
    """
    name = f"bare-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "serviceaccount", name, "-n", HOME)
    try:
        rows = _can_i_list(cluster, create_token(cluster, name, HOME), namespace)
    finally:
        cluster.kubectl("delete", "serviceaccount", name, "-n", HOME)
    assert SELF_REVIEWS.items() <= rows.items()
    # Beyond asking about itself, the default policy only ever lets an account read.
    assert all(set(v) <= {"get", "list", "watch"} for k, v in rows.items() if k not in SELF_REVIEWS)
    return rows


@pytest.mark.parametrize("namespace_", [HOME, "some-team"])
def test_web_can_i_list_is_exactly_the_spec_rbac(
    deployed: Deployed, web_token: str, namespace_: str
) -> None:
    default = _default_rows(deployed.cluster, namespace_)
    assert not set(default) & set(WEB_ROWS)
    # No leases, not even in its own namespace: only the operator elects a leader.
    assert _can_i_list(deployed.cluster, web_token, namespace_) == {**WEB_ROWS, **default}


def test_web_account_does_its_whole_list_and_nothing_else(
    deployed: Deployed, web_token: str, namespace: str, tmp_path: Path
) -> None:
    cluster = deployed.cluster
    kubectl_apply(cluster, deployment_manifest("checkout", namespace))
    analysis = analysis_manifest("checkout", namespace, metrics=[gauge_metric("web", 0.5)])

    def run(*args: str, input: str | None = None) -> str:
        result = cluster.kubectl(*args, "-n", namespace, input=input, token=web_token, check=False)
        assert result.returncode == 0, (args, result.stderr)
        return result.stdout

    run("create", "-f", "-", input=to_yaml(analysis))
    assert "checkout" in run("get", "rolloutanalyses", "-o", "name")
    run("patch", "rolloutanalysis", "checkout", "--type=merge", "-p", '{"spec":{"dryRun":true}}')
    stored = json.loads(run("get", "rolloutanalysis", "checkout", "-o", "json"))
    assert stored["spec"]["dryRun"] is True
    replaced = run("replace", "-f", "-", input=json.dumps(stored))
    assert "replaced" in replaced
    # The status subresource as the web app writes it (resume): one PATCH, no GET first —
    # `kubectl patch --subresource=status` would GET it, which the account may not.
    as_web = kube.KubeClient(
        kube.load_api_client(str(kubeconfig_for_token(cluster, web_token, tmp_path / "web")))
    )
    as_web.request(
        "PATCH",
        kube.analysis_path(namespace, "checkout") + "/status",
        body={"status": {"observedGeneration": stored["metadata"]["generation"]}},
        content_type="application/merge-patch+json",
    )
    run("patch", "deployment", "checkout", "--type=merge", "-p", '{"spec":{"paused":false}}')
    assert run("get", "deployment", "checkout", "-o", "name").strip().endswith("checkout")
    run("delete", "rolloutanalysis", "checkout")
    # Everything else is refused by the API server, here and in the operator's namespace.
    for question in (
        ("list", "deployments.apps"),
        ("update", "deployments.apps"),
        ("delete", "deployments.apps"),
        ("get", "replicasets.apps"),
        ("create", "events"),
        ("get", "secrets"),
        ("get", "configmaps"),
        ("create", "pods"),
    ):
        assert not _can(cluster, web_token, *question, "-n", namespace), question
    assert not _can(cluster, web_token, "get", "leases.coordination.k8s.io", "-n", HOME)
    failed = cluster.kubectl("get", "deployments", "-n", namespace, token=web_token, check=False)
    assert failed.returncode != 0 and "forbidden" in failed.stderr.lower()


def test_operator_account_cannot_do_the_web_apps_part(deployed: Deployed) -> None:
    token = deployed.token  # the operator's (conftest's `deployed`)
    for question in (
        ("create", "rolloutanalyses.sentinel.example.com"),
        ("update", "rolloutanalyses.sentinel.example.com"),
        ("delete", "rolloutanalyses.sentinel.example.com"),
        ("create", "subjectaccessreviews.authorization.k8s.io"),
    ):
        assert not _can(deployed.cluster, token, *question, "-n", "some-team"), question


TEAMS = ("team-a", "team-b")


@pytest.fixture(scope="module")
def namespaced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """A fresh devcluster with the ``namespaced`` overlay applied for real."""
    with DevCluster(tmp_path_factory.mktemp("namespaced-devcluster")) as cluster:
        for name in (*TEAMS, "elsewhere"):
            cluster.kubectl("create", "namespace", name)
        objects = for_devcluster(render(cluster, "overlays/namespaced"))
        cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects))
        yield cluster


def test_namespaced_lists_agree(namespaced: DevCluster) -> None:
    objects = render(namespaced, "overlays/namespaced")
    config = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    listed = config["SENTINEL_NAMESPACES"].split(",")
    assert sorted(listed) == list(TEAMS)
    for account in (OPERATOR_ACCOUNT, WEB_ACCOUNT):
        bound = sorted(
            o["metadata"]["namespace"]
            for o in objects
            if o["kind"] == "RoleBinding" and o["roleRef"]["name"] == account
        )
        assert bound == sorted(listed), account
        # No cluster-wide binding of the account's ClusterRole is left.
        assert not [
            o
            for o in objects
            if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] == account
        ]


@pytest.mark.parametrize("account", [OPERATOR_ACCOUNT, WEB_ACCOUNT])
def test_namespaced_grants_only_in_the_listed_namespaces(
    namespaced: DevCluster, account: str, tmp_path: Path
) -> None:
    token = create_token(namespaced, account, HOME)
    for team in TEAMS:
        assert _can(namespaced, token, "list", "rolloutanalyses.sentinel.example.com", "-n", team)
        assert _can(namespaced, token, "patch", "deployments.apps", "-n", team)
    for elsewhere in ("elsewhere", HOME):
        assert not _can(
            namespaced, token, "get", "rolloutanalyses.sentinel.example.com", "-n", elsewhere
        )
        assert not _can(namespaced, token, "patch", "deployments.apps", "-n", elsewhere)
    assert not _can(
        namespaced, token, "list", "rolloutanalyses.sentinel.example.com", "--all-namespaces"
    )
    # Leases in its own namespace for the operator only; reviews (cluster-scoped) for the web.
    lease = _can(namespaced, token, "update", "leases.coordination.k8s.io", "-n", HOME)
    assert lease is (account == OPERATOR_ACCOUNT)
    review = _can(namespaced, token, "create", "subjectaccessreviews.authorization.k8s.io")
    assert review is (account == WEB_ACCOUNT)


def test_namespaced_operator_reads_cluster_templates_and_nothing_else_cluster_wide(
    namespaced: DevCluster,
) -> None:
    """docs/security.md: the one cluster-wide grant of the namespaced operator is reading
    ClusterRolloutAnalysisTemplates (get, list, watch), the verbs the base grants on them."""
    objects = render(namespaced, "overlays/namespaced")
    (base_rule,) = [
        rule
        for o in render(namespaced, "base")
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == OPERATOR_ACCOUNT
        for rule in o["rules"]
        if "clusterrolloutanalysistemplates" in rule["resources"]
    ]
    cluster_wide = {
        o["roleRef"]["name"]
        for o in objects
        if o["kind"] == "ClusterRoleBinding"
        and any(s["name"] == OPERATOR_ACCOUNT for s in o["subjects"])
    }
    assert cluster_wide == {"rollout-sentinel-operator-cluster-templates"}
    (role,) = [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] in cluster_wide
    ]
    assert role["rules"] == [
        {
            "apiGroups": ["sentinel.example.com"],
            "resources": ["clusterrolloutanalysistemplates"],
            "verbs": base_rule["verbs"],
        }
    ]
    token = create_token(namespaced, OPERATOR_ACCOUNT, HOME)
    resource = "clusterrolloutanalysistemplates.sentinel.example.com"
    for verb in ("get", "list", "watch"):
        assert _can(namespaced, token, verb, resource), verb
    for verb in ("create", "update", "patch", "delete"):
        assert not _can(namespaced, token, verb, resource), verb
    assert not _can(namespaced, token, "get", "nodes")
    assert not _can(namespaced, token, "get", "namespaces")
    # Namespaced templates stay with the RoleBindings: the listed namespaces only.
    assert _can(
        namespaced, token, "get", "rolloutanalysistemplates.sentinel.example.com", "-n", "team-a"
    )
    assert not _can(
        namespaced, token, "get", "rolloutanalysistemplates.sentinel.example.com", "-n", "elsewhere"
    )


def test_namespaced_web_app_reads_cluster_templates_and_writes_only_namespaced_ones(
    namespaced: DevCluster,
) -> None:
    """docs/security.md: under the namespaced overlay the web app reads cluster templates
    cluster-wide and writes none; namespaced templates in the listed namespaces only."""
    token = create_token(namespaced, WEB_ACCOUNT, HOME)
    cluster_templates = "clusterrolloutanalysistemplates.sentinel.example.com"
    for verb in ("get", "list"):
        assert _can(namespaced, token, verb, cluster_templates), verb
    for verb in ("create", "update", "delete"):
        assert not _can(namespaced, token, verb, cluster_templates), verb
    templates = "rolloutanalysistemplates.sentinel.example.com"
    assert _can(namespaced, token, "create", templates, "-n", "team-a")
    assert not _can(namespaced, token, "create", templates, "-n", "elsewhere")
    assert not _can(namespaced, token, "list", templates, "--all-namespaces")


def test_operator_works_under_the_namespaced_rbac(
    namespaced: DevCluster,
    start_operator: StartOperator,
    prometheus: PrometheusServer,
    metrics_app: MetricsApp,
    case: str,
    tmp_path: Path,
) -> None:
    """With only RoleBindings in team-a and team-b, the operator scoped to them still pauses."""
    GaugeSetter(metrics_app, prometheus, case)(0.9)
    token = create_token(namespaced, OPERATOR_ACCOUNT, HOME)
    operator = start_operator(
        kubeconfig=kubeconfig_for_token(namespaced, token, tmp_path / "operator"),
        prometheus_url=prometheus.url,
        namespaces=list(TEAMS),
    )
    kubectl_apply(namespaced, deployment_manifest("checkout", "team-b"))
    kubectl_apply(
        namespaced,
        analysis_manifest("checkout", "team-b", metrics=[gauge_metric(case, 0.5)], failure_limit=1),
    )
    # team-a's analysis takes the same metric from a ClusterRolloutAnalysisTemplate, read
    # through the overlay's one cluster-wide grant (deploy/overlays/namespaced).
    template = "gauge-from-the-platform"
    kubectl_apply(
        namespaced,
        {
            "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
            "kind": "ClusterRolloutAnalysisTemplate",
            "metadata": {"name": template},
            "spec": {"metrics": [gauge_metric(case, 0.5)]},
        },
    )
    kubectl_apply(namespaced, deployment_manifest("checkout", "team-a"))
    from_template = analysis_manifest("checkout", "team-a", metrics=[], failure_limit=1)
    spec = from_template["spec"]
    del spec["metrics"]
    spec["templates"] = [{"name": template, "clusterScope": True}]
    kubectl_apply(namespaced, from_template)
    admin = kube_client(namespaced)

    def paused(team: str = "team-b") -> bool:
        deployment = admin.request("GET", kube.deployment_path(team, "checkout"))
        return deployment["spec"].get("paused") is True

    wait_until(paused, timeout=30, what=f"the pause under namespaced RBAC\n{operator.log}")
    wait_until(
        lambda: paused("team-a"),
        timeout=30,
        what=f"the pause by a cluster template under namespaced RBAC\n{operator.log}",
    )
    lease = admin.request("GET", kube.lease_path(HOME, operator.lease_name))
    assert lease["spec"]["holderIdentity"] == operator.identity
    assert "refused" not in operator.log and "Forbidden" not in operator.log, operator.log
