"""Strategic merge patch in devcluster.strategic, driven by the bodies kubectl 1.37 really sends.

The request bodies below were captured with ``kubectl -v=9`` against devcluster (apply, rollout
pause/resume/restart, set image, edit); the expected results follow
k8s.io/apimachinery/pkg/util/strategicpatch as applied by the API server.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from devcluster.patch import PatchError
from devcluster.strategic import (
    STRATEGIC_PATCH_FIELDS,
    strategic_merge_patch,
    supports_strategic,
)

LAST_APPLIED_V2 = (
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":'
    '{"app":"web","tier":"frontend"},"name":"web","namespace":"default"},"spec":{"replicas":2,'
    '"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"Recreate"},"template":'
    '{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"MODE",'
    '"value":"prod"}],"image":"nginx:1.27","name":"web","ports":[{"containerPort":80,'
    '"name":"http"}]}]}}}}\n'
)


def live_deployment() -> dict[str, Any]:
    """Return a Deployment as devcluster stores it after a first `kubectl apply`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "5bb61b5d-dd9c-4720-95a6-30759cc3d0cf",
            "resourceVersion": "5",
            "generation": 1,
            "creationTimestamp": "2026-11-29T16:46:05Z",
            "labels": {"app": "web"},
            "annotations": {
                "deployment.kubernetes.io/revision": "1",
                "kubectl.kubernetes.io/last-applied-configuration": "{}\n",
            },
            "finalizers": ["example.com/guard"],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.26",
                            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                            "env": [
                                {"name": "MODE", "value": "prod"},
                                {"name": "DEBUG", "value": "0"},
                            ],
                            "imagePullPolicy": "IfNotPresent",
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                        },
                        {
                            "name": "sidecar",
                            "image": "busybox:1.36",
                            "args": ["sleep", "3600"],
                            "imagePullPolicy": "IfNotPresent",
                        },
                    ],
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst",
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {},
                },
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 2,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        },
    }


def deploy_patch(patch: Any, target: Any = None) -> Any:
    return strategic_merge_patch(
        live_deployment() if target is None else target, patch, "apps", "Deployment"
    )


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def assert_no_directives(value: Any) -> None:
    text = json.dumps(value)
    for directive in ("$patch", "$retainKeys", "$setElementOrder", "$deleteFromPrimitiveList"):
        assert directive not in text


def test_kubectl_apply_three_way_patch_on_an_existing_deployment() -> None:
    # `kubectl apply` of a changed manifest: image bumped, DEBUG env and the sidecar removed,
    # strategy switched to Recreate, a label added.
    body = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED_V2},
            "labels": {"tier": "frontend"},
        },
        "spec": {
            "strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"},
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "MODE"}],
                            "env": [{"$patch": "delete", "name": "DEBUG"}],
                            "image": "nginx:1.27",
                            "name": "web",
                        },
                        {"$patch": "delete", "name": "sidecar"},
                    ],
                }
            },
        },
    }
    result = deploy_patch(body)
    assert result["metadata"]["labels"] == {"app": "web", "tier": "frontend"}
    annotations = result["metadata"]["annotations"]
    assert annotations["kubectl.kubernetes.io/last-applied-configuration"] == LAST_APPLIED_V2
    assert annotations["deployment.kubernetes.io/revision"] == "1"
    assert result["spec"]["strategy"] == {"type": "Recreate"}
    (web,) = containers(result)
    assert web["name"] == "web"
    assert web["image"] == "nginx:1.27"
    assert web["env"] == [{"name": "MODE", "value": "prod"}]
    # Server-side defaults the manifest never mentioned survive the merge.
    assert web["imagePullPolicy"] == "IfNotPresent"
    assert web["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert result["spec"]["revisionHistoryLimit"] == 10
    assert result["status"] == live_deployment()["status"]
    assert_no_directives(result)


def test_kubectl_rollout_pause_and_resume_bodies() -> None:
    paused = deploy_patch({"spec": {"paused": True}})
    assert paused["spec"]["paused"] is True
    assert containers(paused) == containers(live_deployment())
    resumed = deploy_patch({"spec": {"paused": None}}, paused)
    assert "paused" not in resumed["spec"]
    assert resumed == live_deployment()


def test_kubectl_set_image_body_changes_one_container_only() -> None:
    body = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
                    "containers": [{"image": "nginx:1.28", "name": "web"}],
                }
            }
        }
    }
    result = deploy_patch(body)
    assert [c["image"] for c in containers(result)] == ["nginx:1.28", "busybox:1.36"]
    assert containers(result)[0]["env"] == containers(live_deployment())[0]["env"]


