"""Generate charts/rollout-sentinel from deploy/: ``python charts/generate.py``.

deploy/ is the one source of truth. Each overlay (``single``, ``ha``, ``namespaced``) and
``deploy/monitoring`` is rendered with kubectl's kustomize and stored in the chart as data
(``files/<name>.json``, the CRDs as the overlays render them under ``crds/``, one file
each); the chart's one template picks the overlay of ``.Values.mode``, sets the image from
``.Values.image`` and emits the objects. The component ``deploy/components/template-library``
(the library of cluster templates) is rendered on its own into ``files/library.json``, emitted
when ``.Values.templates.library`` is on. So for the same settings ``helm template`` and
``kubectl kustomize`` give the same objects, which tests/deploy/test_helm.py checks, together
with this script's output being the committed one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "rollout-sentinel"
SOURCES = {
    "single": "overlays/single",
    "ha": "overlays/ha",
    "namespaced": "overlays/namespaced",
    "monitoring": "monitoring",
}
# Components: rendered through a kustomization of their own that only includes them.
COMPONENTS = {"library": "components/template-library"}


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else "kubectl"


def render(directory: str) -> list[dict]:
    """Return the objects of ``deploy/<directory>`` as kubectl's kustomize renders them."""
    return _kustomize(ROOT / "deploy" / directory)


def render_component(directory: str) -> list[dict]:
    """Return the objects the component ``deploy/<directory>`` adds to an empty kustomization."""
    with tempfile.TemporaryDirectory() as empty:
        component = os.path.relpath(ROOT / "deploy" / directory, empty)
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "components": [component],
        }
        (Path(empty) / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        return _kustomize(Path(empty))


def _kustomize(directory: Path) -> list[dict]:
    text = subprocess.run(
        [_kubectl(), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def generate(chart: Path) -> None:
    """Write the chart's generated files under ``chart``."""
    files = chart / "files"
    shutil.rmtree(files, ignore_errors=True)
    files.mkdir(parents=True)
    (chart / "crds").mkdir(exist_ok=True)
    for name, directory in SOURCES.items():
        objects = render(directory)
        crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        if crds:
            # Helm installs crds/ before the templates and never upgrades or deletes them.
            for crd in crds:
                text = yaml.safe_dump(crd, sort_keys=True)
                (chart / "crds" / f"{crd['spec']['names']['singular']}.yaml").write_text(text)
        objects = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
        (files / f"{name}.json").write_text(json.dumps(objects, indent=1, sort_keys=True) + "\n")
    for name, directory in COMPONENTS.items():
        objects = render_component(directory)
        (files / f"{name}.json").write_text(json.dumps(objects, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else CHART)
