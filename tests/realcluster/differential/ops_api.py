"""Object semantics: Events, 404, 409, watch, selectors, paging, finalizers and deletion."""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client

from tests.realcluster.differential import manifests as m
from tests.realcluster.differential.runner import JSON_PATCH, MERGE, TABLE, Script, Session

script = Script()

CM_PATH = f"/api/v1/namespaces/{m.NS}/configmaps"
EVENTS = f"/api/v1/namespaces/{m.NS}/events"


# -- Event, created the way the operator does it: generateName, completed by the server ----


@script.op("Event: python create (generateName)")
def create_event(s: Session) -> Any:
    answer = s.raw("POST", EVENTS, body=m.event("guard"), keep=True)
    s.memo["event"] = s.memo["last"]["metadata"]["name"]
    return answer


@script.op("Event: kubectl get -o json")
def get_event(s: Session) -> Any:
    return s.kubectl("get", "event", s.memo["event"], "-n", m.NS, "-o", "json", out="json")


@script.op("Event: kubectl patch --type=merge")
def merge_event(s: Session) -> Any:
    patch = json.dumps({"count": 2, "lastTimestamp": "2026-11-30T10:05:00Z"})
    event = s.memo["event"]
    return s.kubectl(
        "patch", "event", event, "-n", m.NS, "--type=merge", "-p", patch, "-o", "json", out="json"
    )


@script.op("Event: python patch json")
def json_patch_event(s: Session) -> Any:
    body = [{"op": "replace", "path": "/message", "value": "p99 is 0.40, above 0.25"}]
    return s.raw("PATCH", f"{EVENTS}/{s.memo['event']}", body=body, content_type=JSON_PATCH)


@script.op("Event: kubectl patch strategic")
def strategic_event(s: Session) -> Any:
    patch = json.dumps({"count": 3})
    return s.kubectl(
        "patch", "event", s.memo["event"], "-n", m.NS, "-p", patch, "-o", "json", out="json"
    )


@script.op("Event: field selector involvedObject.name")
def events_by_object(s: Session) -> Any:
    return s.kubectl(
        "get", "events", "-n", m.NS, "--field-selector", "involvedObject.name=guard",
        "-o", "json", out="json",
    )  # fmt: skip


@script.op("Event: python get as Table")
def event_table(s: Session) -> Any:
    return s.raw("GET", f"{EVENTS}/{s.memo['event']}", accept=TABLE)


@script.op("Event: kubectl get events (table)")
def event_kubectl_table(s: Session) -> Any:
    # Only the script's own: the controllers record events of their own on the real cluster.
    selector = "involvedObject.kind=RolloutAnalysis"
    return s.kubectl(
        "get", "events", "-n", m.NS, "--field-selector", selector, "-o", "wide", out="table"
    )


@script.op("Event: events.k8s.io/v1 view of it")
def events_v1(s: Session) -> Any:
    return s.raw("GET", f"/apis/events.k8s.io/v1/namespaces/{m.NS}/events/{s.memo['event']}")


# -- 404 -------------------------------------------------------------------------------------


@script.op("404: kubectl get ra missing")
def missing_ra(s: Session) -> Any:
    return s.kubectl("get", "ra", "missing", "-n", m.NS)


@script.op("404: python read configmap missing")
def missing_config_map(s: Session) -> Any:
    core = s.api(kubernetes.client.CoreV1Api)
    return s.call(core.read_namespaced_config_map, "missing", m.NS)


@script.op("404: kubectl delete deployment missing")
def delete_missing(s: Session) -> Any:
    return s.kubectl("delete", "deployment", "missing", "-n", m.NS)


@script.op("404: python create in a missing namespace")
def missing_namespace(s: Session) -> Any:
    return s.raw("POST", "/api/v1/namespaces/nowhere/configmaps", body=m.config_map("x", "nowhere"))


@script.op("404: python patch status of a missing analysis")
def missing_status(s: Session) -> Any:
    body = {"status": {"failures": 1}}
    return s.raw("PATCH", m.ra_path(name="missing") + "/status", body=body, content_type=MERGE)


# -- 409: stale resourceVersion (what leader election and the status writes rely on) ------


def _stale_put(s: Session, path: str) -> Any:
    """Read, write once (the read is now stale), then write the stale copy."""
    s.raw("GET", path, keep=True)
    stale = s.memo["last"]
    fresh = json.loads(json.dumps(stale))
    fresh["metadata"].setdefault("labels", {})["write"] = "first"
    first = s.raw("PUT", path, body=fresh)
    stale["metadata"].setdefault("labels", {})["write"] = "stale"
    return {"first": first["status"], "stale": s.raw("PUT", path, body=stale)}


@script.op("409: python PUT configmap with a stale resourceVersion")
def stale_config_map(s: Session) -> Any:
    return _stale_put(s, f"{CM_PATH}/settings")


@script.op("409: python PUT analysis with a stale resourceVersion")
def stale_analysis(s: Session) -> Any:
    return _stale_put(s, m.ra_path(name="guard"))


