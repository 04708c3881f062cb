"""The chart and Helm as the Helm tests use them (tests/deploy/test_helm*.py).

``Helm`` runs ``charts/helm.sh`` (Helm built from the Go module proxy, cached outside the tree)
with its configuration, cache and data under a test's directory. ``as_kustomization`` writes,
for a set of the chart's values, the kustomize overlay that asks deploy/ for the same thing —
``images``, a ``configMapGenerator`` merge, deploy/overlays/providers on top of the mode, a
``secretGenerator``, patches, the template library component — so that what ``helm template``
renders can be compared with what ``kubectl kustomize`` renders for the same settings.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testkit.kubectl import kubectl_binary
from testkit.paths import DEPLOY_DIR, REPO_ROOT

CHART = REPO_ROOT / "charts" / "rollout-sentinel"
HELM = REPO_ROOT / "charts" / "helm.sh"
GENERATE = REPO_ROOT / "charts" / "generate.py"
HOME = "rollout-sentinel"  # the namespace the chart installs into
PROVIDERS = DEPLOY_DIR / "overlays" / "providers"
LIBRARY = DEPLOY_DIR / "components" / "template-library"
# The Secrets deploy/overlays/providers mounts, as the chart's providers.secrets.
PROVIDER_SECRETS = [
    {"name": "thanos", "secretName": "sentinel-provider-thanos"},
    {"name": "mimir", "secretName": "sentinel-provider-mimir"},
    {"name": "victoria", "secretName": "sentinel-provider-victoria"},
]
CONTAINERS = {
    "rollout-sentinel-web": ("migrate", "web"),
    "rollout-sentinel-operator": ("operator",),
}


@dataclass(frozen=True)
class Helm:
    """``charts/helm.sh`` with its state under ``home`` (and ``kubeconfig``'s cluster, if any)."""

    home: Path
    kubeconfig: Path | None = None

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # HOME stays: charts/helm.sh finds its build under ~/.cache.
        env = {
            **os.environ,
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_DATA_HOME": str(self.home / "data"),
        }
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        result = subprocess.run(
            [str(HELM), *args], capture_output=True, text=True, env=env, timeout=900, check=False
        )
        if check:
            assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stderr}"
        return result

    def template(self, values: dict[str, Any], *args: str) -> list[dict[str, Any]]:
        """The objects ``helm template`` renders for ``values`` (CRD included)."""
        path = self.home / "values.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(values))
        out = self.run(
            "template", "rs", str(CHART), "--namespace", HOME, "--include-crds",
            "--values", str(path), *args,
        ).stdout  # fmt: skip
        return [doc for doc in yaml.safe_load_all(out) if doc]


