"""The reconciler in this process against each cluster and the real Prometheus (via the proxy).

Each test drives ``Reconciler.reconcile`` by hand, so it can look at one attempt at a time:
what it wrote to the cluster, to the history and to the dispatch schedule.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from analyses import due, mirror, services
from analyses.models import Analysis, Evaluation
from sentinel_cluster import kube, writes
from sentinel_cluster.events import record_events
from sentinel_core.decision import Resumption, resume
from sentinel_core.status import AnalysisStatus
from sentinel_core.workload_kinds import Released
from sentinel_operator.outcome import Deleted, Evaluated, Outcome, Result, record
from sentinel_operator.outcome import result as result_of
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from sentinel_operator.reconcile import Reconciler
from testkit.clusters import Cluster
from testkit.devcluster import DevCluster
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric, pause_record
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, events_for
from testkit.waiting import wait_until

pytestmark = pytest.mark.django_db
PAUSED_BY = "sentinel.example.com/paused-by"


@pytest.fixture
def reconciler(kube_client: kube.KubeClient, fault_proxy: FaultProxy) -> Reconciler:
    prometheus = PrometheusClient(fault_proxy.url, timeout=2.0)
    return Reconciler(
        kube_client, Providers.single(prometheus), rng=random.Random(7), instance="test"
    )


def _create(client: kube.KubeClient, namespace: str, name: str, **spec: object) -> None:
    client.request(
        "POST", kube.analyses_path(namespace), body=analysis_manifest(name, namespace, **spec)
    )  # type: ignore[arg-type]


def _deploy(client: kube.KubeClient, namespace: str, name: str = "checkout") -> None:
    client.request(
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        body=deployment_manifest(name, namespace),
    )


def test_a_conflicting_status_write_is_reapplied_without_measuring_again(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    api_faults: DevCluster,
    fault_proxy: FaultProxy,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    _deploy(kube_client, namespace)
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)], failure_limit=3)
    api_faults.inject_fault(
        path_regex=f"/namespaces/{namespace}/rolloutanalyses/ra/status$",
        methods=["PUT"],
        status=409,
        times=2,
    )
    fault_proxy.reset()
    result = reconciler.reconcile(namespace, "ra")
    assert result_of(result) == Result.EVALUATED
    assert fault_proxy.query_count == 1
    status = kube_client.request("GET", kube.analysis_path(namespace, "ra"))["status"]
    assert status["failures"] == 1  # counted once, not once per write
    assert status["lastVerdict"] == "Fail"
    row = Analysis.objects.get(namespace=namespace, name="ra")
    assert row.failures == 1  # the mirror holds the written status
    assert Evaluation.objects.filter(analysis=row).count() == 1
    assert row.backoff_attempt == 0
    assert row.next_due_at is not None
    due_in = (row.next_due_at - datetime.now(UTC)).total_seconds()
    assert 2.0 < due_in <= 5.0  # +interval from the reconcile's start


def test_the_target_is_looked_up_in_the_analysis_namespace_only(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.1)
    # A Deployment of that name exists, but in another namespace.
    target = f"elsewhere-{uuid.uuid4().hex[:8]}"
    _deploy(kube_client, "default", target)
    _create(kube_client, namespace, "ra", target=target, metrics=[gauge_metric(case, 0.5)])
    result = reconciler.reconcile(namespace, "ra")
    assert result_of(result) == Result.EVALUATED
    resource = kube_client.request("GET", kube.analysis_path(namespace, "ra"))
    assert condition(resource, "Ready")["reason"] == "TargetNotFound"
    assert resource["status"]["lastVerdict"] == "Pass"  # metrics are still evaluated
    reasons = [event["reason"] for event in events_for(kube_client, namespace, "ra")]
    assert reasons == ["TargetNotFound"]
    evaluation = Evaluation.objects.get(analysis__namespace=namespace)
    assert evaluation.outcome == "Pass"
    assert [r.value_text for r in evaluation.metric_results.all()] == ["0.1"]


def test_prometheus_outage_backs_off_and_recovery_resets(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    fault_proxy: FaultProxy,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    _deploy(kube_client, namespace)
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)], interval="10s")
    assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED

    fault_proxy.fail(502)
    delays = []
    for attempt in (1, 2, 3):
        before = datetime.now(UTC)
        result = reconciler.reconcile(namespace, "ra")
        after = datetime.now(UTC)
        assert result_of(result) == Result.TRANSIENT
        row = Analysis.objects.get(namespace=namespace, name="ra")
        assert row.backoff_attempt == attempt
        assert row.next_due_at is not None
        # The delay was added to a moment between ``before`` and ``after``.
        delays.append(
            ((row.next_due_at - after).total_seconds(), (row.next_due_at - before).total_seconds())
        )
    # 5 s, 10 s, 20 s with +-10% jitter: each wait longer than the last, then above interval.
    for (shortest, longest), (low, high) in zip(
        delays, ((4.5, 5.5), (9, 11), (18, 22)), strict=True
    ):
        assert longest >= low and shortest <= high
    resource = kube_client.request("GET", kube.analysis_path(namespace, "ra"))
    assert condition(resource, "Ready")["reason"] == "MetricsUnavailable"
    assert resource["status"]["failures"] == 1  # errors leave the count alone
    errors = Evaluation.objects.filter(analysis__namespace=namespace, outcome="Error")
    assert errors.count() == 3
    assert {e.error_reason for e in errors} == {"MetricsUnavailable"}
    assert {r.verdict for e in errors for r in e.metric_results.all()} == {"Error"}
    reasons = [event["reason"] for event in events_for(kube_client, namespace, "ra")]
    assert reasons.count("MetricsUnavailable") == 1

    fault_proxy.pass_through()
    before = datetime.now(UTC)
    result = reconciler.reconcile(namespace, "ra")
    after = datetime.now(UTC)
    assert result_of(result) == Result.EVALUATED
    row = Analysis.objects.get(namespace=namespace, name="ra")
    assert row.backoff_attempt == 0
    assert row.next_due_at is not None
    assert before + timedelta(seconds=10) <= row.next_due_at <= after + timedelta(seconds=10)
    # The next attempts, dispatched at their due times, keep them: each is due one interval after
    # its due time (not after its end), the second through the steady state's plain-SQL
    # bookkeeping (nothing new to announce).
    first_due = row.next_due_at
    for step in (1, 2):
        due_at = first_due + timedelta(seconds=10 * (step - 1))
        assert result_of(reconciler.reconcile(namespace, "ra", due_at=due_at)) == Result.EVALUATED
        row = Analysis.objects.get(namespace=namespace, name="ra")
        assert row.next_due_at == due_at + timedelta(seconds=10)
    wait_until(
        lambda: (
            "MetricsRecovered"
            in [event["reason"] for event in events_for(kube_client, namespace, "ra")]
        ),
        timeout=5,
    )


def test_forbidden_is_reported_and_backed_off(
    reconciler: Reconciler,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    fault_proxy: FaultProxy,
    namespace: str,
    case: str,
) -> None:
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)])
    assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED
    refused = Reconciler(
        kube.KubeClient(kube_cluster.api_client(token="revoked")),
        reconciler.providers,
        rng=random.Random(1),
    )
    for attempt in (1, 2):
        before = datetime.now(UTC)
        result = refused.reconcile(namespace, "ra")
        assert result_of(result) == Result.FORBIDDEN
        row = Analysis.objects.get(namespace=namespace, name="ra")
        assert row.backoff_attempt == attempt
        assert row.next_due_at is not None
        assert row.next_due_at >= before + timedelta(seconds=4.5)
    errors = Evaluation.objects.filter(analysis__namespace=namespace, outcome="Error")
    assert {e.error_reason for e in errors} == {"KubernetesForbidden"}


def test_a_deleted_analysis_leaves_the_queue_and_keeps_its_history(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    namespace: str,
    case: str,
) -> None:
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)])
    reconciler.reconcile(namespace, "ra")
    kube_client.request("DELETE", kube.analysis_path(namespace, "ra"))
    result = reconciler.reconcile(namespace, "ra")
    assert result_of(result) == Result.DELETED
    row = Analysis.objects.get(namespace=namespace, name="ra")
    assert row.deleted_at is not None and row.next_due_at is None
    assert Evaluation.objects.filter(analysis=row).count() == 1


def test_a_404_marks_only_the_incarnation_the_attempt_was_dispatched_for(
    kube_client: kube.KubeClient, fault_proxy: FaultProxy, namespace: str, case: str
) -> None:
    """Deleted and created again, the new one mirrored before the old one's 404 is recorded.

    The clock is the seam between the attempt's read and its bookkeeping: the reconciler asks it
    the time before the read and again when it records, and on that second call the analysis is
    created again and mirrored, as the watch does when the new one's event comes first.
    """
    path = kube.analysis_path(namespace, "ra")
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)])
    old, _ = mirror.upsert_from_resource(kube_client.request("GET", path))
    kube_client.request("DELETE", path)
    calls: list[datetime] = []

    def clock() -> datetime:
        calls.append(datetime.now(UTC))
        if len(calls) == 2:
            _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)])
            mirror.upsert_from_resource(kube_client.request("GET", path))
        return calls[-1]

    prometheus = PrometheusClient(fault_proxy.url, timeout=2.0)
    reconciler = Reconciler(kube_client, Providers.single(prometheus), now=clock, instance="test")
    outcome = reconciler.reconcile(namespace, "ra", uid=old.uid)

    assert isinstance(outcome, Deleted) and len(calls) >= 2  # the new one came in between
    # The new incarnation is still live and dispatched: its first evaluation is not lost.
    live = Analysis.objects.filter(namespace=namespace, name="ra", deleted_at__isnull=True)
    assert [(row.uid != old.uid, row.next_due_at is not None) for row in live] == [(True, True)]
    assert Analysis.objects.get(pk=old.pk).deleted_at is not None
    assert outcome.uid == old.uid


def _held_in_its_query(
    reconciler: Reconciler,
    fault_proxy: FaultProxy,
    namespace: str,
    *,
    during: Callable[[], object],
    client: kube.KubeClient | None = None,
) -> Outcome:
    """Reconcile ``namespace/ra`` in a thread, run ``during`` while its query is held.

    With ``client`` the outcome is also recorded (events, mirror, history), as the worker does.
    """
    fault_proxy.hold()
    outcomes: list[Outcome] = []

    def evaluate() -> None:
        try:
            outcome = reconciler.reconcile(namespace, "ra")
            outcomes.append(outcome)
            if client is not None:
                record(outcome, client=client, now=datetime.now(UTC), rng=random.Random(7))
        finally:
            connection.close()

    worker = threading.Thread(target=evaluate)
    worker.start()
    try:
        wait_until(lambda: bool(fault_proxy.in_flight), timeout=30)
        during()
    finally:
        fault_proxy.let_go()
        worker.join(timeout=60)
    assert not worker.is_alive() and outcomes
    return outcomes[0]


@pytest.mark.django_db(transaction=True)  # the evaluation runs in a thread of its own
def test_a_resume_made_during_an_evaluation_wins_over_its_count(
    kube_client: kube.KubeClient,
    fault_proxy: FaultProxy,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """A person resumes while an evaluation is measuring; its status write then meets a 409.

    The proxy holds the evaluation's query until the resume is written, so the evaluation
    decided from the status before the resume (failures 1 -> 2) and must not write that back
    over the resume's ``failures: 0`` and ``ResumedByUser`` (docs/operator.md#conflicts).
    """
    gauge(0.9)
    _deploy(kube_client, namespace)
    # Held by this analysis (its record on the target), so that a person's resume has a pause
    # to release (docs/status.md#pausing-each-kind).
    kube_client.request(
        "PATCH",
        kube.deployment_path(namespace, "checkout"),
        body={
            "metadata": {"annotations": pause_record(f"{namespace}/ra")},
            "spec": {"paused": True},
        },
        content_type=kube.MERGE_PATCH,
    )
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)], failure_limit=3)
    # The held query waits for the resume, however long that takes on a loaded machine.
    prometheus = PrometheusClient(fault_proxy.url, timeout=60.0)
    reconciler = Reconciler(
        kube_client, Providers.single(prometheus), rng=random.Random(7), instance="test"
    )
    assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED
    row = Analysis.objects.get(namespace=namespace, name="ra")
    assert row.failures == 1

    outcome = _held_in_its_query(
        reconciler,
        fault_proxy,
        namespace,
        during=lambda: services.resume_analysis(row, actor="alice", client=kube_client),
    )
    assert result_of(outcome) == Result.EVALUATED

    status = kube_client.request("GET", kube.analysis_path(namespace, "ra"))["status"]
    assert status["failures"] == 0
    paused = next(c for c in status["conditions"] if c["type"] == "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("False", "ResumedByUser")
    assert "alice" in paused["message"]
    # The evaluation's own results are written all the same.
    assert status["lastVerdict"] == "Fail"
    # The mirror and the history row say what was written, not what was decided.
    assert Analysis.objects.get(pk=row.pk).failures == 0
    last = Evaluation.objects.filter(analysis=row).order_by("-started_at").first()
    assert last is not None and last.outcome == "Fail" and last.failures_after == 0


@pytest.mark.django_db(transaction=True)  # the evaluation runs in a thread of its own
def test_a_resume_seen_by_the_evaluation_and_made_by_the_ui_is_announced_once(
    kube_client: kube.KubeClient,
    fault_proxy: FaultProxy,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    """The evaluation reads the released target, the UI's resume writes first (a 409).

    Both saw the same resume: the UI posted its RolloutResumed event and queued its message,
    so the evaluation must not announce it again (docs/operator.md#conflicts). Seen as two
    RolloutResumed events on the real DaemonSet story under load.
    """
    gauge(0.9)
    _deploy(kube_client, namespace)
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)], failure_limit=1)
    prometheus = PrometheusClient(fault_proxy.url, timeout=60.0)
    reconciler = Reconciler(
        kube_client, Providers.single(prometheus), rng=random.Random(7), instance="test"
    )
    first = reconciler.reconcile(namespace, "ra")
    assert isinstance(first, Evaluated) and first.decision.pause is not None
    record(first, client=kube_client, now=datetime.now(UTC), rng=random.Random(7))
    # The UI's resume releases the Deployment first (``writes.release``); the evaluation then
    # reads it released and the status still paused, and is held in its query while the
    # resume writes its status and event (the rest of ``services.resume_analysis``).
    released = writes.release(kube_client, namespace, "checkout", f"{namespace}/ra")
    assert released is not None and released.outcome == Released.RESTORED
    moment = datetime.now(UTC)
    resumptions: list[Resumption] = []

    def resumed_status(fresh: Any) -> dict[str, Any]:
        status = AnalysisStatus.from_dict(fresh.get("status"))
        resumptions.append(resume(status, now=moment, actor="alice", via="the web UI"))
        return resumptions[-1].status.to_dict()

    def the_rest_of_the_resume() -> None:
        raw = kube_client.request("GET", kube.analysis_path(namespace, "ra"))
        written = writes.write_status(kube_client, raw, resumed_status)
        record_events(kube_client, written, resumptions[-1].events, now=moment)

    outcome = _held_in_its_query(
        reconciler, fault_proxy, namespace, during=the_rest_of_the_resume, client=kube_client
    )
    assert isinstance(outcome, Evaluated)

    decision = outcome.decision
    assert [e.reason.value for e in decision.events] == []
    assert [i.event.value for i in decision.notifications] == []
    resumed = [
        e for e in events_for(kube_client, namespace, "ra") if e["reason"] == "RolloutResumed"
    ]
    assert [(e["message"], int(e.get("count") or 1)) for e in resumed] == [
        ("resumed by alice through the web UI; the failure count starts again", 1)
    ]
    paused = condition(
        kube_client.request("GET", kube.analysis_path(namespace, "ra")), "RolloutPaused"
    )
    assert paused["reason"] == "ResumedByUser" and "alice" in paused["message"]


def test_two_analyses_on_one_target_both_name_themselves(
    reconciler: Reconciler,
    kube_client: kube.KubeClient,
    api_faults: DevCluster,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> None:
    gauge(0.9)
    _deploy(kube_client, namespace)
    for name in ("first", "second"):
        _create(kube_client, namespace, name, metrics=[gauge_metric(case, 0.5)], failure_limit=1)
    first = reconciler.reconcile(namespace, "first")
    assert isinstance(first, Evaluated) and first.decision.pause is not None
    # The second pause races a change to the Deployment: it re-reads and keeps the union.
    api_faults.inject_fault(
        path_regex=f"/namespaces/{namespace}/deployments/checkout$",
        methods=["PATCH"],
        status=409,
        times=1,
    )
    assert result_of(reconciler.reconcile(namespace, "second")) == Result.EVALUATED
    deployment = kube_client.request("GET", kube.deployment_path(namespace, "checkout"))
    assert deployment["spec"]["paused"] is True
    assert deployment["metadata"]["annotations"][PAUSED_BY] == (
        f"{namespace}/first,{namespace}/second"
    )
    for name in ("first", "second"):
        resource = kube_client.request("GET", kube.analysis_path(namespace, name))
        assert condition(resource, "RolloutPaused")["reason"] == "FailureLimitReached"
    # Idempotent: evaluating again neither re-pauses nor re-announces.
    again = reconciler.reconcile(namespace, "first")
    assert isinstance(again, Evaluated) and again.decision.pause is None
    assert again.decision.events == ()


def test_an_edited_spec_during_an_attempt_keeps_its_immediate_due_time(
    reconciler: Reconciler, kube_client: kube.KubeClient, namespace: str, case: str
) -> None:
    _create(kube_client, namespace, "ra", metrics=[gauge_metric(case, 0.5)])
    reconciler.reconcile(namespace, "ra")
    row = Analysis.objects.get(namespace=namespace, name="ra")
    soon = datetime.now(UTC)
    # The watch saw generation 2 and made the row due now; a late attempt on generation 1 ends.
    Analysis.objects.filter(pk=row.pk).update(generation=2, next_due_at=soon)
    later = soon + timedelta(seconds=30)
    assert not due.reschedule(row.pk, generation=1, due_at=later, backoff_attempt=0)
    assert Analysis.objects.get(pk=row.pk).next_due_at == soon


# Every shape of status the reconciler writes, each checked by the cluster's own validation of
# the CRD's status schema (the real kube-apiserver's, not only devcluster's): an invalid query,
# no data (NaN, an empty vector), an infinite value, and a number too small for a float32.
STATUS_CASES = {
    "invalid-query": (
        ["max(sentinel_test_value"],
        ("Ready", "False", "InvalidQuery"),
        ("Healthy", "Unknown", "NotEvaluated"),
    ),
    "no-data": (
        ["0 / 0", 'vector(1) and on() absent(up{job="no-such-job"}) == 2'],
        ("Ready", "True", "Evaluating"),
        ("Healthy", "Unknown", "NoData"),
    ),
    "infinite": (
        ["1 / 0"],
        ("Ready", "True", "Evaluating"),
        ("Healthy", "False", "ThresholdExceeded"),
    ),
    "tiny": (
        ["1e-300"],
        ("Ready", "True", "Evaluating"),
        ("Healthy", "True", "WithinThresholds"),
    ),
}


@pytest.mark.parametrize("shape", list(STATUS_CASES))
def test_every_status_shape_is_accepted_by_the_cluster(
    reconciler: Reconciler, kube_client: kube.KubeClient, namespace: str, shape: str
) -> None:
    queries, ready, healthy = STATUS_CASES[shape]
    metrics = [
        {"name": f"m{index}", "query": query, "maxValue": 0.5}
        for index, query in enumerate(queries)
    ]
    _deploy(kube_client, namespace)
    _create(kube_client, namespace, "ra", metrics=metrics)
    assert result_of(reconciler.reconcile(namespace, "ra")) == Result.EVALUATED
    resource = kube_client.request("GET", kube.analysis_path(namespace, "ra"))
    for type_, status, reason in (ready, healthy):
        found = condition(resource, type_)
        assert (found["status"], found["reason"]) == (status, reason), resource["status"]
    # What was written is what the server kept: every metric's result, none pruned.
    results = resource["status"].get("metricResults") or []
    if shape != "invalid-query":
        assert [r["name"] for r in results] == [m["name"] for m in metrics]
    row = Analysis.objects.get(namespace=namespace, name="ra")
    assert row.resource_version == resource["metadata"]["resourceVersion"]
