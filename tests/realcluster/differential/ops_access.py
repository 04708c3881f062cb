"""ServiceAccount tokens, RBAC allow and deny, ``kubectl auth can-i``, the Deployment pause.

By now ops_kinds has made the ServiceAccount ``sentinel`` and bound it: the Role
``sentinel-operator`` (read analyses, write their status, get/patch Deployments, create
Events) in diff-a, and the ClusterRole ``sentinel-reader`` (namespaces, leases).
"""

from __future__ import annotations

from typing import Any

from tests.realcluster.differential import manifests as m
from tests.realcluster.differential.runner import MERGE, Script, Session

script = Script()

TOKEN_PATH = f"/api/v1/namespaces/{m.NS}/serviceaccounts/{m.SA}/token"
DEPLOY = f"/apis/apps/v1/namespaces/{m.NS}/deployments/checkout"


@script.op("token: kubectl create token")
def create_token(s: Session) -> Any:
    token = s.kubectl_raw("create", "token", m.SA, "-n", m.NS).strip()
    s.memo["token"] = token
    return s.normalizer.text(token)


@script.op("token: python TokenRequest")
def token_request(s: Session) -> Any:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    return s.raw("POST", TOKEN_PATH, body=body)


@script.op("token: TokenRequest with too short an expiry")
def token_too_short(s: Session) -> Any:
    body = {"spec": {"expirationSeconds": 60}}
    return s.raw("POST", TOKEN_PATH, body=body)


@script.op("token: of a missing ServiceAccount")
def token_missing(s: Session) -> Any:
    return s.kubectl("create", "token", "nobody", "-n", m.NS)


@script.op("auth: a bad token is 401")
def bad_token(s: Session) -> Any:
    return s.raw("GET", "/api/v1/namespaces", token="not-a-token")


def _can_i(name: str, *args: str, impersonate: bool = False) -> None:
    @script.op(f"can-i: {name}")
    def can_i(s: Session) -> Any:
        if impersonate:
            return s.kubectl("auth", "can-i", *args, f"--as={m.SA_USER}")
        return s.kubectl("auth", "can-i", *args, token=s.memo["token"])


_can_i("list analyses (token)", "list", "rolloutanalyses", "-n", m.NS)
_can_i(
    "patch analyses/status (token)", "patch", "rolloutanalyses", "--subresource=status", "-n", m.NS
)
_can_i("patch analyses (token)", "patch", "rolloutanalyses.sentinel.example.com", "-n", m.NS)
_can_i("delete deployments (as)", "delete", "deployments", "-n", m.NS, impersonate=True)
_can_i("get namespaces (as)", "get", "namespaces", impersonate=True)
_can_i("list secrets in diff-b (as)", "list", "secrets", "-n", m.NS_B, impersonate=True)
_can_i("admin may do anything", "*", "*", "--all-namespaces")


@script.op("can-i: --list (token)")
def can_i_list(s: Session) -> Any:
    answer = s.kubectl("auth", "can-i", "--list", "-n", m.NS, token=s.memo["token"], out="table")
    # Keyed by resource or URL, so that one rule more or less is one difference, not a shift.
    rules: dict[str, list[list[str]]] = {}
    for row in answer["stdout"][1:]:
        rules.setdefault(row[0], []).append(row[1:])
    return {**answer, "stdout": {"header": answer["stdout"][:1], "rules": rules}}


@script.op("auth: kubectl auth whoami (token)")
def whoami(s: Session) -> Any:
    return s.kubectl("auth", "whoami", "-o", "json", token=s.memo["token"], out="json")


@script.op("RBAC: kubectl get ra with the token")
def token_reads(s: Session) -> Any:
    return s.kubectl("get", "ra", "-n", m.NS, "-o", "name", token=s.memo["token"])


@script.op("RBAC: kubectl delete deployment with the token")
def token_cannot_delete(s: Session) -> Any:
    return s.kubectl("delete", "deployment", "checkout", "-n", m.NS, token=s.memo["token"])


@script.op("RBAC: python create configmap with the token")
def token_cannot_create(s: Session) -> Any:
    path = f"/api/v1/namespaces/{m.NS}/configmaps"
    return s.raw("POST", path, body=m.config_map("denied"), token=s.memo["token"])


@script.op("RBAC: python list secrets cluster-wide with the token")
def token_cannot_list(s: Session) -> Any:
    return s.raw("GET", "/api/v1/secrets", token=s.memo["token"])


@script.op("RBAC: python patch an analysis (not its status) with the token")
def token_cannot_patch_spec(s: Session) -> Any:
    body = {"spec": {"failureLimit": 2}}
    path = m.ra_path(name="guard")
    return s.raw("PATCH", path, body=body, content_type=MERGE, token=s.memo["token"])


@script.op("RBAC: python patch analysis status with the token")
def token_patches_status(s: Session) -> Any:
    body = {"status": {"failures": 5, "lastVerdict": "Fail"}}
    path = m.ra_path(name="guard") + "/status"
    return s.raw("PATCH", path, body=body, content_type=MERGE, token=s.memo["token"])


@script.op("RBAC: python pause the Deployment with the token")
def token_pauses(s: Session) -> Any:
    body = {"spec": {"paused": True}}
    return s.raw("PATCH", DEPLOY, body=body, content_type=MERGE, token=s.memo["token"])


@script.op("RBAC: python record an Event with the token")
def token_records_event(s: Session) -> Any:
    path = f"/api/v1/namespaces/{m.NS}/events"
    return s.raw("POST", path, body=m.event("guard"), token=s.memo["token"])


@script.op("RBAC: python list namespaces with the token (ClusterRole)")
def token_lists_namespaces(s: Session) -> Any:
    return s.raw(
        "GET", "/api/v1/namespaces", query={"labelSelector": "team=sentinel"}, token=s.memo["token"]
    )


@script.op("Deployment: kubectl rollout pause when paused")
def pause_again(s: Session) -> Any:
    return s.kubectl("rollout", "pause", "deployment/checkout", "-n", m.NS)


@script.op("Deployment: kubectl rollout resume")
def resume(s: Session) -> Any:
    return s.kubectl("rollout", "resume", "deployment/checkout", "-n", m.NS)


@script.op("Deployment: scale subresource")
def scale(s: Session) -> Any:
    return s.raw("GET", DEPLOY + "/scale")


@script.op("Deployment: invalid (selector does not match the template)")
def invalid_deployment(s: Session) -> Any:
    body = m.deployment("broken")
    body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    return s.raw("POST", f"/apis/apps/v1/namespaces/{m.NS}/deployments", body=body)


@script.op("Namespace: python delete")
def delete_namespace(s: Session) -> Any:
    return s.raw("DELETE", f"/api/v1/namespaces/{m.NS_B}")
