"""A message the receiver took is recorded even if PostgreSQL restarts right after the send.

The chaos soak (docs/reliability.md) saw a ``Resumed`` message arrive twice: PostgreSQL
restarted in the second between the receiver's 200 and the task's record of the try, the task
failed, and the next task sent the message again once the claim on the row ran out.
``deliver_task`` now waits out the database, within the claim. Here a real PostgreSQL is stopped
just after a real send to the kit's webhook receiver, and started again 3 s later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from testkit.databases import PostgresServer
from testkit.webhook import WebhookReceiver

_SCRIPT = """
import sys
from datetime import UTC, datetime
import django
django.setup()
from django.core.management import call_command
from analyses.models import Analysis
from notifications import tasks
from notifications.models import Delivery, DeliveryAttempt

call_command("migrate", verbosity=0)
now = datetime.now(UTC)
analysis = Analysis.objects.create(
    namespace="shop", name="checkout", uid="u-1", spec={}, created_at=now
)
delivery = Delivery.objects.create(
    key="u-1/Resumed/hook", analysis=analysis, namespace="shop", name="checkout",
    channel="hook", event="Resumed", message="resumed by a person", transition_at=now,
    created_at=now, next_attempt_at=now,
)
send = tasks.channels.send

def send_then_wait(*args, **kwargs):
    # The real send; then the test stops PostgreSQL before this task records the try.
    result = send(*args, **kwargs)
    print("sent", flush=True)
    sys.stdin.readline()
    return result

tasks.channels.send = send_then_wait
try:
    state = tasks.deliver_task(delivery.pk)
except Exception as exc:
    print("failed", type(exc).__name__, flush=True)
else:
    tries = DeliveryAttempt.objects.filter(delivery=delivery).count()
    print("done", state, Delivery.objects.get(pk=delivery.pk).state, tries, flush=True)
"""


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def _down(postgres: PostgresServer) -> bool:
    try:
        postgres.execute("SELECT 1", database=postgres.database)
    except psycopg.OperationalError:
        return True
    return False


@pytest.mark.server
def test_a_sent_message_is_recorded_across_a_database_restart_and_not_sent_again(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    receiver = WebhookReceiver().start()
    config = tmp_path / "notify.yaml"
    config.write_text(f"channels:\n  - name: hook\n    url: {receiver.apprise_url}\n")
    process = postgres.django_script(
        _SCRIPT, SENTINEL_NOTIFY_CONFIG=str(config), SENTINEL_NOTIFY_TIMEOUT="5s"
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline().strip() == "sent", process.stderr.read()[-3000:]
        restart = threading.Thread(target=postgres.restart, kwargs={"down_seconds": 3.0})
        restart.start()
        deadline = time.monotonic() + 30
        while not _down(postgres):
            assert time.monotonic() < deadline, "PostgreSQL did not stop"
            time.sleep(0.1)
        process.stdin.write("\n")
        process.stdin.flush()
        restart.join(timeout=90)
        line = process.stdout.readline().split()
        assert line == ["done", "sent", "sent", "1"], (line, process.stderr.read()[-3000:])
        assert len(receiver.messages) == 1
    finally:
        process.kill()
        process.wait(timeout=30)
        receiver.stop()
