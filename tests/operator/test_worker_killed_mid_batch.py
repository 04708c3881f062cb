"""A django-q2 worker SIGKILLed while it holds a batch: its members come back when claims run out.

docs/operator.md#claims. A real ``runoperator`` (one worker, ``SENTINEL_CLAIM_TIMEOUT`` short)
evaluates three analyses every 5 s. The fault proxy answers one Prometheus query of a batch and
holds the next, so the worker is killed with the first member finished, the second mid-query
and the third not started. Nothing but the claim brings the last two back: they are evaluated
again once it runs out, and not before. The ORM broker (the shipped default) delivers the
killed task again when its claim has run out too, and that delivery must start none of its
members: each member has exactly one attempt per due time, never two at once. The operator
stays up, django-q2's sentinel replaces the worker, and the log has no traceback.

The process killed is the one holding the held query's connection (the proxy's client port,
found in ``/proc`` among ``runoperator``'s descendants), and django-q2's "processing" line
confirms it started the batch of three: the worker running the batch, not merely a worker.

This is about the operator's own processes, claims and queue, not the API server: devcluster
is enough, and the real control plane would add ~30 s to its tier and nothing the test checks.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
from datetime import UTC, datetime, timedelta

import pytest

from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import analysed_deployments, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import distinct_due_times, due_lags, wait_rows
from testkit.operator import OperatorProcess, ProxiedStart
from testkit.processes import descendants, holding_sockets
from testkit.waiting import wait_until

pytestmark = pytest.mark.clusters("dev")

# The shortest claim the default SENTINEL_PROMETHEUS_TIMEOUT (5 s) allows: a task may run for
# 10 s, the held query is killed long before its own 5 s timeout.
CLAIM = 20
INTERVAL = 5.0
NAMES = ("first", "second", "third")


def _time(raw: str) -> datetime:
    return datetime.fromisoformat(raw).replace(tzinfo=UTC)


def _log(operator: OperatorProcess) -> str:
    # The whole file: OperatorProcess.log is only its tail.
    return operator.log_path.read_text(errors="replace")


def _batches(operator: OperatorProcess, namespace: str) -> list[tuple[str, str, int]]:
    """Return (django-q2 process name, first member, members) of each batch task started."""
    pattern = rf"(\S+) processing reconcile {re.escape(namespace)}/(\S+) and (\d+) more"
    found = re.findall(pattern, _log(operator))
    return [(process, first, int(more) + 1) for process, first, more in found]


def _worker_pids(operator: OperatorProcess) -> dict[int, str]:
    """Return the django-q2 process name of each worker pid, from its "ready for work" line."""
    found = re.findall(r"(\S+) ready for work at (\d+)", _log(operator))
    return {int(pid): process for process, pid in found}


def test_a_worker_killed_mid_batch_leaves_its_members_to_their_claims(
    start_proxied: ProxiedStart, kube_cluster: Cluster, gauge: GaugeSetter, case: str
) -> None:
    namespace, fault_proxy = start_proxied.namespace, start_proxied.fault_proxy
    operator = start_proxied(
        SENTINEL_CLAIM_TIMEOUT=str(CLAIM),
        # One worker: a pass's claims are one task, and killing it is killing the batch.
        SENTINEL_Q_WORKERS="1",
        # The three first evaluations may be a second or so apart, and one that started late
        # goes onto its analysis's phase within the interval: claimed together after.
        SENTINEL_DISPATCH_AHEAD=f"{INTERVAL:g}",
    )
    gauge(0.1)
    metrics = [gauge_metric(case, 0.5)]
    manifests = analysed_deployments(NAMES, namespace, metrics=metrics, interval=f"{INTERVAL:g}s")
    kubectl_apply(kube_cluster, *manifests)
    for name in NAMES:
        wait_rows(operator, namespace, name, lambda rows: len(rows) >= 1, timeout=30)
    # The next batch (all three, due together) gets one answer; its second query is held.
    seen = fault_proxy.query_count
    fault_proxy.hold(after=1)
    assert [len(operator.evaluations(namespace, name)) for name in NAMES] == [1, 1, 1]

    def worker_mid_query() -> int | None:
        if fault_proxy.query_count < seen + 2:
            return None  # the answered one may still be on its way: not that one
        holders = holding_sockets(descendants(operator.pid), fault_proxy.in_flight)
        return holders[0] if len(holders) == 1 else None

    victim = wait_until(
        worker_mid_query, timeout=INTERVAL + 15, interval=0.02, what="a worker mid-query"
    )
    os.kill(victim, signal.SIGKILL)
    fault_proxy.let_go()

    # The worker killed is the one that started the batch of all three.
    worker = _worker_pids(operator)[victim]
    *_, (_, first, members) = [b for b in _batches(operator, namespace) if b[0] == worker]
    assert members == len(NAMES), operator.log
    rows = {name: operator.evaluations(namespace, name) for name in NAMES}
    finished = [name for name in NAMES if len(rows[name]) == 2]
    assert finished == [first], f"one member answered before the kill: {rows}"
    left = [name for name in NAMES if name != first]
    # Their claim is their next due time: nothing else makes them due again.
    claims = {_time(str(operator.mirror_row(namespace, name)["next_due_at"])) for name in left}
    (claimed_until,) = claims

    # Evaluated again once the claim runs out, not before.
    for name in left:
        again = wait_rows(
            operator, namespace, name, lambda rows: len(rows) >= 2, timeout=CLAIM + 15
        )[1]
        started = _time(again["started_at"])
        assert claimed_until <= started < claimed_until + timedelta(seconds=5), (name, again)
    # The ORM broker delivers the killed task again once its claim has run out (django-q2's
    # retry is the claim): it starts none of its members. No other task ever waits that long.
    wait_until(
        lambda: "with claims running out within its time limit" in _log(operator),
        timeout=15,
        what=lambda: f"the killed task, delivered again, gives its members back\n{operator.log}",
    )
    assert f"within its time limit ({CLAIM // 2} s): {len(NAMES)} analyses not started" in (
        _log(operator)
    )

    # One attempt at a time per member: each starts after the last one finished, at its due
    # time on the analysis's phase or later (a claim's end is later still), never beside it.
    for name in NAMES:
        history = operator.evaluations(namespace, name)
        assert all(row["outcome"] == "Pass" for row in history), history
        for before, after in itertools.pairwise(history):
            assert _time(after["started_at"]) > _time(before["finished_at"]), (name, history)
        # Each at or after the due time it was attempted for, and no due time twice.
        lags = due_lags(history)
        assert all(lag >= 0 for lag in lags), (name, lags, history)
        assert distinct_due_times(history), (name, history)

    assert operator.running
    assert operator.metric("sentinel_leader") == 1.0
    log = _log(operator)
    assert "reincarnated worker" in log
    assert "Traceback" not in log, log
