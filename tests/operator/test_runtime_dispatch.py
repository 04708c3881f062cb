"""The due-time dispatcher's claims and the watch that keeps the mirror (and due times) current."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from analyses.models import Analysis, Evaluation
from sentinel_cluster import kube
from sentinel_cluster.informer import Informer, strip_workload
from sentinel_core.workload_kinds import TEMPLATE_HASH
from sentinel_operator import tasks
from sentinel_operator.dispatcher import Dispatcher, Member
from sentinel_operator.watch import AnalysisWatch
from testkit.clusters import Cluster
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.namespaces import delete_namespace, unique_name
from testkit.waiting import wait_until

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _row(name: str, due: datetime | None, *, deleted: bool = False) -> Analysis:
    return Analysis.objects.create(
        namespace="ns",
        name=name,
        uid=str(uuid.uuid4()),
        created_at=NOW - timedelta(hours=1),
        next_due_at=due,
        deleted_at=NOW if deleted else None,
    )


class Queue:
    """Collects what the dispatcher hands over, in place of django-q2's broker."""

    def __init__(self, *, fail: bool = False) -> None:
        self.items: list[tuple[str, str, datetime]] = []
        # The uid each item was queued with: the incarnation a 404 may mark deleted.
        self.uids: list[str] = []
        # The members of each task queued, by name.
        self.tasks: list[list[str]] = []
        self.fail = fail

    def __call__(self, members: Sequence[Member], claimed_until: datetime) -> None:
        if self.fail:
            raise ConnectionError("broker down")
        self.tasks.append([name for _, name, _, _ in members])
        for namespace, name, uid, due_at in members:
            self.items.append((namespace, name, due_at))
            self.uids.append(uid)


@pytest.mark.django_db
def test_due_rows_are_claimed_and_queued_once() -> None:
    early, late = (
        _row("early", NOW - timedelta(seconds=2)),
        _row("late", NOW - timedelta(seconds=1)),
    )
    _row("future", NOW + timedelta(seconds=5))
    _row("unscheduled", None)
    _row("deleted", NOW - timedelta(seconds=3), deleted=True)
    queue = Queue()
    dispatcher = Dispatcher(now=lambda: NOW, is_leader=lambda: True, enqueue=queue)
    assert dispatcher.dispatch_due() == 2
    assert queue.items == [
        ("ns", "early", early.next_due_at),
        ("ns", "late", late.next_due_at),
    ]
    assert queue.uids == [early.uid, late.uid]
    claimed = Analysis.objects.get(pk=early.pk).next_due_at
    assert claimed == NOW + dispatcher.claim_timeout
    # A second pass (or a second replica) finds nothing left to queue.
    assert dispatcher.dispatch_due() == 0
    assert len(queue.items) == 2


@pytest.mark.django_db
def test_a_pass_claims_ahead_and_deals_its_claims_to_a_task_per_worker() -> None:
    soon = _row("soon", NOW + timedelta(seconds=0.3))
    queue = Queue()
    dispatcher = Dispatcher(
        now=lambda: NOW, is_leader=lambda: True, enqueue=queue, ahead=0.5, workers=2
    )
    # Nothing falls due before the next poll: the pass waits for more to gather.
    assert dispatcher.dispatch_due() == 0
    assert Analysis.objects.get(pk=soon.pk).next_due_at == NOW + timedelta(seconds=0.3)

    for index in range(4):
        _row(f"due{index}", NOW - timedelta(seconds=4 - index))
    _row("beyond", NOW + timedelta(seconds=0.7))
    assert dispatcher.dispatch_due() == 5
    # Due order, dealt in turn to at most `workers` tasks; "beyond" is for a later pass.
    assert queue.tasks == [["due0", "due2", "soon"], ["due1", "due3"]]
    assert queue.items[-1] == ("ns", "due3", NOW - timedelta(seconds=1))
    assert Analysis.objects.get(pk=soon.pk).next_due_at == NOW + dispatcher.claim_timeout
    assert dispatcher.dispatch_due() == 0


@pytest.mark.django_db
def test_a_lost_claim_makes_the_analysis_due_again() -> None:
    row = _row("lost", NOW - timedelta(seconds=1))
    queue = Queue()
    clock = [NOW]
    dispatcher = Dispatcher(now=lambda: clock[0], is_leader=lambda: True, enqueue=queue)
    assert dispatcher.dispatch_due() == 1
    clock[0] = NOW + dispatcher.claim_timeout + timedelta(seconds=1)
    assert dispatcher.dispatch_due() == 1  # the worker never rescheduled it
    assert [item[1] for item in queue.items] == ["lost", "lost"]
    assert Analysis.objects.get(pk=row.pk).next_due_at == clock[0] + dispatcher.claim_timeout


