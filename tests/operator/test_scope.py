"""Sabotage item 19, operator side: an analysis outside SENTINEL_NAMESPACES is never
evaluated, mirrored or paused for.

The watch is per namespace already; these tests hold the other doors shut. End to end, a real
``runoperator`` scoped to one namespace of the cluster (both kinds) meets an analysis created
with kubectl in another namespace, and a row written straight into its database for that other
namespace: neither is mirrored from the cluster, dispatched, measured, given a status or allowed
to pause its Deployment, while the in-scope twin is evaluated and pauses. Then the pieces one by
one: the dispatcher's query, and the reconcile task refusing a namespace outside its scope.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import LazySettings

from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_operator import tasks
from sentinel_operator.dispatcher import Dispatcher, Member
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.namespaces import fresh_namespace
from testkit.observe import deployment_paused, get_analysis, queries_for, wait_condition
from testkit.operator import StartOperator

NAME = "checkout"
INJECTED = "injected"
# Far in the past: a dispatcher that looked at this row would claim it at once.
LONG_AGO = "2000-01-01 00:00:00"


@pytest.fixture
def other_namespace(kube_client: kube.KubeClient) -> Iterator[str]:
    """A namespace the operator under test does not watch."""
    with fresh_namespace(kube_client, "outside") as name:
        yield name


def _apply_failing(kube_cluster: Cluster, namespace: str, case: str) -> None:
    kubectl_apply(
        kube_cluster,
        deployment_manifest(NAME, namespace),
        analysis_manifest(
            NAME, namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=1, interval="5s"
        ),
    )


def _inject_row(database_rows: list[dict[str, Any]], namespace: str) -> dict[str, Any]:
    """Return a copy of a mirror row, moved to ``namespace``, due long ago."""
    row = dict(database_rows[0])
    row.pop("id")
    row.update(namespace=namespace, name=INJECTED, uid=f"uid-{namespace}", next_due_at=LONG_AGO)
    return row


def test_operator_leaves_other_namespaces_alone(
    start_operator: StartOperator,
    fault_proxy: FaultProxy,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    other_namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    outside_case = f"out-{case}"
    # Created before the operator starts, so its first list sees both namespaces' worth.
    _apply_failing(kube_cluster, other_namespace, outside_case)
    operator = start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace])
    _apply_failing(kube_cluster, namespace, case)

    # The in-scope twin works: evaluated, failed once, paused (failureLimit 1).
    inside = wait_condition(kube_client, namespace, NAME, "RolloutPaused", "FailureLimitReached")
    assert inside["status"]["failures"] == 1
    assert deployment_paused(kube_client, namespace)

    # A row that got into the database somehow (a bug, a restore, a hand edit), due long ago.
    mirrored = operator.query(
        "SELECT * FROM analyses_analysis WHERE namespace = ? AND name = ?", (namespace, NAME)
    )
    injected = _inject_row(mirrored, other_namespace)
    columns, marks = ", ".join(injected), ", ".join("?" for _ in injected)
    with contextlib.closing(sqlite3.connect(operator.database, timeout=10)) as connection:
        connection.execute(
            f"INSERT INTO analyses_analysis ({columns}) VALUES ({marks})", list(injected.values())
        )
        connection.commit()
    injected_id = operator.query("SELECT id FROM analyses_analysis WHERE name = ?", (INJECTED,))[0][
        "id"
    ]

    # Several dispatcher passes (every 0.1 s) and intervals (5 s) go by.
    time.sleep(7)

    outside = get_analysis(kube_client, other_namespace, NAME)
    assert "status" not in outside or not outside["status"], outside.get("status")
    assert not deployment_paused(kube_client, other_namespace)
    assert queries_for(fault_proxy, outside_case) == 0
    # Not mirrored from the cluster (the watch and its relist are per namespace) ...
    assert operator.mirror_row(other_namespace, NAME) is None
    # ... and the injected row was never claimed (a claim moves next_due_at) nor evaluated.
    row = operator.query("SELECT * FROM analyses_analysis WHERE id = ?", (injected_id,))[0]
    assert str(row["next_due_at"]).startswith("2000-01-01"), row["next_due_at"]
    assert operator.evaluations(other_namespace, INJECTED) == []
    # The in-scope analysis was evaluated all along.
    assert len(operator.evaluations(namespace, NAME)) >= 2


@pytest.mark.django_db
def test_dispatcher_never_queues_rows_outside_its_namespaces() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    due = now - timedelta(seconds=1)
    for namespace in ("inside", "outside"):
        Analysis.objects.create(
            namespace=namespace, name=NAME, uid=f"uid-{namespace}", next_due_at=due, created_at=now
        )
    queued: list[tuple[str, str]] = []

    def enqueue(members: Sequence[Member], claimed_until: datetime) -> None:
        queued.extend((namespace, name) for namespace, name, _, _ in members)

    scoped = Dispatcher(
        now=lambda: now, is_leader=lambda: True, enqueue=enqueue, namespaces=["inside"]
    )
    assert scoped.dispatch_due() == 1
    assert queued == [("inside", NAME)]
    assert Analysis.objects.get(namespace="outside").next_due_at == due

    # Without a scope (every namespace), the same row is queued: the filter is what held it.
    unscoped = Dispatcher(now=lambda: now, is_leader=lambda: True, enqueue=enqueue)
    assert unscoped.dispatch_due() == 1
    assert queued[-1] == ("outside", NAME)


@pytest.mark.django_db(transaction=True)
def test_reconcile_task_refuses_a_namespace_outside_its_scope(
    settings: LazySettings,
    monkeypatch: pytest.MonkeyPatch,
    fault_proxy: FaultProxy,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    other_namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    _apply_failing(kube_cluster, other_namespace, case)
    # The task builds its clients from settings and KUBECONFIG, as in a django-q2 worker.
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch.setattr(tasks, "_reconciler", None)
    settings.SENTINEL = dataclasses.replace(
        settings.SENTINEL, prometheus_url=fault_proxy.url, namespaces=(namespace,)
    )

    assert tasks.reconcile_one(other_namespace, NAME) == tasks.OUT_OF_SCOPE

    assert queries_for(fault_proxy, case) == 0
    assert not get_analysis(kube_client, other_namespace, NAME).get("status")
    assert not deployment_paused(kube_client, other_namespace)

    # With that namespace in scope the same call does evaluate: the scope is what refused.
    settings.SENTINEL = dataclasses.replace(settings.SENTINEL, namespaces=(other_namespace,))
    assert tasks.reconcile_one(other_namespace, NAME) != tasks.OUT_OF_SCOPE
    assert queries_for(fault_proxy, case) >= 1
