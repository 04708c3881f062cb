"""schema.apply_defaults/prune and crd_validation.crd_causes over the real RolloutAnalysis CRD."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from devcluster import crd_validation, schema
from testkit.paths import CRD_PATH


@pytest.fixture
def crd() -> dict[str, Any]:
    return yaml.safe_load(CRD_PATH.read_text())


@pytest.fixture
def ra_schema(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _minimal() -> dict[str, Any]:
    return {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "checkout"},
        "spec": {
            "target": {"name": "checkout"},
            "metrics": [{"name": "p99", "query": "up", "maxValue": 0.25}],
        },
    }


def test_defaults_fill_dry_run_and_target_kind_but_leave_interval_and_failure_limit(
    ra_schema: dict[str, Any],
) -> None:
    # interval and failureLimit have no schema default: the operator applies theirs after a
    # template's (docs/templates.md).
    defaulted = schema.apply_defaults(ra_schema, _minimal())
    assert defaulted["spec"] == {
        "target": {"name": "checkout", "kind": "Deployment"},
        "metrics": [{"name": "p99", "query": "up", "maxValue": 0.25}],
        "dryRun": False,
    }
    assert defaulted["metadata"] == {"name": "checkout"}


def test_defaults_never_overwrite_and_never_touch_the_input(ra_schema: dict[str, Any]) -> None:
    obj = _minimal()
    obj["spec"].update(interval="1m", failureLimit=7, dryRun=True)
    before = copy.deepcopy(obj)
    defaulted = schema.apply_defaults(ra_schema, obj)
    assert (defaulted["spec"]["interval"], defaulted["spec"]["failureLimit"]) == ("1m", 7)
    assert defaulted["spec"]["dryRun"] is True
    assert obj == before


def test_an_absent_parent_object_is_not_created(ra_schema: dict[str, Any]) -> None:
    defaulted = schema.apply_defaults(ra_schema, {"kind": "RolloutAnalysis", "metadata": {}})
    assert defaulted == {"kind": "RolloutAnalysis", "metadata": {}}


def test_a_null_in_a_non_nullable_field_is_dropped_then_defaulted(
    ra_schema: dict[str, Any],
) -> None:
    obj = _minimal()
    obj["spec"]["dryRun"] = None
    obj["spec"]["interval"] = None
    obj["spec"]["target"]["kind"] = None
    obj["status"] = {"pausedAt": None, "lastVerdict": None}
    defaulted = schema.apply_defaults(ra_schema, obj)
    assert defaulted["spec"]["dryRun"] is False
    assert "interval" not in defaulted["spec"]
    assert defaulted["spec"]["target"]["kind"] == "Deployment"
    assert defaulted["status"] == {"pausedAt": None}


def test_defaults_reach_into_array_items_and_maps() -> None:
    node = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "default": {"weight": 1},
                    "properties": {
                        "weight": {"type": "integer", "default": 1},
                        "mode": {"type": "string", "default": "fast"},
                    },
                },
            },
            "byName": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"on": {"type": "boolean", "default": True}},
                },
            },
        },
    }
    obj = {"items": [{"weight": 5}, None, {}], "byName": {"a": {}, "b": {"on": False}}}
    assert schema.apply_defaults(node, obj) == {
        "items": [
            {"weight": 5, "mode": "fast"},
            {"weight": 1, "mode": "fast"},
            {"weight": 1, "mode": "fast"},
        ],
        "byName": {"a": {"on": True}, "b": {"on": False}},
    }


def test_prune_drops_unknown_fields_and_reports_their_paths(ra_schema: dict[str, Any]) -> None:
    obj = _minimal()
    obj["spec"]["foo"] = 1
    obj["spec"]["metrics"][0]["bar"] = {"x": 1}
    obj["spec"]["target"]["namespace"] = "elsewhere"
    obj["status"] = {"conditions": [{"type": "Ready", "extra": True}]}
    obj["topLevel"] = "x"
    obj["metadata"]["anything"] = "kept: metadata is the server's business"
    pruned, dropped = schema.prune(ra_schema, obj)
    assert dropped == [
        "spec.target.namespace",
        "spec.metrics[0].bar",
        "spec.foo",
        "status.conditions[0].extra",
        "topLevel",
    ]
    assert pruned["spec"] == _minimal()["spec"]
    assert pruned["status"] == {"conditions": [{"type": "Ready"}]}
    assert pruned["metadata"]["anything"].startswith("kept")
    assert (pruned["apiVersion"], pruned["kind"]) == (obj["apiVersion"], obj["kind"])


def test_prune_of_a_valid_object_changes_nothing(ra_schema: dict[str, Any]) -> None:
    obj = schema.apply_defaults(ra_schema, _minimal())
    assert schema.prune(ra_schema, obj) == (obj, [])


def test_prune_honours_preserve_unknown_fields_and_embedded_resources() -> None:
    node = {
        "type": "object",
        "properties": {
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": {"type": "object", "properties": {}}},
            },
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {}}},
            },
        },
    }
    obj = {
        "free": {"anything": [1, 2], "known": {"inner": 1}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"x": 1}, "other": 2},
    }  # fmt: skip
    pruned, dropped = schema.prune(node, obj)
    assert dropped == ["free.known.inner", "template.spec.x", "template.other"]
    assert pruned == {
        "free": {"anything": [1, 2], "known": {}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
    }


def test_the_project_crd_is_a_valid_structural_crd(crd: dict[str, Any]) -> None:
    assert crd_validation.crd_causes(crd) == []


def _lines(crd: dict[str, Any]) -> list[str]:
    return [str(cause) for cause in crd_validation.crd_causes(crd)]


def test_crd_names_group_and_scope_are_checked(crd: dict[str, Any]) -> None:
    crd["spec"]["group"] = "sentinel"
    crd["spec"]["scope"] = "Galaxy"
    del crd["spec"]["names"]["kind"]
    crd["spec"]["names"]["plural"] = "RolloutAnalyses"
    assert _lines(crd) == [
        'metadata.name: Invalid value: "rolloutanalyses.sentinel.example.com": must be '
        'spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "sentinel": should be a domain with at least one dot',
        'spec.names.plural: Invalid value: "RolloutAnalyses": a lowercase RFC 1123 label must '
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.names.kind: Required value",
        'spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"',
    ]


def test_crd_needs_exactly_one_storage_version(crd: dict[str, Any]) -> None:
    crd["spec"]["versions"].append(copy.deepcopy(crd["spec"]["versions"][0]))
    causes = crd_validation.crd_causes(crd)
    assert [(c.field, c.message.rsplit(": ", 1)[-1]) for c in causes] == [
        ("spec.versions", "must have exactly one version marked as storage version"),
        ("spec.versions", "must contain unique version names"),
    ]


def test_crd_schema_must_be_structural(crd: dict[str, Any]) -> None:
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = root["properties"]["spec"]
    del spec["properties"]["target"]["type"]
    spec["properties"]["metrics"]["items"]["properties"]["name"]["type"] = "text"
    del spec["properties"]["metrics"]["x-kubernetes-list-map-keys"]
    spec["properties"]["failureLimit"]["default"] = 0
    spec["properties"]["tags"] = {"type": "array"}
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
    assert _lines(crd) == [
        f"{base}.properties[target].type: Required value: must not be empty for specified "
        "object fields",
        f"{base}.properties[metrics].x-kubernetes-list-map-keys: Required value: must not be "
        "empty if x-kubernetes-list-type is map",
        f'{base}.properties[metrics].items.properties[name].type: Unsupported value: "text": '
        'supported values: "array", "boolean", "integer", "number", "object", "string"',
        f"{base}.properties[failureLimit].default: Invalid value: 0: "
        f"{base}.properties[failureLimit].default in body should be greater than or equal to 1",
        f"{base}.properties[tags].items: Required value: must be specified",
    ]


def test_crd_without_schema_or_with_bad_columns(crd: dict[str, Any]) -> None:
    version = crd["spec"]["versions"][0]
    del version["schema"]
    version["additionalPrinterColumns"] = [{"name": "X", "type": "text", "jsonPath": ".spec"}, {}]
    assert _lines(crd) == [
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        'spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "text": supported '
        'values: "boolean", "date", "integer", "number", "string"',
        "spec.versions[0].additionalPrinterColumns[1].name: Required value",
        "spec.versions[0].additionalPrinterColumns[1].type: Required value",
        "spec.versions[0].additionalPrinterColumns[1].jsonPath: Required value",
    ]