@pytest.mark.django_db
def test_a_batch_starts_no_member_whose_claim_runs_out_within_its_time_limit(
    settings: Any,
) -> None:
    # A task that waited in the queue, or that the ORM broker delivers again after its worker
    # died: a new dispatch may already be running these members (docs/operator.md#claims).
    now = datetime.now(UTC)
    limit = settings.Q_CLUSTER["timeout"]
    claimed_until = now + timedelta(seconds=limit - 1)
    held = [_row(f"held{index}", claimed_until) for index in range(2)]
    # Claimed again by a later pass after its claim ran out: left as it is.
    again = _row("again", claimed_until + timedelta(seconds=limit))
    due = now - timedelta(seconds=1)
    members = [("ns", row.name, row.uid, due.isoformat()) for row in [*held, again]]

    results = tasks.reconcile_batch_task(members, claimed_until.isoformat())

    assert results == [tasks.RELEASED] * 3
    assert not Evaluation.objects.exists()
    for row in held:
        assert Analysis.objects.get(pk=row.pk).next_due_at == due  # due again at once
    assert Analysis.objects.get(pk=again.pk).next_due_at == again.next_due_at


@pytest.mark.django_db
def test_a_broker_failure_leaves_the_analysis_due() -> None:
    due = NOW - timedelta(seconds=1)
    row = _row("unlucky", due)
    dispatcher = Dispatcher(now=lambda: NOW, is_leader=lambda: True, enqueue=Queue(fail=True))
    assert dispatcher.dispatch_due() == 0
    assert Analysis.objects.get(pk=row.pk).next_due_at == due


@pytest.mark.django_db(transaction=True)
def test_only_the_leader_dispatches() -> None:
    _row("due", NOW - timedelta(seconds=1))
    queue = Queue()
    leading = threading.Event()
    dispatcher = Dispatcher(
        now=lambda: NOW, is_leader=leading.is_set, enqueue=queue, poll_interval=0.02
    )
    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.run, args=(stop,))
    thread.start()
    try:
        stop.wait(0.3)
        assert queue.items == []
        leading.set()
        wait_until(lambda: len(queue.items) == 1, timeout=5)
    finally:
        stop.set()
        thread.join(5)


def _create(client: kube.KubeClient, namespace: str, name: str) -> dict[str, object]:
    body = analysis_manifest(name, namespace, metrics=[gauge_metric("x", 1.0)])
    return client.request("POST", kube.analyses_path(namespace), body=body)


@pytest.mark.django_db
def test_watch_mirrors_new_edited_and_deleted_analyses(
    kube_client: kube.KubeClient, namespace: str
) -> None:
    _create(kube_client, namespace, "listed")
    watch = AnalysisWatch(
        kube_client, namespace=namespace, now=lambda: datetime.now(UTC), watch_timeout=1
    )
    watch.relist()
    listed = Analysis.objects.get(namespace=namespace, name="listed")
    assert listed.next_due_at is not None  # new: due at once

    Analysis.objects.filter(pk=listed.pk).update(next_due_at=None)
    _create(kube_client, namespace, "watched")
    kube_client.request(
        "PATCH",
        kube.analysis_path(namespace, "listed"),
        body={"spec": {"failureLimit": 5}},
        content_type=kube.MERGE_PATCH,
    )
    kube_client.request("DELETE", kube.analysis_path(namespace, "watched"))
    before = datetime.now(UTC)
    watch.watch_once(threading.Event())
    assert watch.events >= 3  # ADDED, MODIFIED, DELETED (and maybe bookmarks)

    edited = Analysis.objects.get(pk=listed.pk)
    assert edited.failure_limit == 5 and edited.generation == 2
    assert edited.next_due_at is not None and edited.next_due_at >= before - timedelta(seconds=1)
    gone = Analysis.objects.get(namespace=namespace, name="watched")
    assert gone.deleted_at is not None and gone.next_due_at is None


def _wait_served(client: kube.KubeClient, namespace: str) -> None:
    """Wait until analyses can be listed again after a restart.

    The real kube-apiserver answers /readyz before its watch cache for a CRD has loaded:
    for a moment a list or watch of analyses is 429 "storage is (re)initializing". The product
    retries that (``Unavailable``); this test wants to look at the answer that comes after.
    """

    def served() -> bool:
        try:
            client.request("GET", kube.analyses_path(namespace))
        except kube.Unavailable:
            return False
        return True

    wait_until(served, timeout=20, interval=0.1, what="analyses served after the restart")


