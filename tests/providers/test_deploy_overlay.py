"""deploy/overlays/providers: the providers file as a ConfigMap, its secrets as Secret files."""

from __future__ import annotations

import posixpath
import subprocess
from pathlib import Path
from typing import Any

import yaml

from sentinel_operator.provider_config import parse_file
from testkit.kubectl import kubectl_binary
from testkit.paths import REPO_ROOT

OVERLAY = REPO_ROOT / "deploy" / "overlays" / "providers"


def rendered() -> list[dict[str, Any]]:
    text = subprocess.run(
        [kubectl_binary(), "kustomize", str(OVERLAY)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def pod(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    return found[0]["spec"]["template"]["spec"]


def mounts(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return each mount path of the first container with the volume it mounts."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in spec["containers"][0]["volumeMounts"]}


def test_the_operator_mounts_every_file_the_providers_file_names(tmp_path: Path) -> None:
    objects = rendered()
    config = next(o for o in objects if o["metadata"]["name"].startswith("rollout-sentinel-pro"))
    settings = next(
        o
        for o in objects
        if o["kind"] == "ConfigMap" and "SENTINEL_PROVIDERS_FILE" in o.get("data", {})
    )
    path = Path(settings["data"]["SENTINEL_PROVIDERS_FILE"])
    local = tmp_path / path.name
    local.write_text(config["data"][path.name])
    providers = parse_file(str(local), read_secrets=False)
    assert {p.name for p in providers} >= {"default", "mimir-payments"}

    operator = mounts(pod(objects, "rollout-sentinel-operator"))
    assert operator[str(path.parent)]["configMap"]["name"] == config["metadata"]["name"]
    for provider in providers:
        for file in provider.files:
            volume = operator[posixpath.dirname(file)]
            assert "secret" in volume, (provider.name, file)

    web = mounts(pod(objects, "rollout-sentinel-web"))
    assert web[str(path.parent)]["configMap"]["name"] == config["metadata"]["name"]
    secrets = {v["secret"]["secretName"] for v in web.values() if "secret" in v}
    assert not any(name.startswith("sentinel-provider-") for name in secrets)