def normal(objects: list[dict[str, Any]]) -> list[str]:
    """Objects as sorted JSON, numbers compared by value (Helm reads the data as JSON floats)."""

    def fix(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    return sorted(json.dumps(fix(o), sort_keys=True) for o in objects)


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize directory`` renders."""
    text = subprocess.run(
        [kubectl_binary(), "kustomize", str(directory)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def as_kustomization(values: dict[str, Any], directory: Path) -> Path:
    """Write under ``directory`` the overlay asking deploy/ for what ``values`` ask the chart."""
    mode = values.get("mode", "single")
    base = DEPLOY_DIR / "overlays" / mode
    directory.mkdir(parents=True)
    providers = values.get("providers", {})
    if providers.get("file"):
        assert providers["file"] == (PROVIDERS / "providers.yaml").read_text()
        assert providers.get("secrets") == PROVIDER_SECRETS
        base = _providers_on(base, directory / "providers")
    literals = [f"{k}={v}" for k, v in values.get("config", {}).items()]
    resources = []
    if mode == "namespaced" and "namespaces" in values:
        base, copies = _without_role_bindings(base, directory / "without-bindings")
        (directory / "namespaces.yaml").write_text(
            yaml.safe_dump_all(
                [
                    {**binding, "metadata": {**binding["metadata"], "namespace": namespace}}
                    for namespace in values["namespaces"]
                    for binding in copies
                ]
            )
        )
        resources.append("namespaces.yaml")
        literals.append(f"SENTINEL_NAMESPACES={','.join(values['namespaces'])}")
    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base, directory), *resources],
        "patches": [],
    }
    if values.get("templates", {}).get("library", True):
        # The chart's default: the library component, as docs/templates.md adds it to an overlay.
        kustomization["components"] = [os.path.relpath(LIBRARY, directory)]
    ingress = values.get("webIngress", {}).get("namespace")
    if ingress:
        # The patch docs/operations.md gives for another ingress controller's namespace.
        label = "/spec/ingress/0/from/0/namespaceSelector/matchLabels/kubernetes.io~1metadata.name"
        kustomization["patches"].append(
            {
                "target": {"kind": "NetworkPolicy", "name": "rollout-sentinel-web-ingress"},
                "patch": yaml.safe_dump([{"op": "replace", "path": label, "value": ingress}]),
            }
        )
    image = values.get("image", {})
    if "repository" in image or "tag" in image:
        kustomization["images"] = [
            {"name": "rollout-sentinel", "newName": image["repository"], "newTag": image["tag"]}
        ]
    if literals:
        kustomization["configMapGenerator"] = [_merge(literals)]
    notifications = values.get("notifications", {})
    if notifications.get("config"):
        (directory / "notify.yaml").write_text(notifications["config"])
        kustomization["secretGenerator"] = [
            {"name": "rollout-sentinel-notify", "namespace": HOME, "files": ["notify.yaml"]}
        ]
    rendered = {o["metadata"]["name"]: o for o in kustomize(base) if o["kind"] == "Deployment"}
    for deployment, containers in CONTAINERS.items():
        if notifications.get("existingSecret"):
            # A JSON patch: a strategic merge would also move the volume to the list's head.
            volumes = rendered[deployment]["spec"]["template"]["spec"]["volumes"]
            (at,) = [i for i, v in enumerate(volumes) if v["name"] == "notify"]
            path = f"/spec/template/spec/volumes/{at}/secret/secretName"
            operation = {"op": "replace", "path": path, "value": notifications["existingSecret"]}
            kustomization["patches"].append(
                {
                    "target": {"kind": "Deployment", "name": deployment},
                    "patch": yaml.safe_dump([operation]),
                }
            )
        spec: dict[str, Any] = {}
        for name in containers:
            changes: dict[str, Any] = {}
            if image.get("pullPolicy"):
                changes["imagePullPolicy"] = image["pullPolicy"]
            if values.get("resources", {}).get(name):
                changes["resources"] = {"$patch": "replace", **values["resources"][name]}
            if changes:
                key = "initContainers" if name == "migrate" else "containers"
                spec.setdefault(key, []).append({"name": name, **changes})
        if spec:
            kustomization["patches"].append(
                {"patch": yaml.safe_dump(_deployment(deployment, spec))}
            )
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def _merge(literals: list[str]) -> dict[str, Any]:
    return {
        "name": "rollout-sentinel",
        "namespace": HOME,
        "behavior": "merge",
        "literals": literals,
    }


def _deployment(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}},
    }


def _providers_on(base: Path, directory: Path) -> Path:
    """deploy/overlays/providers, copied and put on ``base`` instead of ``single``.

    Its ``namespace:`` moves onto its generators: on top of ``namespaced`` a kustomization-wide
    namespace would also move that overlay's RoleBindings out of the watched namespaces.
    """
    shutil.copytree(PROVIDERS, directory)
    path = directory / "kustomization.yaml"
    kustomization = yaml.safe_load(path.read_text())
    assert kustomization["resources"] == ["../single"]
    kustomization["resources"] = [os.path.relpath(base, directory)]
    assert kustomization.pop("namespace") == HOME
    for generator in kustomization["configMapGenerator"]:
        generator["namespace"] = HOME
    path.write_text(yaml.safe_dump(kustomization))
    return directory


def _without_role_bindings(base: Path, directory: Path) -> tuple[Path, list[dict[str, Any]]]:
    """``base`` (the ``namespaced`` overlay) without its RoleBindings in the watched namespaces,
    and the pair of the first of them: deploy/overlays/namespaced says to copy a pair per
    namespace. A layer of its own, as the copies may reuse a deleted one's name and namespace."""
    bindings = [
        o
        for o in kustomize(base)
        if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] != HOME
    ]
    first = bindings[0]["metadata"]["namespace"]
    directory.mkdir(parents=True)
    deletions = [
        {
            "patch": yaml.safe_dump(
                {
                    "$patch": "delete",
                    "apiVersion": b["apiVersion"],
                    "kind": "RoleBinding",
                    "metadata": {k: b["metadata"][k] for k in ("name", "namespace")},
                }
            )
        }
        for b in bindings
    ]
    kustomization = {"resources": [os.path.relpath(base, directory)], "patches": deletions}
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory, [b for b in bindings if b["metadata"]["namespace"] == first]
