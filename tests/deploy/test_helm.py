"""charts/rollout-sentinel: generated from deploy/ and rendering the same objects.

The chart's data is ``kubectl kustomize`` of each overlay (``charts/generate.py``); these tests
check that the committed chart is what the generator writes from today's deploy/, that
``helm lint`` passes, and that ``helm template`` gives, for each mode and a chosen image, the
objects kustomize gives with that image — the CRD included, from the chart's ``crds/``. Helm is
built from the Go module proxy at a pinned version (``charts/helm.sh``).
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.paths import REPO_ROOT

CHART = REPO_ROOT / "charts" / "rollout-sentinel"
HELM = REPO_ROOT / "charts" / "helm.sh"
GENERATE = REPO_ROOT / "charts" / "generate.py"


def _helm(*args: str, home: Path) -> str:
    # HOME stays: charts/helm.sh finds its build under ~/.cache.
    env = {
        **os.environ,
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    result = subprocess.run(
        [str(HELM), *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stderr}"
    return result.stdout


def _normal(objects: list[dict[str, Any]]) -> list[str]:
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


def _kustomize(directory: str) -> list[dict[str, Any]]:
    sys.path.insert(0, str(GENERATE.parent))
    try:
        from generate import render  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return render(directory)


def test_chart_is_generated_from_deploy(tmp_path: Path) -> None:
    fresh = tmp_path / "chart"
    subprocess.run([sys.executable, str(GENERATE), str(fresh)], check=True, capture_output=True)
    for sub in ("files", "crds"):
        compared = filecmp.dircmp(fresh / sub, CHART / sub)
        assert not (compared.diff_files or compared.left_only or compared.right_only), (
            f"charts/rollout-sentinel/{sub} is stale: run python charts/generate.py"
        )
        for name in compared.common_files:
            assert (fresh / sub / name).read_bytes() == (CHART / sub / name).read_bytes(), name


def test_helm_lint(tmp_path: Path) -> None:
    for mode in ("single", "ha", "namespaced"):
        out = _helm("lint", str(CHART), "--set", f"mode={mode}", home=tmp_path)
        assert "0 chart(s) failed" in out


@pytest.mark.parametrize("mode", ["single", "ha", "namespaced"])
def test_helm_template_renders_the_overlays_objects(mode: str, tmp_path: Path) -> None:
    image = "registry.example/rollout-sentinel:9.9.9"
    repository, tag = image.rsplit(":", 1)
    rendered = _helm(
        "template", "rs", str(CHART), "--include-crds", "--set", f"mode={mode}",
        "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
        "--set", "monitoring.enabled=true", home=tmp_path,
    )  # fmt: skip
    from_helm = [doc for doc in yaml.safe_load_all(rendered) if doc]
    expected = _kustomize(f"overlays/{mode}") + _kustomize("monitoring")
    for obj in expected:
        if obj["kind"] == "Deployment":
            pod = obj["spec"]["template"]["spec"]
            for container in [*pod.get("initContainers", []), *pod["containers"]]:
                assert container["image"] == "rollout-sentinel:0.1.0"
                container["image"] = image
    assert _normal(from_helm) == _normal(expected)


def test_helm_refuses_an_unknown_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(HELM), "template", "rs", str(CHART), "--set", "mode=cluster"],
        capture_output=True,
        text=True,
        env={**os.environ, "HELM_CONFIG_HOME": str(tmp_path), "HELM_CACHE_HOME": str(tmp_path)},
        check=False,
    )
    assert result.returncode != 0
    assert 'mode must be one of single, ha, namespaced, not "cluster"' in result.stderr
