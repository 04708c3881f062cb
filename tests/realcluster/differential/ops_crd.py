"""The RolloutAnalysis CRD: setup, discovery, explain, Table output and the status subresource.

``setup`` runs first (the namespace and the CRD the rest of the script needs); ``semantics``
runs after ops_kinds has created ``guard``: the printer columns, the status subresource kept
apart from spec, generation bumped on spec changes only, server-side apply.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.realcluster.differential import manifests as m
from tests.realcluster.differential.runner import JSON_PATCH, MERGE, TABLE, Script, Session

setup = Script()
semantics = Script()

CRD_NAME = f"rolloutanalyses.{m.GROUP}"


def _wait(s: Session, *args: str, timeout: float = 30) -> None:
    """Poll until kubectl succeeds: a real server serves a CRD, publishes its OpenAPI and
    makes a namespace's default ServiceAccount a moment after the write that asked for it."""
    deadline = time.monotonic() + timeout
    while s.cluster.kubectl(*args, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise TimeoutError(f"kubectl {' '.join(args)} kept failing")
        time.sleep(0.2)


@setup.op("setup: kubectl create namespace")
def create_namespace(s: Session) -> Any:
    return s.kubectl("create", "namespace", m.NS)


@setup.op("CRD: kubectl apply")
def apply_crd(s: Session) -> Any:
    answer = s.kubectl("apply", "-f", str(m.CRD_PATH))
    _wait(s, "get", "rolloutanalyses", "-n", m.NS)
    # The real server publishes the CRD's OpenAPI (what explain and validation read) a few
    # seconds after it serves the resource.
    _wait(s, "explain", "rolloutanalysis.spec")
    return answer


@setup.op("CRD: python get")
def get_crd(s: Session) -> Any:
    return s.raw("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")


@setup.op("CRD: kubectl get crd (table)")
def crd_table(s: Session) -> Any:
    return s.kubectl("get", "crd", CRD_NAME, out="table")


@setup.op("CRD: python get as Table")
def crd_table_json(s: Session) -> Any:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
    return s.raw("GET", path, accept=TABLE)


@setup.op("CRD: kubectl patch --type=merge")
def crd_merge(s: Session) -> Any:
    patch = json.dumps({"metadata": {"labels": {"app": "sentinel"}}})
    return s.kubectl(
        "patch", "crd", CRD_NAME, "--type=merge", "-p", patch, "-o", "json", out="json"
    )


@setup.op("CRD: python patch json")
def crd_json_patch(s: Session) -> Any:
    body = [{"op": "add", "path": "/metadata/annotations/sentinel~1step", "value": "json"}]
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
    return s.raw("PATCH", path, body=body, content_type=JSON_PATCH)


@setup.op("CRD: kubectl patch strategic")
def crd_strategic(s: Session) -> Any:
    patch = json.dumps({"metadata": {"labels": {"tier": "api"}}})
    return s.kubectl("patch", "crd", CRD_NAME, "-p", patch, "-o", "json", out="json")


@setup.op("ServiceAccount: the namespace's default one")
def default_service_account(s: Session) -> Any:
    _wait(s, "get", "serviceaccount", "default", "-n", m.NS)
    return s.kubectl("get", "serviceaccount", "default", "-n", m.NS, "-o", "json", out="json")


@setup.op("discovery: python GET the group version")
def discovery_group_version(s: Session) -> Any:
    return s.raw("GET", f"/apis/{m.GROUP}/v1alpha1")


# The API groups of the kinds the product uses; both servers serve others besides.
PRODUCT_GROUPS = (
    m.GROUP, "apps", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io",
    "apiextensions.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
)  # fmt: skip


@setup.op("discovery: python GET /api and /apis (the product's groups)")
def discovery_groups(s: Session) -> Any:
    core = s.raw("GET", "/api")
    s.raw("GET", "/apis", keep=True)
    groups = [g for g in s.memo["last"].get("groups") or [] if g.get("name") in PRODUCT_GROUPS]
    return {"api": core, "groups": s.normalizer.json(groups)}


@setup.op("discovery: aggregated discovery (apidiscovery.k8s.io/v2)")
def aggregated_discovery(s: Session) -> Any:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    s.raw("GET", "/apis", accept=accept, keep=True)
    return {key: s.memo["last"].get(key) for key in ("kind", "apiVersion")}


@setup.op("version: kubectl version -o json (server)")
def version(s: Session) -> Any:
    answer = s.kubectl("version", "-o", "json", out="json")
    return {"exit": answer["exit"], "server": answer["stdout"].get("serverVersion")}


@setup.op("discovery: kubectl api-resources --api-group")
def api_resources(s: Session) -> Any:
    return s.kubectl("api-resources", f"--api-group={m.GROUP}", "-o", "wide", out="table")


@setup.op("explain: kubectl explain rolloutanalysis.spec")
def explain_spec(s: Session) -> Any:
    return s.kubectl("explain", "rolloutanalysis.spec")


@setup.op("explain: kubectl explain rolloutanalysis.status.conditions")
def explain_conditions(s: Session) -> Any:
    return s.kubectl("explain", "rolloutanalysis.status.conditions")


@setup.op("explain: kubectl explain ra.spec --recursive")
def explain_recursive(s: Session) -> Any:
    return s.kubectl("explain", "ra.spec", "--recursive")


# -- after ops_kinds: guard exists, with failureLimit 5, interval 1m, dryRun true ------------

STATUS = {
    "status": {
        "observedGeneration": 2,
        "lastVerdict": "Fail",
        "failures": 2,
        "lastEvaluationTime": "2026-11-30T10:00:00Z",
        "pausedAt": None,
        "metricResults": [{"name": "p99", "value": "0.31", "maxValue": 0.25, "verdict": "Fail"}],
        "conditions": [
            {
                "type": "RolloutPaused",
                "status": "False",
                "reason": "BelowLimit",
                "message": "2 of 5 failures",
                "lastTransitionTime": "2026-11-30T10:00:00Z",
            }
        ],
    }
}


@semantics.op("RA: kubectl patch --subresource=status")
def patch_status(s: Session) -> Any:
    patch = json.dumps(STATUS)
    return s.kubectl(
        "patch", "ra", "guard", "-n", m.NS, "--subresource=status", "--type=merge",
        "-p", patch, "-o", "json", out="json",
    )  # fmt: skip


@semantics.op("RA: kubectl get ra (table)")
def ra_table(s: Session) -> Any:
    return s.kubectl("get", "ra", "-n", m.NS, out="table")


@semantics.op("RA: kubectl get ra -o wide")
def ra_wide(s: Session) -> Any:
    return s.kubectl("get", "rolloutanalyses", "-A", "-o", "wide", out="table")


@semantics.op("RA: python list as Table")
def ra_table_json(s: Session) -> Any:
    return s.raw("GET", m.ra_path(), accept=TABLE)


@semantics.op("RA: status patch carrying a spec change")
def status_ignores_spec(s: Session) -> Any:
    body = {"spec": {"failureLimit": 9}, "status": {"failures": 3}}
    return s.raw("PATCH", m.ra_path(name="guard") + "/status", body=body, content_type=MERGE)


@semantics.op("RA: main-resource patch carrying a status change")
def spec_ignores_status(s: Session) -> Any:
    body = {"spec": {"failureLimit": 4}, "status": {"failures": 0, "lastVerdict": "Pass"}}
    return s.raw("PATCH", m.ra_path(name="guard"), body=body, content_type=MERGE)


@semantics.op("RA: metadata-only patch keeps generation")
def metadata_patch(s: Session) -> Any:
    body = {"metadata": {"annotations": {"note": "metadata only"}}}
    return s.raw("PATCH", m.ra_path(name="guard"), body=body, content_type=MERGE)


@semantics.op("RA: python PUT of the status subresource")
def put_status(s: Session) -> Any:
    current = s.raw("GET", m.ra_path(name="guard"), keep=True)
    obj = s.memo["last"]
    obj["status"]["failures"] = 4
    obj["spec"]["failureLimit"] = 8  # ignored through /status
    answer = s.raw("PUT", m.ra_path(name="guard") + "/status", body=obj)
    return {"before": current["status"], "after": answer}


@semantics.op("RA: status write with an invalid enum")
def status_invalid(s: Session) -> Any:
    body = {"status": {"lastVerdict": "Maybe", "failures": -1}}
    return s.raw("PATCH", m.ra_path(name="guard") + "/status", body=body, content_type=MERGE)


@semantics.op("RA: kubectl get -o json after the writes")
def ra_final(s: Session) -> Any:
    return s.kubectl("get", "ra", "guard", "-n", m.NS, "-o", "json", out="json")


@semantics.op("RA: kubectl describe")
def describe(s: Session) -> Any:
    return s.kubectl("describe", "ra", "guard", "-n", m.NS)


@semantics.op("RA: kubectl apply --server-side")
def server_side_apply(s: Session) -> Any:
    manifest = m.rollout_analysis("ssa", failureLimit=2)
    return s.kubectl(
        "apply", "--server-side", "--field-manager=diff", "-f", "-", "-o", "json",
        input=m.to_yaml(manifest), out="json",
    )  # fmt: skip


@semantics.op("RA: kubectl apply --dry-run=server")
def dry_run_apply(s: Session) -> Any:
    manifest = m.rollout_analysis("dry", interval="45s")
    return s.kubectl(
        "apply", "--dry-run=server", "-f", "-", "-o", "json", input=m.to_yaml(manifest), out="json"
    )


@semantics.op("RA: python create dryRun=All")
def dry_run_create(s: Session) -> Any:
    body = m.rollout_analysis("dry-python")
    return s.raw("POST", m.ra_path(), body=body, query={"dryRun": "All"})


@semantics.op("RA: nothing stored by the dry runs")
def dry_run_nothing(s: Session) -> Any:
    return s.kubectl("get", "ra", "dry", "dry-python", "-n", m.NS, out="table")


@semantics.op("RA: kubectl create of an existing object")
def create_existing(s: Session) -> Any:
    return s.kubectl("create", "-f", "-", input=m.to_yaml(m.rollout_analysis("guard")))


@semantics.op("RA: python create of an existing object")
def create_existing_python(s: Session) -> Any:
    return s.raw("POST", m.ra_path(), body=m.rollout_analysis("guard"))


@semantics.op("RA: kubectl create with an unknown field (strict)")
def unknown_field_strict(s: Session) -> Any:
    manifest = m.rollout_analysis("unknown", bogus=1)
    return s.kubectl("create", "-f", "-", input=m.to_yaml(manifest))


@semantics.op("RA: python create with an unknown field (pruned)")
def unknown_field_pruned(s: Session) -> Any:
    body = m.rollout_analysis("pruned", bogus=1)
    body["status"] = {"failures": 1}  # status on create is dropped too (status subresource)
    return s.raw("POST", m.ra_path(), body=body)
