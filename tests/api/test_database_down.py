"""The REST API with PostgreSQL down: a 503 to retry and one log line, not a 500 and a traceback.

The chaos soak's database restarts (docs/reliability.md) had the web app answer its API
readers 500 with a logged traceback, as for a bug. A real Django process points at a
PostgreSQL port where nothing listens, as during a restart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from testkit.paths import REPO_ROOT
from testkit.ports import free_port
from testkit.site_env import with_defaults

_SCRIPT = """
import django
django.setup()
from django.test import Client
answer = Client(HTTP_HOST="localhost").get(
    "/api/v1/analyses/", HTTP_AUTHORIZATION="Token rs_" + "a" * 40
)
print(answer.status_code, answer.headers.get("Retry-After"), answer.content.decode())
"""


def test_an_api_request_while_the_database_is_down_is_503_without_a_traceback() -> None:
    env = with_defaults(
        {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "DJANGO_SETTINGS_MODULE": "sentinel_site.settings",
            "SENTINEL_DEBUG": "true",
            "SENTINEL_ALLOWED_HOSTS": "localhost",
            "DATABASE_URL": f"postgres://sentinel:x@127.0.0.1:{free_port()}/sentinel",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    status, retry, body = done.stdout.strip().split(" ", 2)
    assert (status, retry) == ("503", "5"), done.stdout
    assert json.loads(body)["code"] == "database_unavailable"
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "the database is unavailable (OperationalError: " in done.stderr
