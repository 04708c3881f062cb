"""Table answers (`kubectl get`) as kube-apiserver v1.37 gives them (the differential test).

The server, not kubectl, decides the columns: their names, types, descriptions and priorities
(``-o wide`` shows priority 1), and the cells. These pin the ones devcluster used to get
wrong: ServiceAccounts lost their SECRETS column in 1.37, CRDs list scope and versions,
Events have ten columns, custom resources keep a ``date`` column's type and describe it by
its JSONPath, and a CRD without printer columns gets Age alone.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client

from devcluster import table_docs
from testkit.devcluster import DevCluster
from testkit.manifests import CRD_NAME as RA_RESOURCE
from testkit.manifests import GROUP, VERSION, ra_manifest, to_yaml
from testkit.waiting import wait_until

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"


def _table(api: kubernetes.client.ApiClient, path: str) -> dict[str, Any]:
    prepared = api.param_serialize(
        method="GET",
        resource_path=path,
        header_params={"Accept": TABLE},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*prepared)
    return json.loads(response.read())


def _columns(table: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]


def test_service_accounts_print_name_and_age_only(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("create", "serviceaccount", "robot", "-n", ns)

    header = cluster.kubectl("get", "serviceaccount", "robot", "-n", ns).stdout.splitlines()[0]

    assert header.split() == ["NAME", "AGE"]


def test_builtin_columns_are_described_and_typed_as_the_server_does(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin_api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}, "data": {"a": "1"}})

    table = _table(admin_api, f"/api/v1/namespaces/{ns}/configmaps/c")

    assert table["columnDefinitions"] == [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": table_docs.NAME,
            "priority": 0,
        },
        {
            "name": "Data",
            "type": "string",
            "format": "",
            "description": table_docs.CONFIGMAP_DATA,
            "priority": 0,
        },
        {
            "name": "Age",
            "type": "string",
            "format": "",
            "description": table_docs.CREATION_TIMESTAMP,
            "priority": 0,
        },
    ]
    assert table["rows"][0]["cells"][:2] == ["c", 1]


def test_crds_print_scope_versions_and_creation(
    cluster: DevCluster, admin_api: kubernetes.client.ApiClient
) -> None:
    table = _table(
        admin_api, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{RA_RESOURCE}"
    )

    assert _columns(table) == [
        ("Name", "string", 0),
        ("Scope", "string", 0),
        ("Versions", "string", 0),
        ("Created At", "date", 0),
        ("Group", "string", 1),
        ("Kind", "string", 1),
        ("ShortNames", "string", 1),
        ("Established", "boolean", 1),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == [RA_RESOURCE, "Namespaced", "v1alpha1(storage)"]
    assert cells[3].endswith("Z")
    assert cells[4:] == [GROUP, "RolloutAnalysis", "ra", True]
    wide = cluster.kubectl("get", "crd", RA_RESOURCE, "-o", "wide").stdout.splitlines()[0]
    assert wide.split()[:4] == ["NAME", "SCOPE", "VERSIONS", "CREATED"]


def test_events_have_the_ten_columns_of_the_event_printer(
    admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "RolloutAnalysis", "name": "checkout", "namespace": ns},
        "type": "Warning",
        "reason": "MetricFailed",
        "message": " p99 above 0.25 ",
        "count": 2,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "source": {"component": "rollout-sentinel"},
        "reportingInstance": "pod-1",
    }
    kubernetes.client.CoreV1Api(admin_api).create_namespaced_event(ns, event)

    table = _table(admin_api, f"/api/v1/namespaces/{ns}/events/e1")

    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message",
        "First Seen", "Count", "Name",
    ]  # fmt: skip
    cells = table["rows"][0]["cells"]
    assert cells[0] == cells[7] != "<unknown>"
    assert cells[1:7] == [
        "Warning",
        "MetricFailed",
        "rolloutanalysis/checkout",
        "",
        "rollout-sentinel, pod-1",
        "p99 above 0.25",
    ]
    assert cells[8:] == [2, "e1"]


def test_custom_resource_columns_keep_their_type_and_jsonpath_description(
    cluster: DevCluster, admin_api: kubernetes.client.ApiClient, ns: str
) -> None:
    cluster.kubectl("apply", "-f", "-", input=to_yaml(ra_manifest("shown", ns)))

    table = _table(admin_api, f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/rolloutanalyses")

    age = table["columnDefinitions"][-1]
    assert (age["name"], age["type"]) == ("Age", "date")
    assert age["description"] == (
        "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp"
    )
    assert table["columnDefinitions"][0]["description"] == table_docs.NAME


def test_a_crd_without_printer_columns_gets_age_alone(
    cluster: DevCluster, admin_api: kubernetes.client.ApiClient
) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fidelity.example.com"},
        "spec": {
            "group": "fidelity.example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=to_yaml(crd))
    try:
        wait_until(
            lambda: cluster.kubectl("get", "widgets", check=False).returncode == 0, timeout=20
        )
        widget = {
            "apiVersion": "fidelity.example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
        }
        cluster.kubectl("apply", "-f", "-", input=to_yaml(widget))

        table = _table(admin_api, "/apis/fidelity.example.com/v1/widgets")
    finally:
        cluster.kubectl("delete", "crd", "widgets.fidelity.example.com")

    assert _columns(table) == [("Name", "string", 0), ("Age", "date", 0)]
    assert table["columnDefinitions"][1]["description"] == table_docs.CREATION_TIMESTAMP
    assert table["rows"][0]["cells"][0] == "w"
