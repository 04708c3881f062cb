"""The image, built with ``make image``'s script and run as ``deploy/`` runs it (docs/operations.md,
"The image").

Each Pod comes from the rendered ``single`` overlay (``tests/deploy/image.py`` turns its Pod
template into ``podman run`` arguments): uid/gid 10001, read-only root filesystem, all
capabilities dropped, no privilege escalation, an ``emptyDir`` at /tmp, the SQLite claim at
/data, the optional notification Secret. The web Pod runs its ``migrate`` init container and
then gunicorn, which must serve /healthz, the admin's login page and its static files, with
nothing failing in its log.

Every test here builds the image or starts containers, so the module is in the ``server`` tier
(docs/testkit.md#tiers): ``make check`` leaves it out, and ``tests/deploy/image.py`` refuses to
start a container for a test outside that tier.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml

from testkit.kubectl import kubectl_binary
from testkit.paths import DEPLOY_DIR, REPO_ROOT
from tests.deploy.image import (
    Pod,
    config_map,
    deployment,
    fresh_volume,
    logs,
    podman,
    published_port,
    run,
    started,
    wait_running,
)

RUNTIME = (
    "sentinel_core",
    "sentinel_cluster",
    "sentinel_db",
    "sentinel_config",
    "sentinel_site",
    "accounts",
    "analyses",
    "notifications",
    "sentinel_operator",
)
NOT_SHIPPED = ("devcluster", "realcluster", "testkit", "demo", "bench", "tests")
DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
pytestmark = pytest.mark.server

HOST = "rollout-sentinel-web.rollout-sentinel.svc"  # listed in the base's ALLOWED_HOSTS
# What `podman image inspect` reports after `make image` (docs/operations.md, "The image");
# a change that grows the image past this is noticed here.
SIZE_LIMIT_MB = 450


@pytest.fixture(scope="module")
def single() -> list[dict[str, Any]]:
    """The ``single`` overlay, rendered by kubectl's kustomize."""
    text = subprocess.run(
        [kubectl_binary(), "kustomize", str(DEPLOY_DIR / "overlays" / "single")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture
def claim() -> Iterator[str]:
    """A fresh podman volume for the claim ``rollout-sentinel-data``, as a new PVC is empty."""
    with fresh_volume() as name:
        yield name


def _pod(single: list[dict[str, Any]], name: str, claim: str) -> Pod:
    return Pod.of(
        deployment(single, name),
        config_map(single),
        secret_env={"SENTINEL_SECRET_KEY": uuid.uuid4().hex * 2},
        claims={"rollout-sentinel-data": claim},
    )


@pytest.fixture
def web_pod(single: list[dict[str, Any]], claim: str) -> Iterator[Pod]:
    pod = _pod(single, "rollout-sentinel-web", claim)
    try:
        yield pod
    finally:
        pod.remove()


def _python(image: str, code: str, *args: str, workdir: str = "/app") -> str:
    result = podman(
        "run", "--rm", "--read-only", "--network", "none", "--workdir", workdir,
        image, "python", "-c", code, *args,
    )  # fmt: skip
    return result.stdout.strip()


def test_image_holds_the_product_and_nothing_else(image: str) -> None:
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    # From the WORKDIR, as gunicorn and manage.py run, and from elsewhere (PYTHONPATH).
    for workdir in ("/app", "/"):
        found = _python(image, probe, *RUNTIME, *NOT_SHIPPED, workdir=workdir)
        assert found == str(list(RUNTIME)), workdir
    listing = _python(image, "import os; print(sorted(os.listdir('/app')))")
    assert listing == str(sorted(["manage.py", "pyproject.toml", "crds", "var", *RUNTIME]))
    # No installer and none of the dependencies' own test suites.
    leftovers = _python(
        image,
        "import pathlib, importlib.util as u, site;"
        "root = pathlib.Path(site.getsitepackages()[0]);"
        "print(sorted({p.name for p in root.rglob('tests') if p.is_dir()}),"
        " [m for m in ('pip', 'setuptools') if u.find_spec(m)])",
    )
    assert leftovers == "[] []"


def test_dependencies_native_code_loads(image: str) -> None:
    """Every dependency with compiled code imports and works on the image's base (the Debian
    base once lacked libstdc++, which NumPy's wheels load: no compare, no charts)."""
    code = (
        "import io, matplotlib; matplotlib.use('Agg');"
        "import matplotlib.pyplot as plt, numpy, scipy.stats, psycopg, cryptography.fernet,"
        " pydantic_core, yaml, kiwisolver;"
        "assert psycopg.pq.__impl__ == 'binary', psycopg.pq.__impl__;"
        "assert hasattr(yaml, 'CSafeLoader');"
        "p = scipy.stats.mannwhitneyu([1, 2, 3, 4], [5, 6, 7, 8]).pvalue;"
        "figure, axes = plt.subplots(); axes.plot(numpy.arange(3)); out = io.BytesIO();"
        "figure.savefig(out, format='png'); print(round(p, 4), out.getvalue()[:4])"
    )
    assert _python(image, code) == "0.0286 b'\\x89PNG'"


# Extension modules that do not load on their own, stripped or not: two need Tk (no GUI in a
# server), and SciPy's compiled sqrtm helper fails its own import in the wheel as published
# (a circular import; scipy.linalg falls back to its Python version).
UNLOADABLE = {"matplotlib.backends._tkagg", "PIL._imagingtk", "scipy.linalg._matfuncs_sqrtm_triu"}


def test_every_compiled_module_loads(image: str) -> None:
    """Each extension module of the dependencies imports: their compiled code is stripped of its
    symbols in the build (Dockerfile), and a damaged library would show here as an ImportError
    of its module (or of one whose bundled library it is)."""
    code = (
        # psycopg_binary's modules load after psycopg, scipy.linalg's after scipy.linalg.
        "import importlib, pathlib, site, json, psycopg, scipy.linalg;"
        "root = pathlib.Path(site.getsitepackages()[0]); failed = {}; count = 0\n"
        "for path in sorted(root.rglob('*.so')):\n"
        "    parts = path.relative_to(root).parts\n"
        "    if parts[0].endswith('.libs'): continue\n"
        "    name = '.'.join([*parts[:-1], parts[-1].split('.')[0]]); count += 1\n"
        "    try: importlib.import_module(name)\n"
        "    except Exception as error: failed[name] = repr(error)\n"
        "print(json.dumps({'count': count, 'failed': failed}))"
    )
    found = json.loads(_python(image, code))
    assert found["count"] > 100, found
    assert set(found["failed"]) <= UNLOADABLE, found["failed"]


def test_image_size_and_base(image: str) -> None:
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    assert size <= SIZE_LIMIT_MB * 1_000_000, f"{size / 1e6:.0f} MB"
    # The release base is the pinned python:*-slim digest; the user is numeric and not root.
    base = re.search(r"^ARG BASE=(\S+)", DOCKERFILE, re.MULTILINE)
    assert base and re.fullmatch(
        r"docker\.io/library/python:3\.11[\w.-]*-slim[\w.-]*@sha256:[0-9a-f]{64}", base[1]
    )
    # The image is FROM the base; the build stages' base is the same unless build.sh passes one.
    stages = re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE)
    assert stages[-1] == "${BASE}" and set(stages[:-1]) == {"${BUILD_BASE}"}, stages
    assert re.search(r"^ARG BUILD_BASE=\$\{BASE\}$", DOCKERFILE, re.MULTILINE)
    user = podman("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()
    assert user == "10001:10001"
    assert "runAsUser: 10001" in (DEPLOY_DIR / "base" / "web.yaml").read_text()


def test_check_deploy_reports_only_w008(image: str, web_pod: Pod) -> None:
    out = run(web_pod, "web", image=image, args=["python", "manage.py", "check", "--deploy"])
    assert re.findall(r"\(([\w.]+\.[WE]\d+)\)", out) == ["security.W008"], out
    assert "System check identified 1 issue" in out


def test_web_pod_serves_health_admin_and_static_files(image: str, web_pod: Pod) -> None:
    migrated = run(web_pod, "migrate", image=image)
    assert "Applying analyses.0001_initial... OK" in migrated
    with started(web_pod, "web", image=image, network=["--publish", "127.0.0.1::8000"]) as web:
        url = f"http://127.0.0.1:{published_port(web, 8000)}"
        session = requests.Session()
        session.headers["Host"] = HOST

        def healthy() -> bool:
            # Until a worker has imported the app, connections hang or are refused.
            try:
                return session.get(f"{url}/healthz", timeout=10).status_code == 200
            except (requests.ConnectionError, requests.Timeout):
                return False

        wait_running(web, healthy, "gunicorn serving /healthz", timeout=120)
        login = session.get(f"{url}/admin/login/", timeout=10)
        assert login.status_code == 200 and 'name="password"' in login.text
        static = re.findall(r'(?:href|src)="(/static/[^"]+)"', login.text)
        assert any(path.endswith(".css") for path in static), static
        for path in static:
            answer = session.get(url + path, timeout=10)
            assert answer.status_code == 200, path
            assert answer.headers["Content-Type"].split(";")[0] in {
                "text/css",
                "text/javascript",
                "application/javascript",
            }, path
        # gunicorn's control socket (under $HOME) works on the read-only root: the image's
        # HOME is the /tmp volume, not /app.
        log = logs(web)
        assert "Control socket listening at /tmp/.gunicorn/gunicorn.ctl" in log, log
        for failure in ("Read-only file system", "Traceback", "[ERROR]", "Permission denied"):
            assert failure not in log, log


def test_default_database_is_on_the_data_volume(image: str, claim: str) -> None:
    """Without DATABASE_URL the SQLite file goes to /data, writable by uid 10001 on a fresh
    volume that nothing chowned (the image's /data is the user's)."""
    result = podman(
        "run", "--rm", "--read-only", "--read-only-tmpfs=false", "--user", "10001:10001",
        "--cap-drop", "all", "--volume", f"{claim}:/data", "--env", "SENTINEL_SECRET_KEY=x",
        image, "python", "manage.py", "migrate", "--no-input", timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    listing = podman(
        "run", "--rm", "--volume", f"{claim}:/data", image, "ls", "-ln", "/data"
    ).stdout
    assert re.search(r"10001\s+10001\s+\d+ .* sentinel\.sqlite3$", listing, re.MULTILINE), listing