@script.op("409: python PUT lease with a stale resourceVersion")
def stale_lease(s: Session) -> Any:
    return _stale_put(s, f"/apis/coordination.k8s.io/v1/namespaces/{m.NS}/leases/sentinel-leader")


@script.op("409: python patch with a stale resourceVersion precondition")
def stale_patch(s: Session) -> Any:
    body = {"metadata": {"resourceVersion": "1", "labels": {"write": "patch"}}}
    return s.raw("PATCH", f"{CM_PATH}/settings", body=body, content_type=MERGE)


@script.op("409: kubectl create configmap that exists")
def create_existing_config_map(s: Session) -> Any:
    return s.kubectl("create", "configmap", "settings", "-n", m.NS, "--from-literal=a=b")


# -- watch: the ADDED/MODIFIED/DELETED sequence from a resourceVersion ---------------------


@script.op("watch: python replay from a resourceVersion")
def watch_replay(s: Session) -> Any:
    s.raw("GET", m.ra_path(), keep=True)
    since = s.memo["last"]["metadata"]["resourceVersion"]
    s.raw("POST", m.ra_path(), body=m.rollout_analysis("watched"))
    s.raw(
        "PATCH", m.ra_path(name="watched"), body={"spec": {"failureLimit": 7}}, content_type=MERGE
    )
    s.raw(
        "PATCH",
        m.ra_path(name="watched") + "/status",
        body={"status": {"failures": 1}},
        content_type=MERGE,
    )
    s.raw("DELETE", m.ra_path(name="watched"))
    return s.watch_events(m.ra_path(), since)


@script.op("watch: python replay with a field selector")
def watch_selected(s: Session) -> Any:
    s.raw("GET", CM_PATH, keep=True)
    since = s.memo["last"]["metadata"]["resourceVersion"]
    for name in ("watch-a", "watch-b"):
        s.raw("POST", CM_PATH, body=m.config_map(name))
        s.raw("DELETE", f"{CM_PATH}/{name}")
    return s.watch_events(CM_PATH, since, fieldSelector="metadata.name=watch-b")


@script.op("watch: kubectl get -w --output-watch-events")
def kubectl_watch(s: Session) -> Any:
    s.raw("POST", m.ra_path(), body=m.rollout_analysis("watched-kubectl"))

    def writes() -> None:
        path = m.ra_path(name="watched-kubectl")
        s.raw("PATCH", path, body={"spec": {"dryRun": True}}, content_type=MERGE)
        s.raw("DELETE", path)

    return s.kubectl_watch("ra", "watched-kubectl", "-n", m.NS, during=writes)


# -- ReplicaSets and ControllerRevisions as the operator's caches list and watch them ------
# (docs/architecture.md#reads-from-caches). In diff-b, where no workload is: a real
# controller makes them for the workloads in diff-a, and devcluster plays none
# (docs/devcluster.md).

RS_PATH = f"/apis/apps/v1/namespaces/{m.NS_B}/replicasets"
REVISIONS = f"/apis/apps/v1/namespaces/{m.NS_B}/controllerrevisions"


@script.op("caches: python list ReplicaSets and ControllerRevisions a page at a time")
def list_owned(s: Session) -> Any:
    return [s.raw("GET", path, query={"limit": "500"}) for path in (RS_PATH, REVISIONS)]


@script.op("caches: python watch ReplicaSets from the list's resourceVersion")
def watch_replicasets(s: Session) -> Any:
    s.raw("GET", RS_PATH, query={"limit": "500"}, keep=True)
    return s.watch_events(RS_PATH, s.memo["last"]["metadata"]["resourceVersion"])


@script.op("caches: python ControllerRevision create, get, select, delete, watch replay")
def revision_lifecycle(s: Session) -> Any:
    s.raw("GET", REVISIONS, query={"limit": "500"}, keep=True)
    since = s.memo["last"]["metadata"]["resourceVersion"]
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "agent-5c8d7f", "labels": {"controller-revision-hash": "5c8d7f"}},
        "data": {"spec": {"template": {"metadata": {"labels": {"app": "agent"}}}}},
        "revision": 1,
    }
    path = f"{REVISIONS}/agent-5c8d7f"
    answers = [
        s.raw("POST", REVISIONS, body=revision),
        s.raw("GET", path),
        s.raw("GET", REVISIONS, query={"labelSelector": "controller-revision-hash=5c8d7f"}),
        s.raw("DELETE", path),
    ]
    return [*answers, s.watch_events(REVISIONS, since)]


# -- label and field selectors, limit/continue (in diff-b, created by ops_kinds) -----------

SELECTED = [
    m.config_map("web-1", m.NS_B, tier="web", env="prod"),
    m.config_map("web-2", m.NS_B, tier="web", env="test"),
    m.config_map("db-1", m.NS_B, tier="db", env="prod"),
    m.config_map("cache-1", m.NS_B, tier="cache"),
    m.config_map("plain", m.NS_B),
]


