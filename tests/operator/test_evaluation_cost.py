"""Regression guard for the CPU budget: what ONE evaluation costs, counted, not timed.

The budget and its history are in docs/performance.md.

The operator's CPU per evaluation follows from its database write transactions, SQL statements
and HTTP requests (docs/performance.md, "Where the time goes"). These tests run one real
steady-state evaluation (devcluster over HTTPS, the real Prometheus behind the fault proxy, the
real ``Reconciler.reconcile`` handed what the operator's real caches hold, as the dispatcher
hands it) and count them: SQL through an ``execute_wrapper`` on Django's
connection, Kubernetes requests and connections in the urllib3 pool of the official client,
Prometheus queries at the proxy. A change that adds a write transaction or a request per
evaluation fails here; lower the numbers when an improvement lowers them.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django_q.models import OrmQ

from analyses.models import Analysis, Evaluation
from sentinel_cluster import kube
from sentinel_cluster.informer import Informer, Snapshot, strip_template
from sentinel_core.pause_record import Annotation
from sentinel_operator.caches import Caches
from sentinel_operator.dispatcher import Dispatcher
from sentinel_operator.outcome import Result
from sentinel_operator.outcome import result as result_of
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from sentinel_operator.reconcile import Reconciler
from sentinel_operator.watch import AnalysisWatch
from testkit.clusters import Cluster
from testkit.fault_proxy import FaultProxy
from testkit.manifests import (
    analysis_manifest,
    gauge_metric,
    rollout_analysis,
    workload_manifest,
)
from testkit.metrics_app import GaugeSetter

# Real transactions (no test-wide atomic block), so every BEGIN the code issues is seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.clusters("dev")]

# The budget of one steady-state evaluation of a two-metric analysis (docs/performance.md).
# Mirror, history row, metric rows and next due time, together: SQLite's one write lock, once.
WRITE_TRANSACTIONS = 1
# PUT /status: the analysis, the target and its ControllerRevisions come from the caches (was 3:
# GET the analysis, GET its Deployment, PUT /status; and a list for a DaemonSet's revisions).
KUBE_REQUESTS = 1
# While the status claims a pause: the target's GET too, since a copy from the caches may not
# have seen a person's resume yet, or this analysis's own pause (docs/architecture.md).
PAUSED_KUBE_REQUESTS = 2
# All of them on the connection kept from the previous evaluation (keep-alive).
KUBE_NEW_CONNECTIONS = 0
# One query per metric.
PROMETHEUS_QUERIES = 2
# Every SQL statement, reads included: BEGIN, the mirror row's UPDATE (status, next due time and
# backoff count together), the evaluation INSERT, one INSERT of both metric results. Nothing
# before ``decide``, no read: the UPDATE's guard does what the mirror's read did (was 8).
STATEMENTS = 4
# Plain SQL from tuples on the hot path: no model instance built, read or saved (was 4: the
# mirror row, the evaluation, two metric results).
MODEL_INSTANCES = 0
# django-q2 broker tasks per dispatch pass: one per worker, however many analyses are due (was
# one per analysis). Each costs three broker operations (enqueue, dequeue, acknowledge), so at
# a pass of eight due analyses and two workers 0.75 per evaluation instead of 3.
BROKER_TASKS_PER_PASS = 2
# Every SQL statement of that pass: the due rows' SELECT, the claim of all of them in one
# UPDATE … RETURNING, BEGIN IMMEDIATE and one INSERT per broker task. Was 13: BEGIN and one
# UPDATE per analysis for the claim (docs/performance.md, "Cuts 7 and 8").
DISPATCH_PASS_STATEMENTS = 5

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
PAUSED_BY = Annotation.PAUSED_BY.value
_TEMPLATES = f"/apis/{kube.GROUP}/{kube.VERSION}"


@dataclass
class _Sql:
    """SQL statements seen on the default connection, and whether each ran in a transaction."""

    statements: list[tuple[str, bool]] = field(default_factory=list)

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        self.statements.append((sql.lstrip().upper(), connection.in_atomic_block))
        return execute(sql, params, many, context)

    @property
    def write_transactions(self) -> int:
        """BEGINs (IMMEDIATE: each takes the write lock) plus writes outside any transaction."""
        begins = sum(1 for sql, _ in self.statements if sql.startswith("BEGIN"))
        lone = sum(1 for sql, atomic in self.statements if sql.startswith(_WRITES) and not atomic)
        return begins + lone

    def summary(self) -> list[str]:
        """One short line per statement, for a failure message."""
        return [
            sql[:90] + (" (in a transaction)" if atomic else "") for sql, atomic in self.statements
        ]

    @property
    def writes(self) -> int:
        return sum(1 for sql, _ in self.statements if sql.startswith(_WRITES))


@contextmanager
def _counting_instances() -> Iterator[list[type]]:
    """Count the model instances built (``post_init`` fires for every one, read or new)."""
    built: list[type] = []

    def count(sender: type, **_: Any) -> None:
        built.append(sender)

    post_init.connect(count, weak=False)
    try:
        yield built
    finally:
        post_init.disconnect(count)


@contextmanager
def _counting_sql() -> Iterator[_Sql]:
    sql = _Sql()
    with connection.execute_wrapper(sql):
        yield sql


def _pool_counts(client: kube.KubeClient) -> tuple[int, int]:
    """Return (requests, connections) the official client's urllib3 pools have made so far."""
    pools = client.api_client.rest_client.pool_manager.pools
    # urllib3's RecentlyUsedContainer cannot be iterated, only asked for its keys.
    found = [pools[key] for key in pools.keys()]  # noqa: SIM118
    return sum(p.num_requests for p in found), sum(p.num_connections for p in found)


