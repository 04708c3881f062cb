"""A SIGKILLed operator takes its django-q2 processes with it, and its restart gets its port.

docs/architecture.md#processes-and-threads. Outside a container nothing kills the orphans of a
killed process: the chaos soak found a SIGKILLed operator's workers running reconciles for 10 s
and more, holding the ``/metrics`` port they had inherited, so that its replacement exited with
"Address already in use". Here a real ``runoperator`` (not in a container) evaluates six
analyses; every Prometheus query is held, so both workers are mid-evaluation and the next
batches wait in the queue, when the operator is SIGKILLed. Then:

- its port can be bound at once, while a worker of the killed operator is still waiting for
  its answer (no child inherited the listener);
- the evaluations that were running finish, none starts: no query reaches Prometheus after
  the kill and no history row starts after it;
- a notification the pump had queued behind them is not sent by the killed operator's
  workers (before, they ran the tasks left in their queue while the sentinel stopped): the
  restarted operator sends it, once, when the claim on it runs out;
- within a few seconds no process of the killed operator is left;
- the same command restarted on the same port serves ``/metrics`` and evaluates again.

And django-q2's sentinel SIGKILLed on its own takes its workers, pusher and monitor with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysed_deployments, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import wait_rows
from testkit.operator import OperatorProcess, ProxiedStart, StartOperator
from testkit.processes import alive, descendants, holding_sockets
from testkit.waiting import wait_until
from testkit.webhook import WebhookReceiver

INTERVAL = 5.0
# Two groups applied two seconds apart: while the first group's batches hold both workers, the
# second group's are queued behind them.
FIRST = ("a1", "a2", "a3")
SECOND = ("b1", "b2", "b3")
# How long the killed operator's processes may take to go: the running evaluations finish (their
# answers are let go at once) and django-q2's pusher stops (it polls the broker every 0.2 s).
GONE_WITHIN = 5.0


def _can_listen(port: int) -> bool:
    """Return whether a server could listen on 127.0.0.1:``port`` now, as runoperator does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As http.server does: the killed server's closed connections may linger in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
    return True


def _taken_tasks(operator: OperatorProcess) -> int:
    """Return how many django-q2 tasks the pusher took from the broker and are not done yet.

    The ORM broker locks a task it hands out for its ``retry`` (the claim, 120 s), and deletes
    it once the result is in: a lock well in the future is a task running or waiting in the
    sentinel's own queue for a worker.
    """
    soon = datetime.now(UTC) + timedelta(seconds=30)
    rows = operator.query("SELECT lock FROM django_q_ormq WHERE lock IS NOT NULL")
    return sum(1 for row in rows if datetime.fromisoformat(row["lock"]).replace(tzinfo=UTC) > soon)


