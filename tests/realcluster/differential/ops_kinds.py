"""Apply, get and patch (merge, JSON, strategic) every kind the product uses.

Each kind goes through the same eight steps, with kubectl and the official client taking
turns: ``kubectl create`` (-o json), the Python client's GET, ``kubectl patch --type=merge``,
a JSON patch through the client, ``kubectl patch`` (strategic merge, kubectl's default; a
custom resource refuses it with 415), ``kubectl apply`` of a changed manifest (a three-way
patch computed from the last-applied annotation), ``kubectl get -o wide`` and the Table
the client gets for the object (what kubectl prints from).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import kubernetes.client

from tests.realcluster.differential import manifests as m
from tests.realcluster.differential.runner import JSON_PATCH, TABLE, Script, Session

script = Script()


@dataclass(frozen=True)
class Kind:
    """One kind, the object of it the script writes, and the three patches it sends."""

    kind: str
    resource: str  # kubectl's name for the resource type
    path: str  # the REST collection
    manifest: dict[str, Any]
    merge: dict[str, Any]
    json_patch: list[dict[str, Any]]
    strategic: dict[str, Any]
    changed: dict[str, Any]  # applied again after the patches

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"].get("name", ""))

    @property
    def namespace(self) -> list[str]:
        ns = self.manifest["metadata"].get("namespace")
        return ["-n", ns] if ns else []


def _with(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**obj, **changes}


def _labels(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta["labels"] = {**meta.get("labels", {}), **labels}
    return {**obj, "metadata": meta}


CRD = m.rollout_analysis("guard")
DEPLOY = m.deployment("checkout")
STS = m.workload("StatefulSet", "db")
DS = m.workload("DaemonSet", "agent")
# What the pause and the release of these kinds write (docs/status.md#pausing-each-kind).
HOLD = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}
LEASE = m.lease("sentinel-leader")
ROLE = m.role("sentinel-operator")
CLUSTER_ROLE = m.cluster_role("sentinel-reader")
ANNOTATE = [{"op": "add", "path": "/metadata/annotations", "value": {"sentinel/step": "json"}}]

KINDS = [
    Kind(
        "Namespace",
        "namespace",
        "/api/v1/namespaces",
        m.namespace(m.NS_B, team="sentinel"),
        {"metadata": {"labels": {"tier": "one"}}},
        ANNOTATE,
        {"metadata": {"labels": {"tier": "two"}}},
        _labels(m.namespace(m.NS_B, team="sentinel"), applied="again"),
    ),
    Kind(
        "ConfigMap",
        "configmap",
        f"/api/v1/namespaces/{m.NS}/configmaps",
        m.config_map("settings", app="sentinel"),
        {"data": {"mode": "observe", "interval": None}},
        [{"op": "add", "path": "/data/extra", "value": "1"}, *ANNOTATE],
        {"data": {"mode": "guard"}},
        _with(m.config_map("settings", app="sentinel"), data={"mode": "applied"}),
    ),
    Kind(
        "Secret",
        "secret",
        f"/api/v1/namespaces/{m.NS}/secrets",
        m.secret("prometheus-auth"),
        {"stringData": {"token": "abc"}},
        [{"op": "replace", "path": "/data/user", "value": "YWRtaW4="}],
        {"data": {"user": None}},
        _with(m.secret("prometheus-auth"), stringData={"password": "changed"}),
    ),
    Kind(
        "ServiceAccount",
        "serviceaccount",
        f"/api/v1/namespaces/{m.NS}/serviceaccounts",
        m.service_account(m.SA),
        {"metadata": {"labels": {"tier": "one"}}},
        ANNOTATE,
        {"automountServiceAccountToken": False},
        _labels(m.service_account(m.SA), applied="again"),
    ),
    Kind(
        "Deployment",
        "deployment",
        f"/apis/apps/v1/namespaces/{m.NS}/deployments",
        DEPLOY,
        {"spec": {"replicas": 3}},
        [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}],
        # Containers merge by name: only the sidecar changes, the app container stays.
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "b:2"}]}}}},
        _labels(DEPLOY, applied="again"),
    ),
    Kind(
        "StatefulSet",
        "statefulset",
        f"/apis/apps/v1/namespaces/{m.NS}/statefulsets",
        STS,
        HOLD,
        [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}],
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "b:2"}]}}}},
        _labels(STS, applied="again"),
    ),
    Kind(
        "DaemonSet",
        "daemonset",
        f"/apis/apps/v1/namespaces/{m.NS}/daemonsets",
        DS,
        {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}},
        [{"op": "replace", "path": "/spec/updateStrategy", "value": {"type": "RollingUpdate"}}],
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "b:2"}]}}}},
        _labels(DS, applied="again"),
    ),
    Kind(
        "RolloutAnalysis",
        "rolloutanalysis",
        m.ra_path(),
        CRD,
        {"spec": {"failureLimit": 5}},
        [{"op": "replace", "path": "/spec/interval", "value": "1m"}],
        {"spec": {"dryRun": True}},
        _labels(CRD, applied="again"),
    ),
    Kind(
        "Lease",
        "lease",
        f"/apis/coordination.k8s.io/v1/namespaces/{m.NS}/leases",
        LEASE,
        {"spec": {"holderIdentity": "sentinel-1"}},
        [{"op": "replace", "path": "/spec/leaseTransitions", "value": 1}],
        {"spec": {"renewTime": "2026-11-30T10:00:20.654321Z"}},
        _with(LEASE, spec={**LEASE["spec"], "holderIdentity": "sentinel-2"}),
    ),
    Kind(
        "Role",
        "role",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{m.NS}/roles",
        ROLE,
        {"metadata": {"labels": {"tier": "one"}}},
        [{"op": "add", "path": "/rules/0/verbs/-", "value": "update"}],
        {"rules": ROLE["rules"]},
        _labels(ROLE, applied="again"),
    ),
    Kind(
        "RoleBinding",
        "rolebinding",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{m.NS}/rolebindings",
        m.role_binding("sentinel-operator", "Role", "sentinel-operator"),
        {"metadata": {"labels": {"tier": "one"}}},
        # roleRef is immutable: the server must refuse this one.
        [{"op": "replace", "path": "/roleRef/name", "value": "other"}],
        {"metadata": {"labels": {"tier": "two"}}},
        _labels(m.role_binding("sentinel-operator", "Role", "sentinel-operator"), applied="again"),
    ),
    Kind(
        "ClusterRole",
        "clusterrole",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        CLUSTER_ROLE,
        {"metadata": {"labels": {"tier": "one"}}},
        [{"op": "add", "path": "/rules/0/verbs/-", "value": "watch"}],
        {"rules": CLUSTER_ROLE["rules"]},
        _labels(CLUSTER_ROLE, applied="again"),
    ),
    Kind(
        "ClusterRoleBinding",
        "clusterrolebinding",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        m.cluster_role_binding("sentinel-reader", "sentinel-reader"),
        {"metadata": {"labels": {"tier": "one"}}},
        ANNOTATE,
        {"subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]},
        m.cluster_role_binding("sentinel-reader", "sentinel-reader"),
    ),
]


def _register(kind: Kind) -> None:
    ref = f"{kind.resource}/{kind.name}"

    @script.op(f"{kind.kind}: kubectl create")
    def create(s: Session) -> Any:
        # --save-config: the apply step below then computes a three-way patch, as for a
        # user who applied the object in the first place.
        manifest = m.to_yaml(kind.manifest)
        return s.kubectl(
            "create", "--save-config", "-f", "-", "-o", "json", input=manifest, out="json"
        )

    @script.op(f"{kind.kind}: python get")
    def get(s: Session) -> Any:
        return s.raw("GET", f"{kind.path}/{kind.name}")

    @script.op(f"{kind.kind}: kubectl patch --type=merge")
    def merge(s: Session) -> Any:
        patch = json.dumps(kind.merge)
        return s.kubectl(
            "patch", ref, *kind.namespace, "--type=merge", "-p", patch, "-o", "json", out="json"
        )

    @script.op(f"{kind.kind}: python patch json")
    def json_patch(s: Session) -> Any:
        path = f"{kind.path}/{kind.name}"
        return s.raw("PATCH", path, body=kind.json_patch, content_type=JSON_PATCH)

    @script.op(f"{kind.kind}: kubectl patch strategic")
    def strategic(s: Session) -> Any:
        patch = json.dumps(kind.strategic)
        return s.kubectl("patch", ref, *kind.namespace, "-p", patch, "-o", "json", out="json")

    if kind.kind == "StatefulSet":

        @script.op(f"{kind.kind}: status held by its partition")
        def held(s: Session) -> Any:
            # Two new templates under partition 2 of 2 replicas: no pod may be replaced, the
            # update revision differs from the current one until the apply below reverts them.
            return _status(s, kind)

    @script.op(f"{kind.kind}: kubectl apply")
    def apply(s: Session) -> Any:
        return s.kubectl(
            "apply", "-f", "-", "-o", "json", input=m.to_yaml(kind.changed), out="json"
        )

    @script.op(f"{kind.kind}: kubectl get (table)")
    def table(s: Session) -> Any:
        _rolled_out(s, kind)
        return s.kubectl("get", ref, *kind.namespace, "-o", "wide", out="table")

    @script.op(f"{kind.kind}: python get as Table")
    def table_json(s: Session) -> Any:
        return s.raw("GET", f"{kind.path}/{kind.name}", accept=TABLE)

    if kind.kind in ("StatefulSet", "DaemonSet"):

        @script.op(f"{kind.kind}: status once rolled out")
        def status(s: Session) -> Any:
            return _status(s, kind)


for _kind in KINDS:
    _register(_kind)


ROLLOUT_TIMEOUT = 30.0


def _status(s: Session, kind: Kind) -> dict[str, Any]:
    """Return the status devcluster plays or the real controller wrote, once it finished.

    A revision's name is each server's own hash of the template: only which role it plays
    (``_revisions_masked``) is compared.
    """
    _rolled_out(s, kind)
    s.raw("GET", f"{kind.path}/{kind.name}", keep=True)
    return _revisions_masked(kind.name, dict(s.memo["last"]["status"]))


def _revisions_masked(name: str, status: dict[str, Any]) -> dict[str, Any]:
    """Return a StatefulSet's status with its revisions' names as the roles they play."""
    names = {"<current>": status.get("currentRevision"), "<update>": status.get("updateRevision")}
    for key in ("currentRevision", "updateRevision"):
        value = status.get(key)
        if isinstance(value, str) and value.startswith(f"{name}-"):
            status[key] = next(role for role, known in names.items() if known == value)
    return status


def _rolled_out(s: Session, kind: Kind) -> None:
    """Wait until a workload's controller has finished the rollout the apply began.

    The table prints the status the controllers write: devcluster completes a rollout as it
    answers, the real controllers a moment later (their pods run on kwok's node). A
    StatefulSet held by its partition rolls no pod: its pods are all ready at the old revision.
    """
    read = _STATUS.get(kind.kind)
    if read is None:
        return
    apps = kubernetes.client.AppsV1Api(s.client())
    deadline = time.monotonic() + ROLLOUT_TIMEOUT
    while True:
        found = read(apps, kind.name)
        caught_up = (found.status.observed_generation or 0) >= (found.metadata.generation or 0)
        if caught_up and _done(found):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{kind.name} not rolled out within {ROLLOUT_TIMEOUT} s")
        time.sleep(0.1)


def _done(found: Any) -> bool:
    status = found.status
    if isinstance(found, kubernetes.client.V1DaemonSet):
        wanted = status.desired_number_scheduled
        counts = (status.number_ready, status.updated_number_scheduled, status.number_available)
        return bool(wanted) and all(count == wanted for count in counts)
    wanted = found.spec.replicas
    if isinstance(found, kubernetes.client.V1StatefulSet):
        return status.replicas == wanted and status.ready_replicas == wanted
    return all(
        count == wanted
        for count in (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas,
        )
    )


_STATUS = {
    "Deployment": lambda apps, name: apps.read_namespaced_deployment(name, m.NS),
    "StatefulSet": lambda apps, name: apps.read_namespaced_stateful_set(name, m.NS),
    "DaemonSet": lambda apps, name: apps.read_namespaced_daemon_set(name, m.NS),
}
