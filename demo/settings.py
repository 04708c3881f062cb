"""The demo's knobs, read from the environment by ``demo.runner``.

Defaults tell the story in a few minutes for a person at a terminal; the demo's own test
(``tests/demo``) shortens it and moves everything to free ports and a scratch directory.
``SENTINEL_DEMO_CLUSTER`` (``make demo CLUSTER=real``) picks the cluster: devcluster by default,
or the real control plane that ``make realcluster`` builds (docs/realcluster.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# The API server port a Kubernetes user expects; taken only when free unless asked for.
PREFERRED_CLUSTER_PORT = 6443
DEFAULT_WEB_PORT = 8000

_DURATION = re.compile(r"^[1-9][0-9]*(s|m|h)$")

# The clusters the demo can run on: devcluster (starts in two seconds, needs no Go), and
# realcluster, kube-apiserver + etcd + kube-controller-manager built by `make realcluster`.
DEVCLUSTER = "dev"
REALCLUSTER = "real"
CLUSTERS = (DEVCLUSTER, REALCLUSTER)


class DemoError(Exception):
    """The demo cannot go on; the message is one sentence for the person running it."""


@dataclass(frozen=True)
class DemoSettings:
    project_dir: Path
    work_dir: Path
    # DEVCLUSTER or REALCLUSTER.
    cluster: str
    # Web UI port; busy means another demo (or anything else) runs: a clear error.
    web_port: int
    # None: PREFERRED_CLUSTER_PORT if free, else any free port; 0: any free port.
    cluster_port: int | None
    # Seconds of healthy traffic before the regression.
    regression_after: float
    # The analysis's interval and the rate() window of its query (Go-style durations).
    interval: str
    rate_window: str

    @classmethod
    def from_env(cls, env: Mapping[str, str], project_dir: Path) -> DemoSettings:
        """Return the settings in ``env``; raise DemoError naming a malformed variable."""
        work_dir = Path(env.get("SENTINEL_DEMO_DIR") or project_dir / "var" / "demo")
        cluster_raw = env.get("SENTINEL_DEMO_CLUSTER_PORT", "")
        return cls(
            project_dir=project_dir,
            work_dir=work_dir if work_dir.is_absolute() else project_dir / work_dir,
            cluster=_cluster(env.get("SENTINEL_DEMO_CLUSTER", "")),
            web_port=_port("SENTINEL_DEMO_PORT", env.get("SENTINEL_DEMO_PORT", ""))
            or DEFAULT_WEB_PORT,
            cluster_port=_port("SENTINEL_DEMO_CLUSTER_PORT", cluster_raw) if cluster_raw else None,
            regression_after=_seconds(
                "SENTINEL_DEMO_REGRESSION_AFTER", env.get("SENTINEL_DEMO_REGRESSION_AFTER", "120")
            ),
            interval=_duration("SENTINEL_DEMO_INTERVAL", env.get("SENTINEL_DEMO_INTERVAL", "10s")),
            rate_window=_duration(
                "SENTINEL_DEMO_RATE_WINDOW", env.get("SENTINEL_DEMO_RATE_WINDOW", "1m")
            ),
        )


def _cluster(raw: str) -> str:
    value = raw.strip() or DEVCLUSTER
    if value not in CLUSTERS:
        raise DemoError(
            f"SENTINEL_DEMO_CLUSTER={raw!r} (make demo CLUSTER=...) is neither {DEVCLUSTER!r} "
            f"(devcluster, the default) nor {REALCLUSTER!r} (the real control plane)."
        )
    return value


def _port(name: str, raw: str) -> int:
    value = raw.strip()
    if not value:
        return 0
    if not value.isdigit() or int(value) > 65535:
        raise DemoError(f"{name}={raw!r} is not a port number (0-65535).")
    return int(value)


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < 86400:
        raise DemoError(f"{name}={raw!r} is not a number of seconds (0 or more).")
    return value


def _duration(name: str, raw: str) -> str:
    value = raw.strip()
    if not _DURATION.match(value):
        raise DemoError(f"{name}={raw!r} is not a duration such as 10s or 1m.")
    return value
