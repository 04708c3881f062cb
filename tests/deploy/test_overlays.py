"""deploy/ renders with the real kubectl kustomize and is accepted by an API server.

Every overlay is rendered by ``kubectl kustomize`` (client side: no server involved) and applied
with ``kubectl apply --dry-run=server`` (validated, admitted, defaulted — and nothing stored) to the
session cluster of each kind, and applied for real into a fresh cluster of each kind (``single``)
and the session clusters (``ha``, the ``deployed`` fixture). The rendered objects are checked for
what the overlays promise (docs/operations.md#the-overlays): one replica on SQLite on a volume for
``single``, several replicas on PostgreSQL and Redis for ``ha``, the same CRD as crds/, and exactly
the RBAC of docs/operations.md#two-serviceaccounts-rule-by-rule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from testkit.clusters import Cluster, NewCluster
from testkit.devcluster import DevCluster
from testkit.manifests import namespace_manifest, to_yaml
from testkit.paths import CRD_PATHS
from tests.deploy.kustomize import (
    HOME,
    OPERATOR_ACCOUNT,
    OVERLAYS,
    WEB_ACCOUNT,
    Deployed,
    for_devcluster,
    render,
)

NAMESPACED_TEAMS = ("team-a", "team-b")  # SENTINEL_NAMESPACES of deploy/overlays/namespaced

# docs/operations.md#two-serviceaccounts-rule-by-rule, one list per account.
OPERATOR_RULES = [
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses/status"],
        "verbs": ["update", "patch"],
    },
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalysistemplates", "clusterrolloutanalysistemplates"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["statefulsets", "daemonsets"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["controllerrevisions"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
]
WEB_RULES = [
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalyses/status"],
        "verbs": ["update", "patch"],
    },
    {
        "apiGroups": ["sentinel.example.com"],
        "resources": ["rolloutanalysistemplates", "clusterrolloutanalysistemplates"],
        "verbs": ["get", "list", "create", "update", "delete"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "statefulsets", "daemonsets"],
        "verbs": ["get", "patch"],
    },
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
]
LEASE_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    }
]


def _find(objects: list[dict[str, Any]], kind: str, name_prefix: str = "") -> list[dict[str, Any]]:
    return [
        o for o in objects if o["kind"] == kind and o["metadata"]["name"].startswith(name_prefix)
    ]


def _one(objects: list[dict[str, Any]], kind: str, name_prefix: str = "") -> dict[str, Any]:
    found = _find(objects, kind, name_prefix)
    assert len(found) == 1, f"{kind} {name_prefix}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def _named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)}"
    return found[0]


def _config(objects: list[dict[str, Any]]) -> dict[str, str]:
    return dict(_one(objects, "ConfigMap", "rollout-sentinel")["data"])


def _servable(cluster_kind: str, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return what the cluster of that kind serves: everything on real, less on devcluster."""
    return for_devcluster(objects) if cluster_kind == "dev" else objects


@pytest.fixture
def dry_run_cluster(kube_cluster: Cluster) -> Cluster:
    """The session cluster, holding the overlays' namespaces (whatever else it holds)."""
    # A server-side dry run stores nothing, so a namespace created by the same dry run does
    # not exist for the objects inside it — on a real API server too. Only the namespaces are
    # created for real: rollout-sentinel as the overlays have it (so a later apply agrees), and
    # those the `namespaced` overlay binds its Roles in.
    home = next(o for o in render(kube_cluster, "base") if o["kind"] == "Namespace")
    teams = [namespace_manifest(name) for name in NAMESPACED_TEAMS]
    kube_cluster.kubectl("apply", "-f", "-", input=to_yaml(home, *teams))
    return kube_cluster


def _stored(cluster: Cluster) -> dict[str, list[str]]:
    """Return every stored object of the overlays' kinds named for rollout-sentinel.

    Each as ``kind/name uid generation``: an object created, replaced or changed in its spec
    shows up as a difference. (Not the resourceVersion: on the real cluster the controllers
    write Deployment status at any time.)
    """
    kinds = {
        "crd": ["get", "crd"],
        "clusterroles": ["get", "clusterroles"],
        "clusterrolebindings": ["get", "clusterrolebindings"],
        "namespaced": [
            "get",
            "deployments,services,configmaps,serviceaccounts,roles,rolebindings,pvc,secrets",
            "--all-namespaces",
        ],
    }
    stored: dict[str, list[str]] = {}
    for key, args in kinds.items():
        items = json.loads(cluster.kubectl(*args, "-o", "json").stdout)["items"]
        stored[key] = sorted(
            f"{item['kind']}/{meta['name']} {meta['uid']} {meta.get('generation', '-')}"
            for item in items
            if "rollout-sentinel" in (meta := item["metadata"])["name"]
            or "sentinel.example.com" in meta["name"]
        )
    return stored


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_passes_server_side_dry_run_and_stores_nothing(
    cluster_kind: str, dry_run_cluster: Cluster, overlay: str
) -> None:
    cluster = dry_run_cluster
    objects = _servable(cluster_kind, render(cluster, f"overlays/{overlay}"))
    before = _stored(cluster)
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=to_yaml(*objects), check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    # One line per object, each admitted by the server (the namespace already exists).
    assert len(lines) == len(objects)
    assert all(line.endswith("(server dry run)") for line in lines), lines
    # The session cluster may hold the ``ha`` overlay already (``deployed``): the dry run
    # created, replaced and changed nothing of it.
    assert _stored(cluster) == before