@script.op("selectors: kubectl apply five configmaps")
def apply_selected(s: Session) -> Any:
    return s.kubectl("apply", "-f", "-", input=m.to_yaml(*SELECTED))


def _selector(name: str, *args: str) -> None:
    @script.op(f"selectors: kubectl get cm {' '.join(args)}")
    def select(s: Session) -> Any:
        return s.kubectl("get", "configmaps", "-n", m.NS_B, *args, "-o", "name")


_selector("equality", "-l", "tier=web")
_selector("inequality", "-l", "tier!=web")
_selector("set", "-l", "tier in (web,db),env")
_selector("not exists", "-l", "!tier")
_selector("field", "--field-selector", "metadata.name=db-1")
_selector("both", "-l", "env=prod", "--field-selector", "metadata.name!=web-1")
_selector("bad label", "-l", "tier in web")
_selector("bad field", "--field-selector", "data.mode=guard")


@script.op("selectors: python list with a label selector")
def list_selected(s: Session) -> Any:
    core = s.api(kubernetes.client.CoreV1Api)
    return s.call(core.list_namespaced_config_map, m.NS_B, label_selector="env")


@script.op("paging: python list limit=2, then continue")
def paging(s: Session) -> Any:
    pages = []
    token = None
    while True:
        query = {"limit": "2", **({"continue": token} if token else {})}
        pages.append(
            s.raw("GET", f"/api/v1/namespaces/{m.NS_B}/configmaps", query=query, keep=True)
        )
        token = s.memo["last"]["metadata"].get("continue")
        if not token or len(pages) > 5:
            return pages


@script.op("paging: kubectl get --chunk-size=2")
def chunked(s: Session) -> Any:
    return s.kubectl("get", "configmaps", "-n", m.NS_B, "--chunk-size=2", out="table")


# -- finalizers, deletionTimestamp and deletion ----------------------------------------------

FINALIZER = f"{m.GROUP}/cleanup"


@script.op("finalizers: create an analysis with a finalizer")
def create_finalized(s: Session) -> Any:
    body = m.rollout_analysis("final")
    body["metadata"]["finalizers"] = [FINALIZER]
    return s.raw("POST", m.ra_path(), body=body)


@script.op("finalizers: kubectl delete --wait=false")
def delete_finalized(s: Session) -> Any:
    return s.kubectl("delete", "ra", "final", "-n", m.NS, "--wait=false")


@script.op("finalizers: python get shows deletionTimestamp")
def get_terminating(s: Session) -> Any:
    return s.raw("GET", m.ra_path(name="final"))


@script.op("finalizers: a new finalizer on a terminating object")
def add_finalizer(s: Session) -> Any:
    body = {"metadata": {"finalizers": [FINALIZER, "example.com/late"]}}
    return s.raw("PATCH", m.ra_path(name="final"), body=body, content_type=MERGE)


@script.op("finalizers: spec change on a terminating object")
def spec_while_terminating(s: Session) -> Any:
    body = {"spec": {"failureLimit": 6}}
    return s.raw("PATCH", m.ra_path(name="final"), body=body, content_type=MERGE)


@script.op("finalizers: removing the last one deletes it")
def remove_finalizer(s: Session) -> Any:
    body = [{"op": "remove", "path": "/metadata/finalizers"}]
    patched = s.raw("PATCH", m.ra_path(name="final"), body=body, content_type=JSON_PATCH)
    return {"patch": patched, "get": s.raw("GET", m.ra_path(name="final"))}


@script.op("finalizers: a new finalizer on a terminating configmap")
def configmap_finalizer(s: Session) -> Any:
    path = f"/api/v1/namespaces/{m.NS_B}/configmaps/held"
    body = m.config_map("held", m.NS_B)
    body["metadata"]["finalizers"] = ["example.com/a"]
    created = s.raw("POST", f"/api/v1/namespaces/{m.NS_B}/configmaps", body=body)
    deleted = s.raw("DELETE", path)
    more = {"metadata": {"finalizers": ["example.com/a", "example.com/c", "example.com/b"]}}
    refused = s.raw("PATCH", path, body=more, content_type=MERGE)
    released = s.raw("PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE)
    return {"created": created, "deleted": deleted, "refused": refused, "released": released}


@script.op("delete: python delete a configmap")
def delete_config_map(s: Session) -> Any:
    return s.raw("DELETE", f"/api/v1/namespaces/{m.NS_B}/configmaps/plain")


@script.op("delete: python delete with a stale precondition")
def delete_precondition(s: Session) -> Any:
    body = {"preconditions": {"resourceVersion": "1"}}
    return s.raw("DELETE", f"/api/v1/namespaces/{m.NS_B}/configmaps/web-1", body=body)


@script.op("delete: kubectl delete -l")
def delete_selected(s: Session) -> Any:
    return s.kubectl("delete", "configmaps", "-n", m.NS_B, "-l", "tier=web")


@script.op("delete: python delete an analysis")
def delete_analysis(s: Session) -> Any:
    return s.raw("DELETE", m.ra_path(name="ssa"))