@pytest.mark.django_db(transaction=True)
def test_watch_relists_after_gone_and_survives_an_outage(
    restartable_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    own_cluster = restartable_cluster
    client = kube.KubeClient(kube.load_api_client(str(own_cluster.kubeconfig)), timeout=3)
    team = unique_name("team")
    client.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}},
    )
    _create(client, team, "listed")
    # Watching the one namespace: on the real cluster (the session's), others hold analyses too.
    watch = AnalysisWatch(client, namespace=team, now=lambda: datetime.now(UTC), watch_timeout=2)
    watch.relist()
    # The operator's cache of the namespace's Deployments (sentinel_cluster.informer) through
    # the same two restarts: no database, so it runs in a thread of its own from here on.
    client.request(
        "POST", kube.workloads_path("Deployment", team), body=deployment_manifest("web", team)
    )
    deployments = Informer(
        kube.KubeClient(kube.load_api_client(str(own_cluster.kubeconfig)), timeout=3),
        f"/apis/apps/v1/namespaces/{team}/deployments",
        transform=strip_workload,
        watch_timeout=2,
    )
    cache_stop = threading.Event()
    cache_thread = threading.Thread(target=deployments.run, args=(cache_stop,))
    cache_thread.start()
    wait_until(lambda: deployments.get(team, "web") is not None, timeout=10)
    # Changed while nobody watched, then the restart drops the watch history: resuming from
    # the old resourceVersion is 410 Gone, and only a relist can find "missed".
    _create(client, team, "missed")
    own_cluster.restart()
    _wait_served(client, team)
    with pytest.raises(kube.Gone):
        watch.watch_once(threading.Event())

    # The test thread stays off the database while the watch runs: the in-memory test
    # database's shared cache reports "table is locked" instead of waiting.
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,))
    thread.start()
    try:
        wait_until(lambda: watch.lists == 2, timeout=10)
        seen = watch.events
        # An outage while watching: the watch backs off, comes back, and loses nothing. It
        # resumes where it was on devcluster; the real kube-apiserver's watch cache starts
        # after the restart at a newer resourceVersion (its own and the controllers' writes),
        # so there the resume is 410 Gone and one more relist finds "after".
        own_cluster.restart()
        _wait_served(client, team)
        _create(client, team, "after")
        wait_until(lambda: watch.events > seen or watch.lists > 2, timeout=15)
        client.request(
            "POST",
            kube.workloads_path("Deployment", team),
            body=deployment_manifest("later", team),
        )
        wait_until(lambda: deployments.get(team, "later") is not None and deployments.live, 20)
    finally:
        stop.set()
        cache_stop.set()
        thread.join(10)
        cache_thread.join(10)
    assert not thread.is_alive()
    assert watch.lists in (2, 3)
    # The cache was told 410 Gone when it resumed after a restart, and listed again: both
    # Deployments in it, stripped to what the operator reads.
    gone = f"cache {deployments.path}: resourceVersion "
    assert any(
        gone in r.message and r.message.endswith("is gone; relisting") for r in caplog.records
    )
    assert deployments.lists >= 2
    later = deployments.get(team, "later")
    assert later is not None and "template" not in later["spec"] and TEMPLATE_HASH in later
    assert "managedFields" not in later["metadata"]
    live = Analysis.objects.filter(deleted_at__isnull=True)
    assert sorted(live.values_list("name", flat=True)) == ["after", "listed", "missed"]
    delete_namespace(client, team)


@pytest.mark.django_db
def test_full_resync_repairs_what_the_watch_missed(
    kube_client: kube.KubeClient, namespace: str, settings: Any
) -> None:
    settings.SENTINEL = dataclasses.replace(settings.SENTINEL, namespaces=(namespace,))
    _create(kube_client, namespace, "kept")
    _create(kube_client, namespace, "removed")
    tasks.resync_task(kube_client)
    kube_client.request("DELETE", kube.analysis_path(namespace, "removed"))
    _create(kube_client, namespace, "added")
    tasks.resync_task(kube_client)
    live = Analysis.objects.filter(namespace=namespace, deleted_at__isnull=True)
    assert sorted(live.values_list("name", flat=True)) == ["added", "kept"]
    assert Analysis.objects.get(namespace=namespace, name="removed").next_due_at is None


@pytest.mark.django_db
def test_pruning_keeps_the_retention(settings: Any) -> None:
    settings.SENTINEL = dataclasses.replace(settings.SENTINEL, history_retention_seconds=3600)
    row = _row("pruned", None)
    for age in (timedelta(hours=2), timedelta(minutes=30)):
        Evaluation.objects.create(
            analysis=row, started_at=NOW - age, finished_at=NOW - age, outcome="Pass"
        )
    assert tasks.prune_task(now=NOW) == 1
    assert [e.started_at for e in Evaluation.objects.all()] == [NOW - timedelta(minutes=30)]


@pytest.mark.django_db
def test_the_schedules_of_older_versions_are_dropped_and_no_other_row() -> None:
    from django_q.models import Schedule

    for name in (tasks.RESYNC_SCHEDULE, tasks.PRUNE_SCHEDULE, "someone-elses"):
        Schedule.objects.create(name=name, func="sentinel_operator.tasks.prune_task")
    tasks.drop_schedules()
    tasks.drop_schedules()
    assert list(Schedule.objects.values_list("name", flat=True)) == ["someone-elses"]
