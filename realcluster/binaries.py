"""Where ``make realcluster`` puts the binaries and which versions go.mod pins.

``realcluster/build.sh`` computes the same cache path in shell; the launcher
(``realcluster.__main__``) and the tests call :func:`locate` to find the binaries and to say
``run `make realcluster``` when they are missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

GO_MOD = Path(__file__).resolve().parent / "go.mod"
NAMES = ("etcd", "kube-apiserver", "kube-controller-manager")


class NotBuilt(Exception):
    """The binaries for the pinned version are not in the cache yet."""


@dataclass(frozen=True)
class Versions:
    """The versions pinned in realcluster/go.mod."""

    kubernetes: str
    etcd: str


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of the three built executables."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path


def pinned_versions(go_mod: Path = GO_MOD) -> Versions:
    """Read the Kubernetes and etcd versions from go.mod's require lines."""
    found: dict[str, str] = {}
    for line in go_mod.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1].startswith("v"):
            found.setdefault(fields[0], fields[1])
    return Versions(kubernetes=found["k8s.io/kubernetes"], etcd=found["go.etcd.io/etcd/server/v3"])


def cache_root() -> Path:
    """The cache shared by every clone on the machine (REALCLUSTER_CACHE overrides it)."""
    override = os.environ.get("REALCLUSTER_CACHE")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rollout-sentinel" / "realcluster"


def bin_dir(versions: Versions | None = None) -> Path:
    """The directory holding the binaries of the pinned (or given) version."""
    return cache_root() / (versions or pinned_versions()).kubernetes / "bin"


def locate() -> Binaries:
    """Return the built binaries, or raise :class:`NotBuilt` naming what is missing."""
    directory = bin_dir()
    paths = [directory / name for name in NAMES]
    missing = [path.name for path in paths if not os.access(path, os.X_OK)]
    if missing:
        raise NotBuilt(
            f"{', '.join(missing)} not built in {directory}; run `make realcluster` first"
        )
    return Binaries(*paths)
