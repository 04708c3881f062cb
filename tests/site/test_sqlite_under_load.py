"""SQLite + the ORM broker never say "database is locked" under load.

The promise is docs/operator.md#the-embedded-default-under-load.

Real processes with the default configuration against one SQLite file: ``migrate``, a
``qcluster`` with several workers running a few hundred tasks that each write an evaluation, a
``runserver`` answering logged-in admin users who add rows, and ORM threads mirroring status
updates (tests/analyses/loadprobe.py) — all writing at once.

Checked against sabotaged settings: Django's SQLite defaults (rollback journal, deferred
transactions, 5 s timeout), WAL with deferred transactions, and WAL + IMMEDIATE with a 50 ms
busy timeout each make it fail with "database is locked"; deferred transactions fail even with
WAL and a 30 s timeout, because a transaction that read first cannot wait for the write lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured

from sentinel_site import config
from testkit.ports import free_port
from testkit.processes import ChildProcess
from testkit.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
TASKS = 300
WORKERS = 4
WEB_CLIENTS = 6
# Each web client adds at least this many rows, and keeps going while the tasks run.
MIN_ROUNDS, MAX_ROUNDS = 10, 150
PASSWORD = "load-test-password"
LOCKED = "database is locked"
PROBE = [sys.executable, "-m", "tests.analyses.loadprobe"]
# How long the driver waits for every task to be recorded and acknowledged: a bound, not a speed
# target (on a loaded 2-core machine under the parallel suite, 60 s left 21 acks pending).
DRIVE_DEADLINE = 240


@pytest.mark.server
@pytest.mark.slow
def test_default_sqlite_configuration_never_reports_database_is_locked(tmp_path: Path) -> None:
    started = time.monotonic()
    database = tmp_path / "sentinel.sqlite3"
    env = _environment(database)
    _manage(env, "migrate", "--noinput")
    _manage(
        env, "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com"
    )
    _python(env, *PROBE[1:], "seed", "--analyses", "8")
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    with (
        _process(env, tmp_path / "qcluster.log", "manage.py", "qcluster") as qcluster_log,
        _process(
            env, tmp_path / "web.log", "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"
        ) as web_log,
    ):
        _wait_until_serving(f"{base}/healthz")
        driver = subprocess.Popen(
            [*PROBE, "drive", "--tasks", str(TASKS), "--deadline", str(DRIVE_DEADLINE)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        statuses, client_errors = _browse(base, lambda: driver.poll() is not None)
        driver_out, driver_err = driver.communicate(timeout=DRIVE_DEADLINE + 60)
    elapsed = time.monotonic() - started

    assert driver.returncode == 0, driver_err
    report = json.loads(driver_out)
    logs = {"qcluster": qcluster_log.read_text(), "web": web_log.read_text(), "driver": driver_err}
    print(
        f"\nload: {TASKS} tasks on {WORKERS} workers in {report['seconds']} s "
        f"(enqueued in {report['enqueue_seconds']} s), {len(statuses)} web requests from "
        f"{WEB_CLIENTS} clients, {report['orm_writes']} ORM thread writes; {elapsed:.1f} s in all"
    )

    assert client_errors == []
    assert report["errors"] == []
    assert report["recorded"] == TASKS and report["queued_left"] == 0
    assert report["failed_results"] == []
    assert not [result for result in report["saved_results"] if LOCKED in str(result)]
    assert statuses and all(200 <= status < 400 for status in statuses), sorted(set(statuses))
    assert report["orm_writes"] >= 4
    for name, text in logs.items():
        assert LOCKED not in text.lower(), f"{name} output:\n{text[-4000:]}"
        assert "Traceback" not in text, f"{name} output:\n{text[-4000:]}"
    # The rows the web requests wrote really are there: one group per successful add.
    with contextlib.closing(sqlite3.connect(database)) as db:
        groups = db.execute("SELECT count(*) FROM auth_group").fetchone()[0]
        admin_log = db.execute("SELECT count(*) FROM django_admin_log").fetchone()[0]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert groups == admin_log == statuses.count(302) - WEB_CLIENTS
    assert mode == "wal"


def test_worker_count_comes_from_the_environment(tmp_path: Path) -> None:
    key = {"SENTINEL_SECRET_KEY": "tests-only-" + "k" * 50}
    assert config.load(key, tmp_path).q_workers == 2
    assert config.load({**key, "SENTINEL_Q_WORKERS": "6"}, tmp_path).q_workers == 6
    for bad in ("0", "many", "-1", "65"):
        with pytest.raises(ImproperlyConfigured, match="SENTINEL_Q_WORKERS"):
            config.load({"SENTINEL_Q_WORKERS": bad}, tmp_path)


def _environment(database: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SENTINEL_", "DATABASE_URL"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="sentinel_site.settings",
        DATABASE_URL=f"sqlite:///{database}",
        SENTINEL_Q_WORKERS=str(WORKERS),
        # Production mode needs a key; the test logs in over plain HTTP (no Secure cookies).
        SENTINEL_SECRET_KEY="tests-only-" + "k" * 50,
        SENTINEL_SECURE_COOKIES="false",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        PYTHONUNBUFFERED="1",
    )
    return env


def _python(env: dict[str, str], *args: str) -> None:
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert LOCKED not in (result.stdout + result.stderr).lower()


def _manage(env: dict[str, str], *args: str) -> None:
    _python(env, "manage.py", *args)


@contextlib.contextmanager
def _process(env: dict[str, str], log: Path, *args: str) -> Iterator[Path]:
    """Run a long-lived process with its output in ``log``; stop it (and its children) after."""
    # qcluster stops its own workers on SIGTERM; the process group (its session holds only
    # them) is swept only if it does not.
    child = ChildProcess([sys.executable, *args], log=log, env=env, cwd=ROOT, new_session=True)
    child.start()
    try:
        yield log
    finally:
        child.stop(timeout=20)


def _wait_until_serving(url: str) -> None:
    def answers() -> bool:
        with contextlib.suppress(requests.ConnectionError):
            return requests.get(url, timeout=2).status_code == 200
        return False

    wait_until(answers, timeout=30, interval=0.1, what=f"{url} answers")


def _browse(base: str, finished: Callable[[], bool]) -> tuple[list[int], list[str]]:
    """Run the web clients until ``finished()``; return every status and any exception."""
    statuses: list[int] = []
    errors: list[str] = []
    clients = [
        threading.Thread(target=_client, args=(base, n, finished, statuses, errors))
        for n in range(WEB_CLIENTS)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    return statuses, errors


def _client(
    base: str, n: int, finished: Callable[[], bool], statuses: list[int], errors: list[str]
) -> None:
    """Log in to the admin, add groups (a group row and an admin log row each), log out."""
    session = requests.Session()

    def send(method: str, path: str, **data: str) -> None:
        if method == "POST":
            data["csrfmiddlewaretoken"] = session.cookies["csrftoken"]
        response = session.request(
            method, f"{base}{path}", data=data or None, allow_redirects=False, timeout=60
        )
        statuses.append(response.status_code)

    try:
        send("GET", "/admin/login/")
        send("POST", "/admin/login/", username="admin", password=PASSWORD, next="/admin/")
        rounds = 0
        while rounds < MAX_ROUNDS and (rounds < MIN_ROUNDS or not finished()):
            send("POST", "/admin/auth/group/add/", name=f"load-{n}-{rounds}", _save="Save")
            send("GET", f"/admin/auth/group/?q=load-{n}")
            rounds += 1
        send("POST", "/admin/logout/")
    except Exception as exc:  # reported; the test fails on any
        errors.append(f"client {n}: {exc!r}")
