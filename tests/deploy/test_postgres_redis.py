"""The ``ha`` configuration — PostgreSQL and Redis — against real servers.

A throwaway PostgreSQL (Debian's ``postgresql``: initdb + pg_ctl, password authentication) and a
throwaway ``redis-server`` are started on free ports; ``manage.py migrate`` runs against the
PostgreSQL URL and ``manage.py runoperator`` runs with ``DATABASE_URL=postgres://…`` and
``SENTINEL_BROKER_URL=redis://…`` under the ServiceAccount of deploy/'s RBAC, against devcluster
and the session's real Prometheus. The analysis it evaluates has its status written by the
operator and its history rows in PostgreSQL, with the django-q2 tasks carried by Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sentinel_cluster import kube
from testkit.clusters import kubectl_apply
from testkit.databases import PostgresServer, RedisServer
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.observe import condition
from testkit.operator import StartOperator
from testkit.paths import MANAGE, REPO_ROOT
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.deploy.kustomize import Deployed


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def _redis_calls(server: RedisServer, command: str) -> int:
    """Return how often ``command`` ran on the server (INFO commandstats)."""
    import redis

    stats: dict[str, Any] = redis.Redis.from_url(server.url).info("commandstats")
    return int((stats.get(f"cmdstat_{command}") or {}).get("calls", 0))


def test_operator_on_postgres_and_redis(
    postgres: PostgresServer,
    redis_server: RedisServer,
    # After the servers, so that the operator is stopped before they are.
    deployed: Deployed,
    start_operator: StartOperator,
    prometheus: PrometheusServer,
    metrics_app: MetricsApp,
    namespace: str,
    case: str,
) -> None:
    started = time.monotonic()
    env = {"DATABASE_URL": postgres.url, "SENTINEL_BROKER_URL": redis_server.url}
    migrate = subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "--no-input", "-v0"],
        env={**os.environ, **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    migrated = time.monotonic() - started
    tables = postgres.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'analyses_%%'",
        database=postgres.database,
    )
    assert tables[0][0] >= 3

    GaugeSetter(metrics_app, prometheus, case)(0.2)
    assert _redis_calls(redis_server, "rpush") == 0
    operator = start_operator(
        kubeconfig=deployed.kubeconfig,
        prometheus_url=prometheus.url,
        namespaces=[namespace],
        env=env,
    )
    kubectl_apply(deployed.cluster, deployment_manifest("checkout", namespace))
    kubectl_apply(
        deployed.cluster,
        analysis_manifest("checkout", namespace, metrics=[gauge_metric(case, 0.5)]),
    )
    path = kube.analysis_path(namespace, "checkout")

    def evaluated() -> dict[str, Any] | None:
        resource = deployed.admin.request("GET", path)
        return resource if condition(resource, "Ready").get("reason") == "Evaluating" else None

    resource = wait_until(evaluated, timeout=20, what=f"first status\n{operator.log}")
    assert resource["status"]["lastVerdict"] == "Pass"
    assert resource["status"]["metricResults"][0]["value"] == "0.2"

    # The history is in PostgreSQL (the operator's SQLite copy stays empty).
    rows = wait_until(
        lambda: postgres.execute(
            "SELECT e.outcome, m.value_text, m.verdict FROM analyses_evaluation e"
            " JOIN analyses_analysis a ON a.id = e.analysis_id"
            " JOIN analyses_metricresult m ON m.evaluation_id = e.id"
            " WHERE a.namespace = %s AND a.name = 'checkout' ORDER BY e.started_at",
            (namespace,),
            database=postgres.database,
        ),
        timeout=10,
        what="history rows in PostgreSQL",
    )
    assert rows[0] == ("Pass", "0.2", "Pass")
    assert operator.query("SELECT count(*) AS n FROM analyses_evaluation")[0]["n"] == 0
    mirror = postgres.execute(
        "SELECT generation, deleted_at FROM analyses_analysis WHERE namespace = %s",
        (namespace,),
        database=postgres.database,
    )
    assert mirror == [(1, None)]
    # The reconcile tasks went through Redis: django-q2's Redis broker RPUSHes each task and
    # its workers' pusher BLPOPs it; nothing waits in django-q2's ORM queue table.
    assert _redis_calls(redis_server, "rpush") >= 1
    assert _redis_calls(redis_server, "blpop") >= 1
    assert postgres.execute("SELECT count(*) FROM django_q_ormq", database=postgres.database) == [
        (0,)
    ]
    assert operator.running and "Traceback" not in operator.log
    assert operator.stop() == 0  # SIGTERM: workers and the Redis pusher stop cleanly
    print(f"migrate on PostgreSQL {migrated:.1f} s; whole test {time.monotonic() - started:.1f} s")
