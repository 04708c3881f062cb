"""A backtest job run by a real ``runoperator``: the leader's pump, a signed django-q2 task, a
worker with the operator's own client and providers (docs/backtest.md).

The job row is written straight into the operator's database, as the web app's REST API would
write it (the web app never queues the task itself); the operator claims it, runs it and
stores the result: the rollback-marked regression would have been paused.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.operator import StartOperator
from testkit.waiting import wait_until
from tests.backtest.history import make_history

pytestmark = [pytest.mark.server, pytest.mark.clusters("real")]


def test_the_operator_runs_a_stored_job(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    cluster_kind: str,
    tmp_path: Path,
) -> None:
    history = make_history(kube_cluster, kube_client, namespace, tmp_path / "prometheus")
    with history.prometheus as prometheus:
        operator = start_operator(prometheus_url=prometheus.url, namespaces=[namespace])
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        connection = sqlite3.connect(operator.database, timeout=10)
        with connection:
            connection.execute(
                "INSERT INTO analyses_backtestjob (namespace, name, requested_by, rollouts,"
                " max_duration_seconds, state, done, total, error, cancel_requested,"
                " created_at, next_attempt_at) VALUES (?, 'web-guard', 'ci', 10, 3600.0,"
                " 'queued', 0, 0, '', 0, ?, ?)",
                (namespace, now, now),
            )
        connection.close()

        def finished() -> dict[str, object] | None:
            (row,) = operator.query("SELECT * FROM analyses_backtestjob")
            return row if row["state"] not in ("queued", "running") else None

        job = wait_until(finished, timeout=60, what=lambda: operator.log)
    assert job["state"] == "succeeded", job["error"]
    result = json.loads(str(job["result"]))
    assert [r["rolledBack"] for r in result["rollouts"]] == [False, True, False]
    assert [r["wouldPauseAt"] is not None for r in result["rollouts"]] == [False, True, False]
    assert result["summary"]["caught"][0]["revision"] == 2
    assert job["done"] == job["total"] > 0