def test_server_side_dry_run_really_validates(dry_run_cluster: Cluster) -> None:
    cluster = dry_run_cluster
    objects = render(cluster, "overlays/ha")
    web = _one(objects, "Deployment", "rollout-sentinel-web")
    web["spec"]["replicas"] = "three"
    before = _stored(cluster)["namespaced"]
    result = cluster.kubectl(
        "apply", "--dry-run=server", "--validate=false", "-f", "-", input=to_yaml(web), check=False
    )
    assert result.returncode != 0
    assert "replicas" in result.stderr
    assert _stored(cluster)["namespaced"] == before


def test_single_applies_for_real_into_a_fresh_cluster(
    cluster_kind: str, new_cluster: NewCluster
) -> None:
    # Fresh, because the session clusters hold the ``ha`` overlay under the same names.
    cluster = new_cluster("single")
    manifest = to_yaml(*_servable(cluster_kind, render(cluster, "overlays/single")))
    first = cluster.kubectl("apply", "-f", "-", input=manifest)
    assert "deployment.apps/rollout-sentinel-web created" in first.stdout
    assert "persistentvolumeclaim/rollout-sentinel-data created" in first.stdout
    again = cluster.kubectl("apply", "-f", "-", input=manifest)
    assert all(line.endswith(" unchanged") for line in again.stdout.strip().splitlines())
    deployments = json.loads(cluster.kubectl("get", "deploy", "-n", HOME, "-o", "json").stdout)
    names = [item["metadata"]["name"] for item in deployments["items"]]
    assert names == ["rollout-sentinel-operator", "rollout-sentinel-web"]
    # The claim sits beside the Pod that mounts it.
    assert cluster.kubectl("get", "pvc", "rollout-sentinel-data", "-n", HOME).returncode == 0


