"""Benchmark: REST API page latency under gunicorn with a large mirror and history.

``python -m bench.api_pages [--analyses 10000] [--evaluations 1000000] [--gunicorn-workers 2]``

Builds a throwaway SQLite database (``DATABASE_URL``) with ``manage.py migrate``, fills it
with ``bench.seed_history`` (10,000 analyses, 1,000,000 evaluations with two metric results
each), creates a user holding only the ``view_analysis`` permission and a token for it with
``manage.py create_api_token``, serves ``gunicorn sentinel_site.wsgi`` on a free port, and
times 50-row pages sequentially with ``requests`` (a new connection per request: gunicorn's
sync workers do not keep connections alive). Target (docs/performance.md#summary): p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import requests

from bench.bench_db import manage
from bench.harness import percentile
from bench.seed_history import Seeded, seed
from testkit.operator import migrate_database
from testkit.paths import REPO_ROOT
from testkit.ports import free_port
from testkit.processes import ChildProcess
from testkit.site_env import with_defaults
from testkit.waiting import wait_until

TARGET_P99 = 0.050
# A reader of every namespace: the permission, and the grant tenancy asks for besides
# (docs/security.md); without the grant the user lists nothing.
_USER_SCRIPT = """
from django.contrib.auth.models import Permission, User
from accounts.models import ALL_NAMESPACES, NamespaceGrant
user = User.objects.create_user("bench", password="bench-not-used")
user.user_permissions.add(Permission.objects.get(codename="view_analysis"))
NamespaceGrant.objects.create(user=user, namespace=ALL_NAMESPACES, can_view=True)
"""


@dataclass(frozen=True)
class Timing:
    label: str
    path: str
    rows: int
    bytes: int
    p50: float
    p90: float
    p99: float
    maximum: float
    # The same requests as gunicorn's access log timed them (inside the worker).
    server_p50: float
    server_p99: float
    # Whether the target (docs/performance.md#summary) covers this page (plain pages; filters are
    # extra).
    target: bool


class AccessLog:
    """Read the worker-side durations of requests from gunicorn's access log."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[str]:
        try:
            return self.path.read_text().splitlines()
        except OSError:
            return []

    def durations_since(self, count: int) -> list[float]:
        """Return the durations (seconds) logged after the first ``count`` lines."""
        # The log is written line by line; give the last request's line a moment to land.
        time.sleep(0.3)
        return [int(line.rsplit(" ", 1)[1]) / 1e6 for line in self.lines()[count:] if line]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--analyses", type=int, default=10_000)
    parser.add_argument("--evaluations", type=int, default=1_000_000)
    parser.add_argument("--hot-share", type=float, default=0.2, help="history of one analysis")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument("--requests", type=int, default=500, help="timed requests per page")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the database here")
    parser.add_argument(
        "--gunicorn-arg",
        action="append",
        default=[],
        help="extra gunicorn argument (repeatable), e.g. --gunicorn-arg=--config=FILE",
    )
    return parser.parse_args(argv)


@contextlib.contextmanager
def _gunicorn(
    env: dict[str, str], workers: int, log: Path, access_log: Path, extra: list[str]
) -> Iterator[str]:
    port = free_port()
    gunicorn = Path(sys.executable).parent / "gunicorn"
    process = ChildProcess(
        [
            str(gunicorn),
            # The product's gunicorn configuration (deploy/ and `make run` use it too).
            "--config",
            "python:sentinel_site.gunicorn_conf",
            "sentinel_site.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--access-logfile",
            str(access_log),
            # Request path and the time the worker spent on it, in microseconds.
            "--access-logformat",
            "%(U)s?%(q)s %(s)s %(D)s",
            *extra,
        ],
        log=log,
        env=env,
        cwd=REPO_ROOT,
        name="gunicorn",
    )
    process.start()
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            if not process.running:
                raise RuntimeError(f"gunicorn exited; see {log}")
            try:
                return requests.get(f"{base}/healthz", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_until(healthy, timeout=60, what="gunicorn answers /healthz")
        yield base
    finally:
        process.stop(timeout=30)


def _cursor(position: datetime) -> str:
    """Return a DRF cursor for the page after ``position`` (CursorPagination's own encoding)."""
    query = urlencode({"p": str(position)})
    return base64.b64encode(query.encode("ascii")).decode("ascii")


def _time_page(
    session: requests.Session,
    base: str,
    access: AccessLog,
    page: tuple[str, str, bool],
    count: int,
) -> Timing:
    label, path, target = page

    def fetch() -> tuple[float, requests.Response]:
        started = time.perf_counter()
        response = session.get(base + path, timeout=30)
        return time.perf_counter() - started, response

    _, response = fetch()
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status_code} {response.text[:300]}")
    body = response.json()
    rows = len(body.get("results") or [])
    for _ in range(min(20, count)):
        fetch()
    logged = len(access.lines())
    seconds = [fetch()[0] for _ in range(count)]
    server = access.durations_since(logged)
    return Timing(
        label,
        path,
        rows,
        len(response.content),
        percentile(seconds, 0.5),
        percentile(seconds, 0.9),
        percentile(seconds, 0.99),
        max(seconds),
        percentile(server, 0.5),
        percentile(server, 0.99),
        target,
    )


