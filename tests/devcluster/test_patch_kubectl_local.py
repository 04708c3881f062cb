"""devcluster.patch and .strategic against the real Go implementation: ``kubectl patch --local``.

``kubectl patch --local -f FILE --type strategic|merge|json -p PATCH -o json`` runs the same
k8s.io/apimachinery strategicpatch and evanphx/json-patch code the API server runs, without a
server. Each case applies one patch both ways and requires the same object (or the same error).
kubectl prints the library's raw output, so the directive keys and null members it leaves in values
new to the object are dropped before comparing, as the server's decode into Go types drops them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devcluster.patch import PatchError, json_merge_patch, json_patch
from devcluster.strategic import _as_typed, strategic_merge_patch

KUBECTL = Path(sys.executable).with_name("kubectl")

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web"},
        "finalizers": ["a", "b"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u1"}],
    },
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "ports": [{"containerPort": 80, "name": "http"}],
                    },
                    {"name": "side", "image": "busybox", "args": ["sleep", "1"]},
                ],
                "volumes": [{"name": "v", "configMap": {"name": "c"}}],
            },
        },
    },
    "status": {"conditions": [{"type": "Available", "status": "True"}]},
}


def _template_spec(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


STRATEGIC_CASES: list[Any] = [
    {"spec": {"paused": True}},
    {"spec": {"paused": None}},
    _template_spec(
        {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "nginx:2"}],
        }
    ),
    _template_spec({"containers": [{"name": "app", "$patch": "delete"}]}),
    _template_spec({"containers": [{"name": "new", "image": "x"}, {"name": "app", "image": "y"}]}),
    _template_spec({"containers": [{"name": "new", "image": "x"}, {"$patch": "replace"}]}),
    _template_spec(
        {
            "containers": [
                {
                    "name": "app",
                    "$setElementOrder/env": [{"name": "B"}, {"name": "C"}, {"name": "A"}],
                    "env": [{"name": "C", "value": "3"}],
                }
            ]
        }
    ),
    _template_spec(
        {"containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}, {"name": "Z"}]}]}
    ),
    _template_spec({"containers": [{"name": "app", "ports": [{"containerPort": 443}]}]}),
    _template_spec(
        {"containers": [{"name": "side", "args": ["x"]}, {"name": "app", "args": None}]}
    ),
    _template_spec({"volumes": [{"name": "v", "$patch": "delete"}, {"name": "w", "emptyDir": {}}]}),
    _template_spec(
        {"containers": [{"name": "z", "env": [{"name": "Q", "value": None}, {"name": "R"}]}]}
    ),
    {"metadata": {"finalizers": ["c", "a", "c"]}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    {"metadata": {"$deleteFromPrimitiveList/missing": ["x"]}},
    {"metadata": {"$setElementOrder/finalizers": ["b", "z", "a"], "finalizers": ["z"]}},
    {
        "metadata": {
            "ownerReferences": [{"uid": "u2", "name": "p", "kind": "K", "apiVersion": "v1"}]
        }
    },
    {"metadata": {"labels": {"app": None, "tier": "x"}}},
    {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}},
    {"spec": {"strategy": {"$patch": "delete"}}},
    {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "o"}]}}}},
    {"spec": {"replicas": {"odd": None, "shape": 1}}},
    {"status": {"conditions": [{"type": "Progressing", "status": "True"}]}},
    {"$patch": "replace", "kind": "Deployment", "metadata": {"name": "web"}},
    _template_spec({"containers": [{"image": "no-name"}]}),
    _template_spec({"containers": [{"name": "app", "$patch": "merge"}]}),
    {"spec": {"selector": {"$patch": "merge"}}},
    {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
    _template_spec(
        {
            "$setElementOrder/containers": [{"name": "app"}],
            "containers": [{"name": "side", "image": "q"}],
        }
    ),
]

JSON_PATCH_CASES: list[Any] = [
    [{"op": "replace", "path": "/spec/replicas", "value": 3}],
    [{"op": "add", "path": "/metadata/labels/x~1y", "value": "1"}],
    [{"op": "remove", "path": "/metadata/finalizers/0"}],
    [{"op": "add", "path": "/metadata/finalizers/-", "value": "z"}],
    [{"op": "add", "path": "/metadata/finalizers/-1", "value": "z"}],
    [{"op": "remove", "path": "/metadata/finalizers/-1"}],
    [{"op": "replace", "path": "/metadata/nope", "value": 1}],
    [{"op": "test", "path": "/spec/replicas", "value": 1}, {"op": "remove", "path": "/status"}],
    [{"op": "test", "path": "/spec/nothing", "value": None}],
    [{"op": "move", "from": "/metadata/finalizers", "path": "/metadata/moved"}],
    [{"op": "copy", "from": "/spec/template/spec/containers/0", "path": "/spec/x"}],
    [{"op": "copy", "from": "/spec/nope", "path": "/spec/x"}],
    [
        {
            "op": "move",
            "from": "/spec/template/spec/containers/1",
            "path": "/spec/template/spec/containers/0",
        }
    ],
    [{"op": "test", "path": "/spec/replicas", "value": 2}],
    [{"op": "add", "path": "/metadata/nope/deeper", "value": 1}],
    [{"op": "remove", "path": "/metadata/nope"}],
    [{"op": "bogus", "path": "/spec"}],
]

MERGE_CASES: list[Any] = [
    {"metadata": {"labels": {"team": "a"}}},
    {"metadata": {"labels": {"app": None}}},
    {"metadata": {"finalizers": None}},
    {"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}},
    {"spec": {"x": {"y": None, "z": {"w": None, "v": 1}}}},
]


def _kubectl_patch(tmp_path: Path, patch_type: str, patch: Any) -> Any:
    manifest = tmp_path / "object.json"
    manifest.write_text(json.dumps(DEPLOYMENT))
    command = [str(KUBECTL), "patch", "--local", "-f", str(manifest), "--type", patch_type]
    result = subprocess.run(
        [*command, "-p", json.dumps(patch), "-o", "json"],
        capture_output=True,
        text=True,
        env={"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "PATH": "/usr/bin"},
        timeout=30,
        check=False,
    )
    if result.returncode:
        return ("error", result.stderr.strip().removeprefix("error: "))
    return json.loads(result.stdout)


def _ours(apply: Any, patch: Any) -> Any:
    try:
        return apply(patch)
    except PatchError as exc:
        return ("error", exc.cause or exc.message)


@pytest.mark.parametrize("patch", STRATEGIC_CASES, ids=lambda p: json.dumps(p)[:60])
def test_strategic_merge_patch_matches_kubectl(tmp_path: Path, patch: Any) -> None:
    expected = _kubectl_patch(tmp_path, "strategic", patch)
    ours = _ours(lambda p: strategic_merge_patch(DEPLOYMENT, p, "apps", "Deployment"), patch)
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple)
        assert ours[1].strip() == expected[1]
    else:
        assert ours == _as_typed(expected)


@pytest.mark.parametrize("patch", JSON_PATCH_CASES, ids=lambda p: json.dumps(p)[:60])
def test_json_patch_matches_kubectl(tmp_path: Path, patch: Any) -> None:
    expected = _kubectl_patch(tmp_path, "json", patch)
    ours = _ours(lambda p: json_patch(DEPLOYMENT, p), patch)
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple)
        assert ours[1] == expected[1]
    else:
        assert ours == expected


@pytest.mark.parametrize("patch", MERGE_CASES, ids=lambda p: json.dumps(p)[:60])
def test_merge_patch_matches_kubectl(tmp_path: Path, patch: Any) -> None:
    assert json_merge_patch(DEPLOYMENT, patch) == _kubectl_patch(tmp_path, "merge", patch)
