"""Every setting deploy/, the chart and docs/operations.md name is one the product reads.

A variable set in a manifest that no code reads is a promise nobody keeps
(``SENTINEL_REQUIRE_SECRET_KEY=true`` stood in deploy/base, while start-up requires the key
whenever ``SENTINEL_DEBUG`` is off, whatever that variable says). The product's sources are
its Python packages; the demo, the test kit and the image's scripts read their own variables
and are looked up too, for the docs' rows about them.
"""

from __future__ import annotations

import re
from pathlib import Path

from testkit.paths import REPO_ROOT

_NAME = re.compile(r"\bSENTINEL_[A-Z0-9_]*[A-Z0-9]\b")
_PRODUCT = ("sentinel_site", "analyses", "notifications", "sentinel_operator", "sentinel_cluster")
_TOOLS = ("demo", "testkit", "containers")


def _names(paths: list[Path]) -> set[str]:
    return {name for path in paths for name in _NAME.findall(path.read_text())}


def _read_by(packages: tuple[str, ...]) -> str:
    return "\n".join(
        path.read_text()
        for package in packages
        for path in (REPO_ROOT / package).rglob("*")
        if path.suffix in {".py", ".sh"} and path.is_file()
    )


def test_every_setting_of_deploy_and_the_chart_is_read_by_the_product() -> None:
    manifests = [
        *(REPO_ROOT / "deploy").rglob("*.yaml"),
        *(REPO_ROOT / "charts" / "rollout-sentinel").rglob("*.yaml"),
        *(REPO_ROOT / "charts" / "rollout-sentinel").rglob("*.json"),
    ]
    named = _names(manifests)
    assert "SENTINEL_ALLOWED_HOSTS" in named  # the scan finds what it looks for
    source = _read_by(_PRODUCT)
    unread = sorted(name for name in named if name not in source)
    assert unread == [], f"set in deploy/ or the chart but read by nothing: {unread}"


def test_every_setting_the_docs_name_is_read_by_something() -> None:
    named = _names([*(REPO_ROOT / "docs").glob("*.md"), REPO_ROOT / "README.md"])
    source = _read_by(_PRODUCT + _TOOLS)
    unread = sorted(name for name in named if name not in source)
    assert unread == [], f"named in docs/ or README.md but read by nothing: {unread}"