def _started(row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(row["started_at"]).replace(tzinfo=UTC)


def _started_after(operator: OperatorProcess, namespace: str, moment: datetime) -> list[str]:
    """Return the evaluations of the test's analyses that started after ``moment``."""
    return [
        f"{name} at {row['started_at']}"
        for name in FIRST + SECOND
        for row in operator.evaluations(namespace, name)
        if _started(row) > moment
    ]


def _queue_delivery(operator: OperatorProcess, namespace: str) -> int:
    """Store a due delivery of analysis a1 to channel "hook", as an evaluation would; its pk."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    with contextlib.closing(sqlite3.connect(operator.database, timeout=10)) as connection:
        (analysis,) = connection.execute(
            "SELECT id FROM analyses_analysis WHERE namespace = ? AND name = 'a1'", (namespace,)
        ).fetchall()
        cursor = connection.execute(
            "INSERT INTO notifications_delivery (key, analysis_id, namespace, name, channel, "
            "event, message, transition_at, created_at, state, attempts, next_attempt_at, "
            "last_error) VALUES (?, ?, ?, 'a1', 'hook', 'Paused', 'queued before the kill', "
            "?, ?, 'pending', 0, ?, '')",
            (f"{namespace}/a1/Paused/hook", analysis[0], namespace, now, now, now),
        )
        connection.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid


def test_a_sigkilled_operator_leaves_no_process_and_its_restart_serves_the_port(
    start_proxied: ProxiedStart,
    kube_cluster: Cluster,
    gauge: GaugeSetter,
    case: str,
    webhook: WebhookReceiver,
    tmp_path: Path,
) -> None:
    namespace, fault_proxy = start_proxied.namespace, start_proxied.fault_proxy
    config = tmp_path / "notify.yaml"
    config.write_text(json.dumps({"channels": [{"name": "hook", "url": webhook.apprise_url}]}))
    operator = start_proxied(
        SENTINEL_Q_WORKERS="2",
        # A held query stays held until the test lets it go, never timed out meanwhile.
        SENTINEL_PROMETHEUS_TIMEOUT="30",
        SENTINEL_NOTIFY_CONFIG=str(config),
        SENTINEL_PUBLIC_URL="https://sentinel.example.test",
    )
    gauge(0.1)
    metrics = [gauge_metric(case, 0.5)]
    interval = f"{INTERVAL:g}s"
    kubectl_apply(
        kube_cluster, *analysed_deployments(FIRST, namespace, metrics=metrics, interval=interval)
    )
    time.sleep(2.0)
    kubectl_apply(
        kube_cluster, *analysed_deployments(SECOND, namespace, metrics=metrics, interval=interval)
    )
    # The workers run: every analysis evaluated once.
    for name in FIRST + SECOND:
        wait_rows(operator, namespace, name, lambda rows: len(rows) >= 1, timeout=30)

    fault_proxy.hold()

    def busy() -> list[int] | None:
        # Both workers mid-query, and at least one more task waiting for them in the sentinel.
        holders = holding_sockets(descendants(operator.pid), fault_proxy.in_flight)
        return holders if len(holders) == 2 and _taken_tasks(operator) >= 3 else None

    workers = wait_until(busy, timeout=3 * INTERVAL + 15, interval=0.05, what="two held workers")
    # A notification queued behind the held evaluations: the pump claims it and the sentinel's
    # pusher takes its task (a lock on one more broker row).
    taken = _taken_tasks(operator)
    delivery = _queue_delivery(operator, namespace)
    wait_until(
        lambda: _taken_tasks(operator) > taken,
        timeout=10,
        interval=0.05,
        what="the delivery's task taken by the sentinel",
    )
    family = descendants(operator.pid)
    with _reaped(family):
        _kill_and_restart(operator, fault_proxy, namespace, workers, family, webhook)
    # Sent by the restarted operator only, once the killed one's claim ran out.
    (sent,) = wait_until(
        lambda: webhook.messages, timeout=30, what="the delivery sent after the restart"
    )
    assert "queued before the kill" in sent.message

    def recorded() -> tuple[str, int] | None:
        (row,) = operator.query(
            "SELECT state, attempts FROM notifications_delivery WHERE id = ?", (delivery,)
        )
        return (row["state"], row["attempts"]) if row["state"] != "pending" else None

    # The try is recorded after the send: one try, sent.
    assert wait_until(recorded, timeout=10, what="the try recorded") == ("sent", 1)
    assert len(webhook.messages) == 1


def _kill_and_restart(
    operator: OperatorProcess,
    fault_proxy: FaultProxy,
    namespace: str,
    workers: list[int],
    family: set[int],
    webhook: WebhookReceiver,
) -> None:
    queries = fault_proxy.query_count
    killed_at = datetime.now(UTC)
    operator.kill()

    # Nothing of the killed operator listens on its port, though its workers still wait.
    assert all(alive(pid) for pid in workers)
    assert _can_listen(operator.metrics_port), "a child of the killed operator holds its port"

    fault_proxy.let_go()
    killed = time.monotonic()
    left = set(family)
    while left and time.monotonic() - killed < GONE_WITHIN:
        left = {pid for pid in left if alive(pid)}
        time.sleep(0.05)
    gone = time.monotonic() - killed
    assert not left, f"processes of the killed operator left after {GONE_WITHIN:g} s: {left}"
    print(f"{len(family)} processes of the killed operator gone {gone:.2f} s after the kill")
    # The two held evaluations finished; nothing started after the kill.
    assert fault_proxy.query_count == queries
    assert _started_after(operator, namespace, killed_at) == []
    # Nor did a worker send the notification queued behind them.
    assert webhook.messages == []

    started = time.monotonic()
    operator.start(timeout=60)
    serving = time.monotonic() - started
    print(f"restarted on port {operator.metrics_port}: serving {serving:.1f} s later")
    assert operator.metric("sentinel_leader") in (0.0, 1.0)
    # It evaluates again: the members the killed workers never started are not lost.
    for name in FIRST + SECOND:
        wait_rows(
            operator,
            namespace,
            name,
            lambda rows: any(_started(row) > killed_at for row in rows),
            timeout=3 * INTERVAL + 20,
            what=f"{name} evaluated after the restart",
        )


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


# About the operator's own processes only: devcluster is enough.
@pytest.mark.clusters("dev")
def test_the_sentinels_processes_die_with_it(
    start_operator: StartOperator, fault_proxy: FaultProxy, namespace: str
) -> None:
    # The kernel kills them (PR_SET_PDEATHSIG, set in each right after the fork): a sentinel that
    # crashed or was killed leaves no pusher taking tasks off the broker for nobody.
    operator = start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace])
    (sentinel,) = _children(operator.pid)
    forked = descendants(sentinel)
    assert len(forked) >= 3  # the workers, the pusher, the monitor
    with _reaped(forked):
        os.kill(sentinel, signal.SIGKILL)
        wait_until(
            lambda: not any(alive(pid) for pid in forked),
            timeout=2,
            what=lambda: f"the sentinel's processes gone: {[p for p in forked if alive(p)]} left",
        )
    # The operator does not run on without workers: it exits, to be restarted.
    wait_until(lambda: operator.exited, timeout=15, what="the operator exits")
    assert "the django-q2 cluster died; stopping" in operator.log


@contextlib.contextmanager
def _reaped(pids: set[int]) -> Iterator[None]:
    """SIGKILL those of ``pids`` still running ``runoperator`` at the end (a failed test)."""
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                if b"runoperator" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