def test_kubectl_rollout_restart_body_adds_a_template_annotation() -> None:
    body = {
        "spec": {
            "template": {
                "metadata": {
                    "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T16:46:16Z"}
                }
            }
        }
    }
    result = deploy_patch(body)
    template_meta = result["spec"]["template"]["metadata"]
    assert template_meta == {
        "labels": {"app": "web"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-29T16:46:16Z"},
    }


def test_kubectl_edit_body_for_a_deployment() -> None:
    body = {
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
                    "containers": [{"image": "nginx:1.29", "name": "web"}],
                }
            },
        },
        "status": {"replicas": 3},
    }
    result = deploy_patch(body)
    assert result["spec"]["replicas"] == 3
    assert containers(result)[0]["image"] == "nginx:1.29"
    assert result["status"]["replicas"] == 3
    assert result["status"]["conditions"] == live_deployment()["status"]["conditions"]


def test_set_element_order_reorders_and_keeps_server_only_items_in_place() -> None:
    live = live_deployment()
    containers(live).append({"name": "late", "image": "l"})
    body = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}],
                    "containers": [{"name": "web", "image": "nginx:2"}],
                }
            }
        }
    }
    result = deploy_patch(body, live)
    assert [c["name"] for c in containers(result)] == ["sidecar", "web", "late"]


def test_new_merge_list_items_go_first_in_patch_order() -> None:
    # mergeSortedSlice puts patch items the live list does not know before the server's items.
    body = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "b", "image": "b"}, {"name": "a", "image": "a"}]}
            }
        }
    }
    result = deploy_patch(body)
    assert [c["name"] for c in containers(result)] == ["b", "a", "web", "sidecar"]


def test_patch_replace_directive_in_a_list_and_in_a_map() -> None:
    body = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "only", "image": "i"}, {"$patch": "replace"}]}
            }
        }
    }
    assert containers(deploy_patch(body)) == [{"name": "only", "image": "i"}]
    selector = deploy_patch(
        {"spec": {"selector": {"$patch": "replace", "matchLabels": {"x": "y"}}}}
    )
    assert selector["spec"]["selector"] == {"matchLabels": {"x": "y"}}


def test_patch_delete_directive_on_a_map_leaves_an_empty_map() -> None:
    result = deploy_patch({"spec": {"strategy": {"$patch": "delete"}}})
    assert result["spec"]["strategy"] == {}


def test_merge_keys_per_nested_list() -> None:
    body = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "ports": [{"containerPort": 80, "name": "web-http"}],
                            "volumeMounts": [{"mountPath": "/cache", "name": "cache"}],
                            "env": [{"name": "MODE", "value": "canary"}],
                        }
                    ],
                    "volumes": [{"name": "cache", "emptyDir": {}}],
                    "imagePullSecrets": [{"name": "registry"}],
                }
            }
        }
    }
    result = deploy_patch(body)
    web = containers(result)[0]
    assert web["ports"] == [{"containerPort": 80, "name": "web-http", "protocol": "TCP"}]
    assert web["env"] == [{"name": "MODE", "value": "canary"}, {"name": "DEBUG", "value": "0"}]
    assert web["volumeMounts"] == [{"mountPath": "/cache", "name": "cache"}]
    pod = result["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "cache", "emptyDir": {}}]
    assert pod["imagePullSecrets"] == [{"name": "registry"}]


def test_lists_without_a_strategy_are_replaced_whole() -> None:
    body = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "args": ["x"]}]}}}}
    assert containers(deploy_patch(body))[1]["args"] == ["x"]
    role = {"rules": [{"verbs": ["get"], "resources": ["pods"], "apiGroups": [""]}]}
    patched = strategic_merge_patch(
        role, {"rules": [{"verbs": ["list"]}]}, "rbac.authorization.k8s.io", "Role"
    )
    assert patched["rules"] == [{"verbs": ["list"]}]


def test_finalizers_are_a_merged_set_of_strings() -> None:
    result = deploy_patch({"metadata": {"finalizers": ["b", "example.com/guard", "b"]}})
    assert result["metadata"]["finalizers"] == ["b", "example.com/guard"]
    removed = deploy_patch({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}, result)
    assert removed["metadata"]["finalizers"] == ["example.com/guard"]
    # A parallel deletion list for a missing list adds nothing.
    untouched = deploy_patch({"metadata": {"$deleteFromPrimitiveList/other": ["x"]}})
    assert "other" not in untouched["metadata"]


def test_owner_references_merge_by_uid_and_conditions_by_type() -> None:
    live = live_deployment()
    live["metadata"]["ownerReferences"] = [{"uid": "u1", "name": "a", "kind": "K"}]
    body = {
        "metadata": {"ownerReferences": [{"uid": "u2", "name": "b", "kind": "K"}]},
        "status": {"conditions": [{"type": "Progressing", "status": "False"}]},
    }
    result = deploy_patch(body, live)
    assert [o["uid"] for o in result["metadata"]["ownerReferences"]] == ["u2", "u1"]
    conditions = {c["type"]: c for c in result["status"]["conditions"]}
    assert conditions["Progressing"] == {
        "type": "Progressing",
        "status": "False",
        "reason": "NewReplicaSetAvailable",
    }
    assert conditions["Available"]["status"] == "True"


