"""The dispatcher's batch task on devcluster (docs/operator.md#due-time-dispatch).

The dispatcher claims analyses up to ``SENTINEL_DISPATCH_AHEAD`` before their due time and hands
each worker one ``reconcile_batch_task`` per pass. Here the worker side runs as a django-q2
worker runs it (clients built from settings and ``KUBECONFIG``), against devcluster and the real
Prometheus behind the fault proxy: no member starts before its due time, and a slow member that
uses half the task's time limit makes the task give the rest back, due at once, to be queued
and evaluated again long before their claims would have run out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import LazySettings

from analyses.models import Analysis, Evaluation
from sentinel_cluster import kube
from sentinel_operator import tasks
from sentinel_operator.dispatcher import Dispatcher, Member
from testkit.clusters import Cluster, kubectl_apply
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysed_deployments, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import get_analysis

# The worker's waits and time limit are the same on either cluster: devcluster is enough.
pytestmark = pytest.mark.clusters("dev")

NAMES = ("first", "second", "third")


@pytest.fixture
def worker(
    settings: LazySettings,
    monkeypatch: pytest.MonkeyPatch,
    fault_proxy: FaultProxy,
    kube_cluster: Cluster,
) -> None:
    """Build the task's clients from settings and KUBECONFIG, as in a django-q2 worker."""
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig))
    monkeypatch.setattr(tasks, "_reconciler", None)
    settings.SENTINEL = dataclasses.replace(settings.SENTINEL, prometheus_url=fault_proxy.url)


@pytest.fixture
def uids(
    worker: None,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
) -> dict[str, str]:
    """Create the three analyses (each on its own Deployment); return their uids by name."""
    gauge(0.1)
    metrics = [gauge_metric(case, 0.5)]
    manifests = analysed_deployments(NAMES, namespace, metrics=metrics, interval="60s")
    kubectl_apply(kube_cluster, *manifests)
    return {name: get_analysis(kube_client, namespace, name)["metadata"]["uid"] for name in NAMES}


def _task(members: Sequence[Member], claimed_until: datetime) -> list[str]:
    return tasks.reconcile_batch_task(
        [(namespace, name, uid, due.isoformat()) for namespace, name, uid, due in members],
        claimed_until.isoformat(),
    )


def _started(namespace: str, name: str) -> list[datetime]:
    rows = Evaluation.objects.filter(analysis__namespace=namespace, analysis__name=name)
    return list(rows.order_by("started_at").values_list("started_at", flat=True))


@pytest.mark.django_db(transaction=True)
def test_no_member_starts_before_its_due_time(namespace: str, uids: dict[str, str]) -> None:
    now = datetime.now(UTC)
    # Claimed ahead, as the dispatcher does: the last one due well after the task starts.
    due = {name: now + timedelta(seconds=0.3 * (index + 1)) for index, name in enumerate(NAMES)}
    members = [(namespace, name, uids[name], due[name]) for name in NAMES]

    assert _task(members, now + timedelta(minutes=2)) == ["evaluated"] * 3

    for name in NAMES:
        (started,) = _started(namespace, name)
        assert started >= due[name], (name, started, due[name])


@pytest.mark.django_db(transaction=True)
def test_a_slow_member_past_half_the_time_limit_gives_the_rest_back(
    settings: LazySettings, fault_proxy: FaultProxy, namespace: str, uids: dict[str, str]
) -> None:
    first_sight = [(namespace, name, uids[name], datetime.now(UTC)) for name in NAMES]
    # Claimed for long enough: a claim about to run out is given back (docs/operator.md#claims).
    assert _task(first_sight, datetime.now(UTC) + timedelta(minutes=2)) == ["evaluated"] * 3
    # All three due now, claimed by the real dispatcher into one task (one worker).
    Analysis.objects.filter(namespace=namespace).update(next_due_at=datetime.now(UTC))
    queued: list[tuple[list[Member], datetime]] = []
    dispatcher = Dispatcher(
        now=lambda: datetime.now(UTC),
        is_leader=lambda: True,
        enqueue=lambda members, until: queued.append((list(members), until)),
        namespaces=[namespace],
        workers=1,
    )
    assert dispatcher.dispatch_due() == 3
    ((members, claimed_until),) = queued
    assert [member[1] for member in members] == list(NAMES)

    # A time limit of 2 s: the first member's query alone takes more than half of it.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 2}
    fault_proxy.slow(1.5)
    assert _task(members, claimed_until) == ["evaluated", tasks.RELEASED, tasks.RELEASED]

    # Given back due at the time they were claimed for, not at the claim's end.
    for _, name, _, due in members[1:]:
        assert Analysis.objects.get(namespace=namespace, name=name).next_due_at == due
    fault_proxy.pass_through()
    queued.clear()
    assert dispatcher.dispatch_due() == 2
    ((again, until),) = queued
    assert [member[1] for member in again] == list(NAMES[1:])
    assert _task(again, until) == ["evaluated", "evaluated"]
    for _, name, _, due in again:
        started = _started(namespace, name)
        assert len(started) == 2
        # Evaluated within seconds of its due time, not after the two-minute claim.
        assert due <= started[-1] < due + timedelta(seconds=10), (name, started, due)