def _pages(seeded: Seeded) -> list[tuple[str, str, bool]]:
    hot = f"/api/v1/analyses/{seeded.hot_namespace}/{seeded.hot_name}/evaluations/"
    cold = f"/api/v1/analyses/{seeded.cold_namespace}/{seeded.cold_name}/evaluations/"
    # Three quarters of the way into the hot analysis's history, counted from the newest.
    deep = seeded.hot_oldest + timedelta(seconds=30 * (seeded.hot_evaluations // 4))
    last_page = max(1, seeded.analyses // 50)
    window = urlencode({"since": (deep - timedelta(days=1)).isoformat(), "until": deep.isoformat()})
    return [
        ("analyses, first page", "/api/v1/analyses/", True),
        ("analyses, last page", f"/api/v1/analyses/?page={last_page}", True),
        ("analyses, ?namespace=&verdict=", "/api/v1/analyses/?namespace=ns-07&verdict=Fail", False),
        ("analyses, ?search=", "/api/v1/analyses/?search=a0421", False),
        (f"evaluations, first page ({seeded.hot_evaluations} rows)", hot, True),
        (
            f"evaluations, deep cursor (~{3 * seeded.hot_evaluations // 4} rows in)",
            f"{hot}?cursor={_cursor(deep)}",
            True,
        ),
        (f"evaluations, first page ({seeded.cold_evaluations} rows)", cold, True),
        ("evaluations, ?since=&until= window", f"{hot}?{window}", False),
    ]


def run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as exits:
        workdir = args.workdir or Path(
            exits.enter_context(tempfile.TemporaryDirectory(prefix="bench-api-"))
        )
        workdir.mkdir(parents=True, exist_ok=True)
        database = workdir / "api.sqlite3"
        for stale in workdir.glob("api.sqlite3*"):
            stale.unlink()
        env = {
            **with_defaults(os.environ),
            "DATABASE_URL": f"sqlite:///{database.resolve()}",
            "SENTINEL_ALLOWED_HOSTS": "127.0.0.1,localhost",
        }
        print("migrating", flush=True)
        migrate_database(database.resolve())
        print(f"seeding {args.analyses} analyses, {args.evaluations} evaluations", flush=True)
        seeded = seed(
            database,
            analyses=args.analyses,
            evaluations=args.evaluations,
            hot_share=args.hot_share,
            now=datetime.now(UTC),
        )
        print(
            f"seeded {seeded.analyses} analyses, {seeded.evaluations} evaluations, "
            f"{seeded.metric_results} metric results in {seeded.seconds:.1f} s "
            f"({database.stat().st_size / 1e6:.0f} MB)",
            flush=True,
        )
        manage(env, "shell", "-c", _USER_SCRIPT)
        token = manage(env, "create_api_token", "bench").strip()
        access = AccessLog(workdir / "access.log")
        base = exits.enter_context(
            _gunicorn(
                env, args.gunicorn_workers, workdir / "gunicorn.log", access.path, args.gunicorn_arg
            )
        )
        session = requests.Session()
        session.trust_env = False
        session.headers["Authorization"] = f"Token {token}"
        load = os.getloadavg()[0]
        timings = [
            _time_page(session, base, access, page, args.requests) for page in _pages(seeded)
        ]
    print(
        f"\nREST API under gunicorn ({args.gunicorn_workers} sync workers), "
        f"{args.requests} sequential requests per page, token auth, view-only user; "
        f"load average {load:.2f} (2 cores, shared):"
    )
    print(
        f"  {'page (* = target page)':52} {'rows':>4} {'KB':>4} {'p50':>7} {'p90':>7} "
        f"{'p99':>7} {'max':>7} | worker p50 / p99"
    )
    for t in timings:
        label = f"{'*' if t.target else ' '} {t.label}"
        print(
            f"  {label:52} {t.rows:4d} {t.bytes / 1024:4.0f} {t.p50 * 1000:5.1f}ms "
            f"{t.p90 * 1000:5.1f}ms {t.p99 * 1000:5.1f}ms {t.maximum * 1000:5.1f}ms | "
            f"{t.server_p50 * 1000:5.1f}ms / {t.server_p99 * 1000:5.1f}ms"
        )
    worst = max(t.p99 for t in timings if t.target)
    verdict = "met" if worst <= TARGET_P99 else "MISSED"
    print(f"target p99 <= {TARGET_P99 * 1000:.0f} ms: {verdict} (worst p99 {worst * 1000:.1f} ms)")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(_parse(argv))


if __name__ == "__main__":
    raise SystemExit(main())
