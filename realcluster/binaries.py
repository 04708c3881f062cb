"""Where ``make realcluster`` puts the binaries and which versions the go.mod files pin.

``realcluster/build.sh`` computes the same cache paths in shell; the launcher
(``realcluster.__main__``) and the tests call :func:`locate` (the control plane, kube-scheduler
and kwok) and :func:`prometheus` (the Prometheus 3.x of the real tier) to find the binaries
and to say ``run `make realcluster``` when they are missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
GO_MOD = HERE / "go.mod"
KWOK_GO_MOD = HERE / "kwok" / "go.mod"
PROMETHEUS_GO_MOD = HERE / "prometheus" / "go.mod"
NAMES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
KWOK_STAGES = "stages.yaml"


class NotBuilt(Exception):
    """The binaries for the pinned versions are not in the cache yet."""


@dataclass(frozen=True)
class Versions:
    """The versions pinned in realcluster/go.mod, realcluster/kwok/go.mod and
    realcluster/prometheus/go.mod."""

    kubernetes: str
    etcd: str
    kwok: str
    # The release (``3.16.0``), not the Go module version (``v0.316.0``).
    prometheus: str


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of the built executables and kwok's stages file."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path
    kwok_stages: Path


def _requirements(go_mod: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in go_mod.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1].startswith("v"):
            found.setdefault(fields[0], fields[1])
    return found


def prometheus_release(module_version: str) -> str:
    """Map Prometheus's Go module version to its release: ``v0.316.0`` is ``3.16.0``."""
    minor, patch = module_version.removeprefix("v0.").split(".")[:2]
    return f"{int(minor) // 100}.{int(minor) % 100}.{patch}"


def pinned_versions() -> Versions:
    """Read the pinned versions from the three go.mod files' require lines."""
    control_plane = _requirements(GO_MOD)
    return Versions(
        kubernetes=control_plane["k8s.io/kubernetes"],
        etcd=control_plane["go.etcd.io/etcd/server/v3"],
        kwok=_requirements(KWOK_GO_MOD)["sigs.k8s.io/kwok"],
        prometheus=prometheus_release(
            _requirements(PROMETHEUS_GO_MOD)["github.com/prometheus/prometheus"]
        ),
    )


def cache_root() -> Path:
    """The cache shared by every clone on the machine (REALCLUSTER_CACHE overrides it)."""
    override = os.environ.get("REALCLUSTER_CACHE")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rollout-sentinel" / "realcluster"


def bin_dir(versions: Versions | None = None) -> Path:
    """The directory holding the control plane's binaries of the pinned (or given) version."""
    return cache_root() / (versions or pinned_versions()).kubernetes / "bin"


def kwok_dir(versions: Versions | None = None) -> Path:
    """The directory holding kwok and its stages file."""
    return cache_root() / f"kwok-{(versions or pinned_versions()).kwok}" / "bin"


def prometheus_dir(versions: Versions | None = None) -> Path:
    """The directory holding the built Prometheus."""
    return cache_root() / f"prometheus-v{(versions or pinned_versions()).prometheus}" / "bin"


def _missing(paths: list[Path]) -> list[str]:
    return [path.name for path in paths if not path.is_file()]


def _not_built(missing: list[str], where: str) -> NotBuilt:
    return NotBuilt(f"{', '.join(missing)} not built in {where}; run `make realcluster` first")


def locate() -> Binaries:
    """Return the built binaries, or raise :class:`NotBuilt` naming what is missing."""
    versions = pinned_versions()
    paths = [bin_dir(versions) / name for name in NAMES]
    paths += [kwok_dir(versions) / "kwok", kwok_dir(versions) / KWOK_STAGES]
    missing = _missing(paths)
    if missing:
        raise _not_built(missing, str(cache_root()))
    return Binaries(*paths)


def prometheus() -> Path:
    """Return the built Prometheus 3.x, or raise :class:`NotBuilt`."""
    path = prometheus_dir() / "prometheus"
    if _missing([path]):
        raise _not_built(["prometheus"], str(path.parent))
    return path
