"""deploy/ renders with the real kubectl kustomize and is accepted by an API server.

Every overlay is rendered by ``kubectl kustomize`` (client side: no server involved) and
applied with ``kubectl apply --dry-run=server`` (validated, admitted, defaulted — and nothing
stored) to the session cluster of each kind, and applied for real into a fresh cluster of each
kind (``single``) and the session clusters (``ha``, the ``deployed`` fixture). The rendered
objects are checked for what the overlays promise (SPEC §12): one replica on SQLite on a
volume for ``single``, several replicas on PostgreSQL and Redis for ``ha``, the same CRD as
crds/, and exactly SPEC §12's RBAC.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from testkit.clusters import Cluster, NewCluster
from testkit.devcluster import DevCluster
from testkit.manifests import to_yaml
from testkit.paths import CRD_PATH
from tests.deploy.kustomize import DEPLOY, HOME, OVERLAYS, Deployed, render

SPEC_RULES = [
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
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "patch"],
    },
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
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


def _config(objects: list[dict[str, Any]]) -> dict[str, str]:
    return dict(_one(objects, "ConfigMap", "rollout-sentinel")["data"])


@pytest.fixture
def dry_run_cluster(kube_cluster: Cluster) -> Cluster:
    """The session cluster, holding the overlays' namespace (whatever else it holds)."""
    # A server-side dry run stores nothing, so a namespace created by the same dry run does
    # not exist for the objects inside it — on a real API server too. Only the namespace is
    # created for real (applied as the overlays have it, so a later ``apply -k`` agrees).
    namespace = next(o for o in render(kube_cluster, "base") if o["kind"] == "Namespace")
    kube_cluster.kubectl("apply", "-f", "-", input=to_yaml(namespace))
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
            "-n",
            HOME,
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
    dry_run_cluster: Cluster, overlay: str
) -> None:
    cluster = dry_run_cluster
    objects = render(cluster, f"overlays/{overlay}")
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


def test_single_applies_for_real_into_a_fresh_cluster(new_cluster: NewCluster) -> None:
    cluster = new_cluster("single")
    # Fresh, because the session clusters hold the ``ha`` overlay under the same names.
    first = cluster.kubectl("apply", "-k", str(DEPLOY / "overlays" / "single"))
    assert "deployment.apps/rollout-sentinel-web created" in first.stdout
    assert "persistentvolumeclaim/rollout-sentinel-data created" in first.stdout
    again = cluster.kubectl("apply", "-k", str(DEPLOY / "overlays" / "single"))
    assert all(line.endswith(" unchanged") for line in again.stdout.strip().splitlines())
    deployments = json.loads(cluster.kubectl("get", "deploy", "-n", HOME, "-o", "json").stdout)
    names = [item["metadata"]["name"] for item in deployments["items"]]
    assert names == ["rollout-sentinel-web"]
    # The claim sits beside the Pod that mounts it.
    assert cluster.kubectl("get", "pvc", "rollout-sentinel-data", "-n", HOME).returncode == 0


def test_ha_is_applied_for_real(deployed: Deployed) -> None:
    """The session's cluster got ``kubectl apply -k deploy/overlays/ha``; it holds the result."""
    cluster = deployed.cluster
    deployments = json.loads(cluster.kubectl("get", "deploy", "-n", HOME, "-o", "json").stdout)
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments["items"]}
    assert replicas == {"rollout-sentinel-web": 3, "rollout-sentinel-operator": 2}
    assert cluster.kubectl("get", "crd", "rolloutanalyses.sentinel.example.com").returncode == 0
    again = cluster.kubectl("apply", "-k", str(DEPLOY / "overlays" / "ha"))
    assert all(line.endswith(" unchanged") for line in again.stdout.strip().splitlines())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rendered_overlay_carries_the_crd_and_exactly_the_spec_rbac(
    devcluster: DevCluster, overlay: str
) -> None:
    # Rendering is kubectl's own work, client side: one run (with devcluster's kubectl) is all.
    objects = render(devcluster, f"overlays/{overlay}")
    crd = _one(objects, "CustomResourceDefinition")
    source = yaml.safe_load(CRD_PATH.read_text())
    assert crd["spec"] == source["spec"]
    assert crd["metadata"]["name"] == source["metadata"]["name"]
    assert "namespace" not in crd["metadata"]  # cluster-scoped, whatever the base's namespace
    assert _one(objects, "ClusterRole")["rules"] == SPEC_RULES
    assert _one(objects, "Role")["rules"] == LEASE_RULES
    binding = _one(objects, "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": HOME, "namespace": HOME}]
    assert _one(objects, "RoleBinding")["metadata"]["namespace"] == HOME
    # Everything namespaced lands in rollout-sentinel; no Secret is ever rendered.
    for obj in objects:
        if obj["kind"] not in {"Namespace", "CustomResourceDefinition", "ClusterRole"} and (
            obj["kind"] != "ClusterRoleBinding"
        ):
            assert obj["metadata"]["namespace"] == HOME, obj["metadata"]
    assert not _find(objects, "Secret")
    for deployment in _find(objects, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == HOME
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in [*pod["containers"], *pod.get("initContainers", [])]:
            # A read-only root filesystem needs a writable /tmp (metrics files, gunicorn).
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            refs = container["envFrom"]
            assert {"secretRef": {"name": HOME, "optional": True}} in refs
            config = next(ref["configMapRef"]["name"] for ref in refs if "configMapRef" in ref)
            assert config == _one(objects, "ConfigMap")["metadata"]["name"]


def test_single_is_one_pod_on_sqlite_on_a_volume(devcluster: DevCluster) -> None:
    objects = render(devcluster, "overlays/single")
    assert [d["metadata"]["name"] for d in _find(objects, "Deployment")] == ["rollout-sentinel-web"]
    web = _one(objects, "Deployment", "rollout-sentinel-web")
    assert web["spec"]["replicas"] == 1
    # Recreate: two pods writing one SQLite file on a ReadWriteOnce volume is never wanted.
    assert web["spec"]["strategy"] == {"type": "Recreate"}
    pod = web["spec"]["template"]["spec"]
    assert sorted(c["name"] for c in pod["containers"]) == ["operator", "web"]
    assert [c["name"] for c in pod["initContainers"]] == ["migrate"]
    claim = next(v for v in pod["volumes"] if v["name"] == "data")
    assert claim["persistentVolumeClaim"]["claimName"] == "rollout-sentinel-data"
    assert _one(objects, "PersistentVolumeClaim")["spec"]["accessModes"] == ["ReadWriteOnce"]
    for container in [*pod["containers"], *pod["initContainers"]]:
        assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    config = _config(objects)
    assert config["DATABASE_URL"] == "sqlite:////data/sentinel.sqlite3"
    assert "SENTINEL_BROKER_URL" not in config  # django-q2's ORM broker on the same file


def test_ha_runs_replicas_on_postgres_and_redis(devcluster: DevCluster) -> None:
    objects = render(devcluster, "overlays/ha")
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in _find(objects, "Deployment")}
    assert replicas == {"rollout-sentinel-web": 3, "rollout-sentinel-operator": 2}
    config = _config(objects)
    assert config["SENTINEL_BROKER_URL"].startswith("redis://")
    # The PostgreSQL URL carries a password: it comes from the Secret, never the ConfigMap.
    assert "DATABASE_URL" not in config
    assert not _find(objects, "PersistentVolumeClaim")
