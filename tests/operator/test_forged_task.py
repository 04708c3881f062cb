"""The web app cannot make the operator run code of its choosing (docs/security.md).

django-q2 queues a task as a signed pickle; its workers load and run it. The web Pod holds
``SENTINEL_SECRET_KEY`` and the database (with the ORM broker, the queue itself), so were tasks
signed with that key, code in the web Pod could queue any function with any arguments — or a
pickle that runs code as it is loaded — for the operator, whose account reads every workload.
The operator signs and checks with ``SENTINEL_TASK_KEY``, which only its Pod holds.

Here a ``runoperator`` against the real control plane takes tasks from the real broker (the
ORM broker on its SQLite file, and Redis); a ``manage.py shell`` with the web app's settings
(the same secret key and broker, no task key) queues ``pathlib.Path.write_text`` through
django-q2's own ``async_task``. The
operator refuses it (a bad signature, logged) and writes nothing; the same call with the
operator's key, queued after it, runs — so the operator was taking tasks all along. A django-q2
``Schedule`` row the web app writes (``builtins.exec`` of its own code) is never run either:
django-q2's scheduler is off and the leader queues its two periodic jobs itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.databases import RedisServer
from testkit.operator import StartOperator
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults
from testkit.waiting import wait_until

pytestmark = pytest.mark.clusters("real")

SCHEDULE = """
from django.utils import timezone
from django_q.models import Schedule
Schedule.objects.create(
    name="forged", func="builtins.exec", args=repr({code!r}), schedule_type=Schedule.ONCE,
    next_run=timezone.now(),
)
"""
QUEUE = """
from pathlib import Path
from django_q.tasks import async_task
async_task("pathlib.Path.write_text", Path({path!r}), "ran", save=False)
"""


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def _web_app(operator_env: dict[str, str], database: Path) -> dict[str, str]:
    """The web Pod's settings: the shared Secret (secret key, database) and the broker, and no
    task key, which only the operator's Secret holds (deploy/base/operator.yaml)."""
    web = {k: v for k, v in with_defaults(os.environ).items() if k != "SENTINEL_TASK_KEY"}
    return web | {"DATABASE_URL": f"sqlite:///{database}", **operator_env}


def _shell(env: dict[str, str], script: str) -> None:
    result = subprocess.run(
        [sys.executable, str(MANAGE), "shell", "-c", script],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def _queue(env: dict[str, str], marker: Path) -> None:
    """Queue a task writing ``marker`` from a Django process with ``env``'s settings."""
    _shell(env, QUEUE.format(path=str(marker)))


@pytest.mark.parametrize("broker", ["orm", "redis"])
def test_a_task_forged_with_the_web_apps_secrets_is_refused(
    broker: str, start_operator: StartOperator, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {}
    if broker == "redis":
        env["SENTINEL_BROKER_URL"] = request.getfixturevalue("redis_server").url
    operator = start_operator(
        prometheus_url="http://127.0.0.1:9", namespaces=["forged-none"], env=env
    )
    web = _web_app(env, operator.database)
    forged, genuine = tmp_path / "forged", tmp_path / "genuine"
    _queue(web, forged)
    _queue({**web, "SENTINEL_TASK_KEY": operator.env.get("SENTINEL_TASK_KEY", "")}, genuine)

    wait_until(genuine.exists, timeout=60, what=f"the genuine task to run\n{operator.log}")
    assert not forged.exists(), "the operator ran a task signed with the web app's key"
    assert "BadSignature" in operator.log, operator.log
    assert operator.running


def test_a_schedule_the_web_app_writes_is_never_run(
    start_operator: StartOperator, tmp_path: Path
) -> None:
    marker = tmp_path / "scheduled"
    code = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')"
    operator = start_operator(prometheus_url="http://127.0.0.1:9", namespaces=["forged-none"])
    started = time.monotonic()
    _shell(_web_app({}, operator.database), SCHEDULE.format(code=code))
    # The leader's own periodic jobs run: the workers take tasks.
    wait_until(
        lambda: "Processed 'sentinel_operator.tasks.resync_task'" in operator.log,
        timeout=60,
        what=f"the leader's resync to run\n{operator.log}",
    )
    # django-q2's scheduler would have looked at its rows after 30 s.
    time.sleep(max(0.0, 40 - (time.monotonic() - started)))
    assert not marker.exists(), "the operator ran a schedule the web app wrote"
    assert operator.running