def test_ha_is_applied_for_real(deployed: Deployed) -> None:
    """The session's cluster got deploy/overlays/ha applied; it holds the result."""
    cluster = deployed.cluster
    deployments = json.loads(cluster.kubectl("get", "deploy", "-n", HOME, "-o", "json").stdout)
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments["items"]}
    assert replicas == {"rollout-sentinel-web": 3, "rollout-sentinel-operator": 2}
    assert cluster.kubectl("get", "crd", "rolloutanalyses.sentinel.example.com").returncode == 0
    again = cluster.kubectl("apply", "-f", "-", input=to_yaml(*deployed.objects))
    assert all(line.endswith(" unchanged") for line in again.stdout.strip().splitlines())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rendered_overlay_carries_the_crd_and_exactly_the_spec_rbac(
    devcluster: DevCluster, overlay: str
) -> None:
    # Rendering is kubectl's own work, client side: one run (with devcluster's kubectl) is all.
    objects = render(devcluster, f"overlays/{overlay}")
    crds = _find(objects, "CustomResourceDefinition")
    assert len(crds) == len(CRD_PATHS)
    for path in CRD_PATHS:  # the analysis's and the two templates' (docs/templates.md)
        source = yaml.safe_load(path.read_text())
        crd = _named(objects, "CustomResourceDefinition", source["metadata"]["name"])
        assert crd["spec"] == source["spec"]
        assert "namespace" not in crd["metadata"]  # cluster-scoped, whatever the base's namespace
    assert _named(objects, "ClusterRole", OPERATOR_ACCOUNT)["rules"] == OPERATOR_RULES
    assert _named(objects, "ClusterRole", WEB_ACCOUNT)["rules"][:3] == WEB_RULES[:3]
    assert _one(objects, "Role")["rules"] == LEASE_RULES
    if overlay != "namespaced":
        assert _named(objects, "ClusterRole", WEB_ACCOUNT)["rules"] == WEB_RULES
        for account in (OPERATOR_ACCOUNT, WEB_ACCOUNT):
            binding = _named(objects, "ClusterRoleBinding", account)
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": account, "namespace": HOME}
            ]
    leader = _one(objects, "RoleBinding", "rollout-sentinel-leader-election")
    assert leader["metadata"]["namespace"] == HOME
    assert leader["subjects"] == [
        {"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": HOME}
    ]
    # Everything namespaced lands in rollout-sentinel; no Secret is ever rendered.
    cluster_scoped = {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        # kustomize does not know these are cluster-scoped and stamps the namespace on them;
        # kubectl drops it (tests/deploy/test_hardening.py applies them to realcluster).
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for obj in objects:
        if obj["kind"] not in cluster_scoped and obj["metadata"]["name"] not in {
            OPERATOR_ACCOUNT,
            WEB_ACCOUNT,
        }:
            assert obj["metadata"]["namespace"] == HOME, obj["metadata"]
    assert not _find(objects, "Secret")
    for deployment in _find(objects, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        account = deployment["metadata"]["name"]  # each Deployment runs as its own account
        assert pod["serviceAccountName"] == account
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in [*pod["containers"], *pod.get("initContainers", [])]:
            # A read-only root filesystem needs a writable /tmp (metrics files, gunicorn).
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            refs = container["envFrom"]
            assert {"secretRef": {"name": HOME, "optional": True}} in refs
            config = next(ref["configMapRef"]["name"] for ref in refs if "configMapRef" in ref)
            assert config == _one(objects, "ConfigMap")["metadata"]["name"]
            # The notification channels (docs/notifications.md): a file of an optional Secret,
            # read-only.
            assert {
                "name": "notify",
                "mountPath": "/etc/rollout-sentinel/notify",
                "readOnly": True,
            } in container["volumeMounts"]
        notify = next(v for v in pod["volumes"] if v["name"] == "notify")
        assert notify["secret"] == {"secretName": "rollout-sentinel-notify", "optional": True}
    settings = _one(objects, "ConfigMap")["data"]
    assert settings["SENTINEL_NOTIFY_CONFIG"] == "/etc/rollout-sentinel/notify/notify.yaml"


def test_single_is_one_replica_each_on_sqlite_on_a_volume(devcluster: DevCluster) -> None:
    objects = render(devcluster, "overlays/single")
    deployments = {d["metadata"]["name"]: d for d in _find(objects, "Deployment")}
    assert sorted(deployments) == [OPERATOR_ACCOUNT, WEB_ACCOUNT]
    claim_name = _one(objects, "PersistentVolumeClaim")["metadata"]["name"]
    assert _one(objects, "PersistentVolumeClaim")["spec"]["accessModes"] == ["ReadWriteOnce"]
    for deployment in deployments.values():
        assert deployment["spec"]["replicas"] == 1
        # Recreate: two pods of one Deployment writing one SQLite file is never wanted.
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        pod = deployment["spec"]["template"]["spec"]
        assert len(pod["containers"]) == 1  # never the web app and the operator in one Pod
        claim = next(v for v in pod["volumes"] if v["name"] == "data")
        assert claim["persistentVolumeClaim"]["claimName"] == claim_name
        for container in [*pod["containers"], *pod.get("initContainers", [])]:
            assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    # The ReadWriteOnce volume is mountable on one node only: the operator follows the web Pod.
    affinity = deployments[OPERATOR_ACCOUNT]["spec"]["template"]["spec"]["affinity"]
    term = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["labelSelector"]["matchLabels"] == {"app.kubernetes.io/component": "web"}
    assert term["topologyKey"] == "kubernetes.io/hostname"
    config = _config(objects)
    assert config["DATABASE_URL"] == "sqlite:////data/sentinel.sqlite3"
    assert "SENTINEL_BROKER_URL" not in config  # django-q2's ORM broker on the same file


def test_ha_runs_replicas_on_postgres_and_redis(devcluster: DevCluster) -> None:
    objects = render(devcluster, "overlays/ha")
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in _find(objects, "Deployment")}
    assert replicas == {"rollout-sentinel-web": 3, "rollout-sentinel-operator": 2}
    config = _config(objects)
    # The broker URL carries the Redis password: built from a Secret in each container
    # (tests/deploy/test_hardening.py), never in the ConfigMap.
    assert "SENTINEL_BROKER_URL" not in config
    # The PostgreSQL URL carries a password: it comes from the Secret, never the ConfigMap.
    assert "DATABASE_URL" not in config
    assert not _find(objects, "PersistentVolumeClaim")