def test_retain_keys_clears_fields_not_listed() -> None:
    body = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert deploy_patch(body)["spec"]["strategy"] == {"type": "Recreate"}


def test_other_built_in_kinds_use_their_own_tags() -> None:
    account = {
        "metadata": {"name": "sa"},
        "secrets": [{"name": "a"}],
        "imagePullSecrets": [{"name": "p"}],
    }
    patched = strategic_merge_patch(
        account,
        {"secrets": [{"name": "b"}], "imagePullSecrets": [{"name": "q"}]},
        "",
        "ServiceAccount",
    )
    assert patched["secrets"] == [{"name": "b"}, {"name": "a"}]
    assert patched["imagePullSecrets"] == [{"name": "q"}]
    namespace = {
        "metadata": {"name": "n"},
        "status": {"conditions": [{"type": "A", "status": "x"}]},
    }
    patched_ns = strategic_merge_patch(
        namespace, {"status": {"conditions": [{"type": "B", "status": "y"}]}}, "", "Namespace"
    )
    assert [c["type"] for c in patched_ns["status"]["conditions"]] == ["B", "A"]
    config = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    patched_cm = strategic_merge_patch(config, {"data": {"a": None, "c": "3"}}, "", "ConfigMap")
    assert patched_cm["data"] == {"b": "2", "c": "3"}


def test_nulls_inside_new_values_are_dropped() -> None:
    result = deploy_patch({"spec": {"template": {"spec": {"nodeSelector": {"a": "b", "c": None}}}}})
    assert result["spec"]["template"]["spec"]["nodeSelector"] == {"a": "b"}


def test_inputs_are_not_mutated() -> None:
    live = live_deployment()
    body = {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/guard"]},
        "spec": {"template": {"spec": {"containers": [{"name": "web", "$patch": "delete"}]}}},
    }
    live_snapshot, body_snapshot = copy.deepcopy(live), copy.deepcopy(body)
    deploy_patch(body, live)
    assert live == live_snapshot
    assert body == body_snapshot


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"spec": {"template": {"spec": {"containers": [{"image": "httpd"}]}}}},
            500,
            "map: map[image:httpd] does not contain declared merge key: name",
        ),
        (
            {"spec": {"template": {"spec": {"containers": [{"name": "web", "$patch": "merge"}]}}}},
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"spec": {"selector": {"$patch": "merge"}}},
            500,
            "unknown patch type: merge in map: map[$patch:merge]",
        ),
        (
            {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
            400,
            "invalid patch format of retainKeys",
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {
                            "$setElementOrder/containers": [{"name": "web"}],
                            "containers": [{"name": "sidecar", "image": "q"}],
                        }
                    }
                }
            },
            500,
            "The order in patch list:\n[map[image:q name:sidecar]]\n doesn't match "
            "$setElementOrder list:\n[map[name:web]]\n",
        ),
        (
            {"spec": {"template": {"spec": {"$setElementOrder/containers": "web"}}}},
            500,
            "expected a []interface {}, but received a string",
        ),
        (
            {"spec": {"template": {"spec": {"$setElementOrderX/containers": []}}}},
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            ["not", "a", "map"],
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ],
)
def test_refused_patches_answer_like_the_api_server(body: Any, status: int, message: str) -> None:
    with pytest.raises(PatchError) as caught:
        deploy_patch(body)
    assert caught.value.status == status
    assert caught.value.message == message
    assert caught.value.status_body()["code"] == status


def test_custom_resources_get_415_for_strategic_merge_patch() -> None:
    assert not supports_strategic("sentinel.example.com", "RolloutAnalysis")
    assert supports_strategic("apps", "Deployment")
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch({}, {"spec": {}}, "sentinel.example.com", "RolloutAnalysis")
    assert caught.value.status == 415
    assert caught.value.reason == "UnsupportedMediaType"
    assert "application/merge-patch+json" in caught.value.message


def test_table_covers_every_kind_devcluster_serves() -> None:
    served = {
        ("", "Namespace"),
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("", "Event"),
        ("events.k8s.io", "Event"),
        ("apps", "Deployment"),
        ("coordination.k8s.io", "Lease"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    }
    assert served <= set(STRATEGIC_PATCH_FIELDS)
    deployment = STRATEGIC_PATCH_FIELDS[("apps", "Deployment")]
    assert deployment["spec.template.spec.containers"] == ("merge", "name")
    assert deployment["spec.template.spec.initContainers.env"] == ("merge", "name")
    assert deployment["spec.template.spec.containers.volumeMounts"] == ("merge", "mountPath")
    assert deployment["metadata.finalizers"] == ("merge", "")
