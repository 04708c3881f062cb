"""The image: only the runtime packages, a base pinned by digest, a non-root user.

What it promises and why: docs/operations.md#the-image.

Docker cannot build here, so the build is replayed with what Docker would use: the build
context is the repository filtered by ``.dockerignore`` (its allow-list read from the file),
and the Dockerfile's own ``pip install`` command installs that context into a fresh virtual
environment. What lands there, and ``manage.py check`` run from the context as the image's
WORKDIR would, show what the image ships.

One departure from the image: ``--no-deps --target`` — the pinned third-party dependencies are
not downloaded again but come from the project's venv, made visible to the fresh one through a
``.pth`` path, which does not load the project's editable install, so the repository's other
packages stay out of reach. (pip still builds in isolation, as in the image, so it fetches
setuptools from the package index.)
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from testkit.paths import REPO_ROOT

RUNTIME = {
    "sentinel_core",
    "sentinel_cluster",
    "sentinel_site",
    "analyses",
    "notifications",
    "sentinel_operator",
}
NOT_SHIPPED = ("devcluster", "realcluster", "testkit", "demo", "bench", "tests")
DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()


def _context(target: Path) -> Path:
    """Copy the build context ``.dockerignore`` lets through into ``target``."""
    patterns = [
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    target.mkdir()
    # This reader understands the file's shape: exclude all, re-include top-level names, then
    # exclude caches. Anything else must be taught to it rather than misread.
    assert patterns[0] == "*"
    included = [p[1:] for p in patterns if p.startswith("!")]
    excluded = [p for p in patterns[1:] if not p.startswith("!")]
    assert all("/" not in name and "*" not in name for name in included)
    assert excluded == ["**/__pycache__", "**/*.pyc"]
    for name in included:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(source, target / name)
    return target


def _install_command() -> list[str]:
    """The Dockerfile's RUN line's ``pip install ...`` (up to the first ``&&``)."""
    match = re.search(r"^RUN (pip install [^&\\\n]*)", DOCKERFILE, re.MULTILINE)
    assert match, "the Dockerfile's RUN line starts with the pip install"
    return shlex.split(match.group(1))


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Third-party dependencies from the project's venv (a plain path: its .pth files, among
    # them the editable install's finder, are not processed).
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_dockerfile_installs_only_the_runtime_packages(tmp_path: Path) -> None:
    context = _context(tmp_path / "context")
    assert sorted(p.name for p in context.iterdir()) == sorted(
        ["pyproject.toml", "manage.py", "crds", *RUNTIME]
    )
    python = _venv(tmp_path / "venv")
    command = _install_command()
    assert command == ["pip", "install", "--no-cache-dir", "."]
    target = tmp_path / "installed"
    subprocess.run(
        [
            sys.executable,
            "-m",
            *command,
            "--no-deps",
            "--target",
            str(target),
        ],
        cwd=context,
        check=True,
        capture_output=True,
    )
    top_level = {p.name for p in target.iterdir() if not p.name.endswith(".dist-info")}
    assert top_level == RUNTIME

    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(target),
        "SENTINEL_SECRET_KEY": "image-test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    # From the context, as the image's WORKDIR /app: Django's checks load every app.
    check = subprocess.run(
        [str(python), "manage.py", "check"], cwd=context, env=env, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    assert "System check identified no issues" in check.stdout
    # And from elsewhere, only the installed copy: the runtime imports, nothing else does.
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    found = subprocess.run(
        [str(python), "-c", probe, *sorted(RUNTIME), *NOT_SHIPPED],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert found.strip() == str(sorted(RUNTIME))


def test_base_image_is_pinned_and_user_is_not_root() -> None:
    base = re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE)
    assert len(base) == 1
    assert re.fullmatch(
        r"docker\.io/library/python:3\.11[\w.-]*-slim[\w.-]*@sha256:[0-9a-f]{64}", base[0]
    )
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    uid, _, gid = users[-1].partition(":")
    assert int(uid) > 0 and int(gid) > 0
    # The UID the Pods run as (deploy/base) is the image's.
    assert f"runAsUser: {uid}" in (REPO_ROOT / "deploy" / "base" / "web.yaml").read_text()