@pytest.fixture
def client(kube_cluster: Cluster) -> kube.KubeClient:
    # Its own client, so its pool counts are this test's alone.
    return kube.KubeClient(kube_cluster.api_client())


@pytest.fixture(params=["Deployment"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def evaluated(
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    case: str,
    kind: str,
) -> Reconciler:
    """A two-metric analysis evaluated once (its mirror row made, the connection opened)."""
    gauge(0.01)
    client.request(
        "POST",
        kube.workloads_path(kind, namespace),
        body=workload_manifest(kind, "checkout", namespace),
    )
    metrics = [gauge_metric(case, 0.5, "first"), gauge_metric(case, 0.5, "second")]
    client.request(
        "POST",
        kube.analyses_path(namespace),
        body=analysis_manifest("ra", namespace, metrics=metrics, kind=kind),  # type: ignore[arg-type]
    )
    reconciler = Reconciler(
        client,
        Providers.single(PrometheusClient(fault_proxy.url, timeout=5.0)),
        now=_clock(),
        rng=random.Random(3),
    )
    assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED
    return reconciler


def _clock() -> Callable[[], datetime]:
    """Return a clock a minute further on at every call, as evaluations an interval apart are.

    Two evaluations within the same second would write the same status, which the API server
    takes as a no-op (no new resourceVersion), and the mirror would have nothing to write.
    """
    start, calls = datetime.now(UTC), itertools.count()
    return lambda: start + timedelta(minutes=next(calls))


def _template(kind: str, name: str, metric: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{kube.GROUP}/{kube.VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"metrics": [metric]},
    }


def _snapshot(kube_cluster: Cluster, namespace: str, uid: str) -> Snapshot:
    """Return what the operator's caches hand the worker: listed as the runtime lists them, by
    the watch and the informers of the namespace, each on a client of its own."""
    watch = AnalysisWatch(
        kube.KubeClient(kube_cluster.api_client()),
        namespace=namespace,
        now=lambda: datetime.now(UTC),
    )
    watch.relist()
    caches = Caches(
        kube.KubeClient(kube_cluster.api_client()), namespaces=[namespace], analysis=watch.cached
    )
    for informer in caches.all():
        informer.relist()
    snapshot = caches.snapshot(namespace, "ra", uid)
    assert snapshot is not None and "target" in snapshot, snapshot
    return snapshot


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"], indirect=True)
def test_one_evaluation_costs_one_write_transaction_and_one_kube_request(
    evaluated: Reconciler,
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    kube_cluster: Cluster,
) -> None:
    row = Analysis.objects.get(namespace=namespace, name="ra")
    cached = _snapshot(kube_cluster, namespace, row.uid)
    fault_proxy.reset()
    requests_before, connections_before = _pool_counts(client)

    with _counting_sql() as sql, _counting_instances() as built:
        # With the due row's uid and the caches' snapshot, as the dispatcher queues it.
        outcome = evaluated.reconcile(namespace, "ra", uid=row.uid, cached=cached)

    requests_after, connections_after = _pool_counts(client)
    assert result_of(outcome) == Result.EVALUATED
    # It did the whole job: a second history row, the mirror at the written version.
    assert Evaluation.objects.filter(analysis=row).count() == 2
    written = client.request("GET", kube.analysis_path(namespace, "ra"))
    row.refresh_from_db()
    assert row.resource_version == written["metadata"]["resourceVersion"]
    assert row.next_due_at is not None and row.last_evaluation_at is not None
    assert row.next_due_at > row.last_evaluation_at

    assert sql.write_transactions == WRITE_TRANSACTIONS, sql.summary()
    assert len(sql.statements) <= STATEMENTS, sql.summary()
    assert len(built) <= MODEL_INSTANCES, built
    assert requests_after - requests_before == KUBE_REQUESTS
    assert connections_after - connections_before == KUBE_NEW_CONNECTIONS
    assert fault_proxy.query_count == PROMETHEUS_QUERIES


def test_an_analysis_made_of_templates_costs_one_kube_request_too(
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    case: str,
    kube_cluster: Cluster,
) -> None:
    # One metric from a template of the namespace, one from a cluster template: both kinds.
    gauge(0.01)
    client.request(
        "POST",
        kube.workloads_path("Deployment", namespace),
        body=workload_manifest("Deployment", "checkout", namespace),
    )
    own = f"{_TEMPLATES}/namespaces/{namespace}/rolloutanalysistemplates"
    shared, shared_name = f"{_TEMPLATES}/clusterrolloutanalysistemplates", f"second-{namespace}"
    client.request(
        "POST",
        own,
        body=_template("RolloutAnalysisTemplate", "first", gauge_metric(case, 0.5, "first")),
    )
    client.request(
        "POST",
        shared,
        body=_template(
            "ClusterRolloutAnalysisTemplate", shared_name, gauge_metric(case, 0.5, "second")
        ),
    )
    try:
        spec = {
            "target": {"kind": "Deployment", "name": "checkout"},
            "templates": [{"name": "first"}, {"name": shared_name, "clusterScope": True}],
        }
        client.request(
            "POST", kube.analyses_path(namespace), body=rollout_analysis("ra", namespace, spec)
        )
        reconciler = Reconciler(
            client,
            Providers.single(PrometheusClient(fault_proxy.url, timeout=5.0)),
            now=_clock(),
            rng=random.Random(3),
        )
        # The first evaluation reads everything and writes status.templates.
        assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED
        row = Analysis.objects.get(namespace=namespace, name="ra")

        first_seen: list[dict[str, Any] | None] = []
        for step in ("steady", "edited"):
            cached = _snapshot(kube_cluster, namespace, row.uid)
            first_seen.append(cached["templates"][0]["template"])
            assert [t["template"] is not None for t in cached["templates"]] == [True, True]
            fault_proxy.reset()
            requests_before, _ = _pool_counts(client)

            outcome = reconciler.reconcile(namespace, "ra", uid=row.uid, cached=cached)

            assert result_of(outcome) == Result.EVALUATED
            # Both templates from the caches: the status write is the one request.
            assert _pool_counts(client)[0] - requests_before == KUBE_REQUESTS, step
            assert fault_proxy.query_count == PROMETHEUS_QUERIES
            status = client.request("GET", kube.analysis_path(namespace, "ra"))["status"]
            generations = {t["name"]: t["generation"] for t in status["templates"]}
            assert generations == {"first": 1 if step == "steady" else 2, shared_name: 1}
            assert [m["name"] for m in status["resolvedMetrics"]] == ["first", "second"]
            # An edit of a template, seen by its cache: the next evaluation resolves from the
            # new generation, still without a GET.
            client.request(
                "PATCH",
                f"{own}/first",
                body={"spec": {"metrics": [gauge_metric(case, 0.6, "first")]}},
                content_type=kube.MERGE_PATCH,
            )
        assert status["resolvedMetrics"][0]["maxValue"] == 0.6

        # A template cache behind the status (generation 1 where the status says 2): that
        # template is read from the API server, not resolved from the older copy.
        cached = _snapshot(kube_cluster, namespace, row.uid)
        cached["templates"][0]["template"] = first_seen[0]
        requests_before, _ = _pool_counts(client)
        assert result_of(reconciler.reconcile(namespace, "ra", uid=row.uid, cached=cached)) == (
            Result.EVALUATED
        )
        assert _pool_counts(client)[0] - requests_before == KUBE_REQUESTS + 1
        status = client.request("GET", kube.analysis_path(namespace, "ra"))["status"]
        assert {t["name"]: t["generation"] for t in status["templates"]}["first"] == 2
    finally:
        with contextlib.suppress(kube.NotFound):
            client.request("DELETE", f"{shared}/{shared_name}")


def test_a_cluster_without_the_template_crds_leaves_a_template_cache_empty_and_live(
    client: kube.KubeClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A collection this cluster does not serve answers 404, as the template kinds do on a
    # cluster without their CRDs.
    absent = Informer(
        client,
        f"{_TEMPLATES}/namespaces/{namespace}/absentanalysistemplates",
        transform=strip_template,
    )
    with caplog.at_level(logging.INFO, logger="sentinel_cluster.informer"):
        absent.relist()
        absent.relist()

    assert absent.live and not absent.served and len(absent) == 0
    assert absent.get(namespace, "first") is None
    # One line, not one per retry.
    lines = [r.message for r in caplog.records if absent.path in r.message]
    assert len(lines) == 1 and "not served by this cluster (404)" in lines[0], lines


def test_the_watch_leaves_an_evaluation_to_the_worker_that_wrote_it(
    evaluated: Reconciler, client: kube.KubeClient, namespace: str
) -> None:
    row = Analysis.objects.get(namespace=namespace, name="ra")
    before = (row.resource_version, row.status, row.last_evaluation_at)
    evaluated.reconcile(namespace, "ra")
    written = client.request("GET", kube.analysis_path(namespace, "ra"))
    # The event arriving before the worker's bookkeeping: the mirror still at the old version.
    Analysis.objects.filter(pk=row.pk).update(
        resource_version=before[0], status=before[1], last_evaluation_at=before[2]
    )
    watch = AnalysisWatch(client, namespace=namespace, now=lambda: datetime.now(UTC))

    with _counting_sql() as sql:
        watch.apply(kube.WatchEvent("MODIFIED", written))

    # One narrow read, no write, and the spec not even parsed.
    assert sql.writes == 0 and len(sql.statements) == 1, sql.summary()
    row.refresh_from_db()
    assert row.resource_version == before[0]

    # Holding the copy before it, the watch tells the next evaluation's echo without a read.
    evaluated.reconcile(namespace, "ra")
    again = client.request("GET", kube.analysis_path(namespace, "ra"))
    with _counting_sql() as sql:
        watch.apply(kube.WatchEvent("MODIFIED", again))
    assert sql.statements == [], sql.summary()

    # Once the worker has mirrored its write, a label edited by a person is the watch's to mirror.
    again["metadata"].setdefault("labels", {})["team"] = "payments"
    edited = client.request("PUT", kube.analysis_path(namespace, "ra"), body=again)
    with _counting_sql() as sql:
        watch.apply(kube.WatchEvent("MODIFIED", edited))
    assert sql.write_transactions == 1
    row.refresh_from_db()
    assert row.resource_version == edited["metadata"]["resourceVersion"]


def test_a_dispatch_pass_costs_two_write_transactions_however_many_are_due() -> None:
    now = datetime.now(UTC)
    for index in range(8):
        Analysis.objects.create(
            namespace="ns-pass",
            name=f"a{index}",
            uid=f"pass-{index}-{now.timestamp()}",
            created_at=now,
            next_due_at=now - timedelta(seconds=1),
        )
    # django-q2's real enqueue on its ORM broker (the shipped default): INSERTs on our database.
    dispatcher = Dispatcher(
        now=lambda: now, is_leader=lambda: True, namespaces=["ns-pass"], workers=2
    )
    assert dispatcher.enqueue_in_transaction

    with _counting_sql() as sql:
        assert dispatcher.dispatch_due() == 8

    # The claims together, the enqueues together: not two per analysis.
    assert sql.write_transactions == 2, sql.summary()
    assert len(sql.statements) <= DISPATCH_PASS_STATEMENTS, sql.summary()
    # A task per worker, not per analysis, and every analysis in one of them.
    queued = list(OrmQ.objects.all())
    assert len(queued) == BROKER_TASKS_PER_PASS
    members = sorted(member[1] for task in queued for member in task.task["args"][0])
    assert members == [f"a{index}" for index in range(8)]
    assert not Analysis.objects.filter(namespace="ns-pass", next_due_at__lte=now).exists()


def test_a_cache_behind_by_an_evaluation_costs_the_attempt_again_not_a_count(
    evaluated: Reconciler,
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    kube_cluster: Cluster,
) -> None:
    row = Analysis.objects.get(namespace=namespace, name="ra")
    stale = _snapshot(kube_cluster, namespace, row.uid)
    gauge(0.9)
    # An evaluation the cached copy has not seen: the first failure.
    assert result_of(evaluated.reconcile(namespace, "ra", uid=row.uid)) == Result.EVALUATED
    fault_proxy.reset()

    outcome = evaluated.reconcile(namespace, "ra", uid=row.uid, cached=stale)

    # The status write's 409 showed the copy was behind (another lastEvaluationTime): the
    # attempt was made again from the fresh copy, so the second failure is counted on the first
    # instead of being written over it; measured twice, recorded once.
    assert result_of(outcome) == Result.EVALUATED
    written = client.request("GET", kube.analysis_path(namespace, "ra"))
    assert written["status"]["failures"] == 2
    assert fault_proxy.query_count == 2 * PROMETHEUS_QUERIES
    assert Evaluation.objects.filter(analysis=row).count() == 3


def test_a_pause_decided_from_the_cache_lands_on_the_target_as_it_is_now(
    evaluated: Reconciler,
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    kube_cluster: Cluster,
) -> None:
    path = kube.analysis_path(namespace, "ra")
    client.request("PATCH", path, body={"spec": {"failureLimit": 1}}, content_type=kube.MERGE_PATCH)
    row = Analysis.objects.get(namespace=namespace, name="ra")
    cached = _snapshot(kube_cluster, namespace, row.uid)
    old_uid = cached["target"]["metadata"]["uid"]
    # The target deleted and created again under its name after the caches saw it.
    target = kube.deployment_path(namespace, "checkout")
    client.request("DELETE", target)
    client.request(
        "POST",
        kube.workloads_path("Deployment", namespace),
        body=workload_manifest("Deployment", "checkout", namespace),
    )
    gauge(0.9)
    fault_proxy.reset()

    outcome = evaluated.reconcile(namespace, "ra", uid=row.uid, cached=cached)

    # The pause was confirmed against the API server first, which showed another uid: decided
    # again from the target as it is now, and paused there.
    assert result_of(outcome) == Result.EVALUATED
    deployment = client.request("GET", target)
    assert deployment["metadata"]["uid"] != old_uid
    assert deployment["spec"]["paused"] is True
    assert f"{namespace}/ra" in deployment["metadata"]["annotations"][PAUSED_BY]
    written = client.request("GET", path)
    reason = {c["type"]: c["reason"] for c in written["status"]["conditions"]}
    assert reason["RolloutPaused"] == "FailureLimitReached"
    assert fault_proxy.query_count == 2 * PROMETHEUS_QUERIES


# On the real control plane too (docs/operator.md#when-things-go-wrong, item 45).
@pytest.mark.clusters("dev", "real")
def test_a_paused_analysis_judges_its_target_as_the_api_server_has_it(
    evaluated: Reconciler,
    client: kube.KubeClient,
    namespace: str,
    fault_proxy: FaultProxy,
    gauge: GaugeSetter,
    kube_cluster: Cluster,
) -> None:
    """A cache behind the target never decides a pause's fate (the soak's invariant 8).

    A cached copy from before this analysis's own pause would read as a person's resume; one
    from before a person's ``kubectl rollout resume`` would keep the count (here the window's)
    over the resume. While the status claims the pause, the target is read from the API server.
    """
    path = kube.analysis_path(namespace, "ra")
    target = kube.deployment_path(namespace, "checkout")
    client.request(
        "PATCH",
        path,
        body={"spec": {"failureLimit": 1, "failureWindow": 3}},
        content_type=kube.MERGE_PATCH,
    )
    row = Analysis.objects.get(namespace=namespace, name="ra")
    before_pause = _snapshot(kube_cluster, namespace, row.uid)
    gauge(0.9)
    assert result_of(evaluated.reconcile(namespace, "ra", uid=row.uid)) == Result.EVALUATED
    assert client.request("GET", target)["spec"]["paused"] is True

    # The analysis cached as it is now, its target as the cache saw it before the pause.
    stale = _snapshot(kube_cluster, namespace, row.uid)
    stale["target"] = before_pause["target"]
    fault_proxy.reset()
    requests_before, _ = _pool_counts(client)
    outcome = evaluated.reconcile(namespace, "ra", uid=row.uid, cached=stale)
    requests_after, _ = _pool_counts(client)

    assert result_of(outcome) == Result.EVALUATED
    written = client.request("GET", path)["status"]
    reason = {c["type"]: c["reason"] for c in written["conditions"]}
    assert reason["RolloutPaused"] == "FailureLimitReached"
    assert (written["failures"], written["window"]) == (2, ["Fail", "Fail"])
    # The target's GET, then the status write: one request more than unpaused, only while paused.
    assert requests_after - requests_before == PAUSED_KUBE_REQUESTS
    assert fault_proxy.query_count == PROMETHEUS_QUERIES

    # A person's kubectl rollout resume, after the caches last saw the target (still held).
    cached = _snapshot(kube_cluster, namespace, row.uid)
    assert cached["target"]["spec"]["paused"] is True
    client.request("PATCH", target, body={"spec": {"paused": False}}, content_type=kube.MERGE_PATCH)
    gauge(0.01)

    outcome = evaluated.reconcile(namespace, "ra", uid=row.uid, cached=cached)

    assert result_of(outcome) == Result.EVALUATED
    written = client.request("GET", path)["status"]
    reason = {c["type"]: c["reason"] for c in written["conditions"]}
    assert reason["RolloutPaused"] == "ResumedByUser"
    # The resume started the window afresh: this Pass alone, not [Fail, Fail, Pass].
    assert (written["failures"], written["window"]) == (0, ["Pass"])
    deployment = client.request("GET", target)
    assert deployment["spec"].get("paused") is not True
    assert PAUSED_BY not in (deployment["metadata"].get("annotations") or {})
