"""django-q2 task functions: the batched reconcile and the coarse periodic jobs.

The dispatcher queues ``reconcile_batch_task`` with the analyses a worker is to reconcile, each
at its due time (``reconcile_one`` each); the leader queues ``resync_task`` and ``prune_task``
every few minutes (``sentinel_operator.periodic``). Tasks run in django-q2 worker processes, so
each process builds its own Kubernetes and Prometheus clients on first use (never inherited
across a fork): Kubernetes from ``KUBECONFIG`` or the in-cluster config, Prometheus from
``settings.SENTINEL`` only.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from analyses import due, mirror
from notifications import store as notifications
from sentinel_cluster import kube
from sentinel_cluster.informer import Snapshot
from sentinel_core.measurement import Measurement
from sentinel_operator import lifeline
from sentinel_operator.metrics import operator_metrics, provider_metrics
from sentinel_operator.outcome import Result, result
from sentinel_operator.providers import Providers
from sentinel_operator.reconcile import Reconciler

log = logging.getLogger(__name__)

BATCH_TASK = "sentinel_operator.tasks.reconcile_batch_task"
RESYNC_TASK = "sentinel_operator.tasks.resync_task"
PRUNE_TASK = "sentinel_operator.tasks.prune_task"
# The django-q2 schedules older versions ran these with (dropped at start: tasks.drop_schedules).
RESYNC_SCHEDULE = "sentinel-full-resync"
PRUNE_SCHEDULE = "sentinel-prune-history"
# A full resync repairs anything the watch missed; the watch itself keeps the mirror current.
RESYNC_MINUTES = 5
PRUNE_MINUTES = 60
# What reconcile_one returns for a namespace outside SENTINEL_NAMESPACES.
OUT_OF_SCOPE = "out_of_scope"
# What reconcile_batch_task returns for a member it gave back unstarted.
RELEASED = "released"

_lock = threading.Lock()
_reconciler: tuple[int, Reconciler] | None = None


def _count_request(measurement: Measurement) -> None:
    metrics = operator_metrics()
    metrics.prometheus_requests.inc()
    if measurement.error is not None:
        metrics.prometheus_errors.labels(measurement.error.value).inc()


def _count_provider_request(provider: str, code: str, seconds: float) -> None:
    metrics = provider_metrics()
    metrics.requests.labels(provider, code).inc()
    metrics.latency.labels(provider).observe(seconds)


def build_reconciler(client: kube.KubeClient | None = None) -> Reconciler:
    """Return a reconciler with the configured Prometheus and the process's Kubernetes client."""
    config = settings.SENTINEL
    if client is None:
        client = kube.KubeClient(kube.load_api_client(os.environ.get("KUBECONFIG") or None))
    providers = Providers(
        path=config.providers_file,
        default_url=config.prometheus_url,
        default_token=config.prometheus_token,
        timeout=config.prometheus_timeout,
        max_bytes=config.prometheus_max_bytes,
        on_request=_count_request,
        on_response=_count_provider_request,
        on_reload_failure=provider_metrics().reload_failures.inc,
    )
    instance = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    return Reconciler(client, providers, instance=instance)


def reconciler() -> Reconciler:
    """Return this process's reconciler, built on first use (and again after a fork)."""
    global _reconciler
    with _lock:
        if _reconciler is None or _reconciler[0] != os.getpid():
            _reconciler = (os.getpid(), build_reconciler())
        return _reconciler[1]


def reconcile_one(
    namespace: str,
    name: str,
    due_at: str | None = None,
    uid: str | None = None,
    cached: Snapshot | None = None,
) -> str:
    """Reconcile one member of a batch; ``due_at`` (ISO 8601) is when the dispatcher found it due.

    ``uid`` is the incarnation the dispatcher found due (None: whichever the API server holds);
    ``cached`` what the operator's caches held for it (docs/architecture.md#reads-from-caches).
    """
    scope = settings.SENTINEL.namespaces
    if scope and namespace not in scope:
        # The dispatcher never queues these; a member that arrives all the same (a queue entry
        # from before a scope change, a row written by hand) must not read, measure or pause
        # anything there.
        log.warning("reconcile %s/%s refused: outside SENTINEL_NAMESPACES", namespace, name)
        return OUT_OF_SCOPE
    due = datetime.fromisoformat(due_at) if due_at else None
    try:
        current = reconciler()
    except kube.KubeError as exc:
        # Each worker builds its client on first use; a kubeconfig that cannot be read now (a
        # file being replaced, a mount not there yet) is one clear line, not a traceback. The
        # claim is kept, so the analysis is due again when it runs out
        # (docs/operator.md#due-time-dispatch).
        log.error(
            "reconcile %s/%s not started: %s; retried when its claim runs out", namespace, name, exc
        )
        return Result.ERROR.value
    return result(current.reconcile(namespace, name, due_at=due, uid=uid, cached=cached)).value


@lifeline.hands_back
def reconcile_batch_task(members: Sequence[Sequence[str]], claimed_until: str) -> list[str]:
    """Reconcile each of ``members`` at its due time, in order; return each one's result.

    A member is ``(namespace, name, uid, due_at)`` (ISO 8601) and, from a dispatcher with
    caches, what they held for it (``informer.Snapshot``, or None), claimed by the dispatcher until
    ``claimed_until`` and up to ``SENTINEL_DISPATCH_AHEAD`` before its due time
    (docs/operator.md#due-time-dispatch). Each keeps its own attempt, outcome transaction and
    backoff: one member's failure is logged and the next one runs. The batch shares django-q2's
    time limit, so once half of it is used the members not started yet are given back, due at
    once, for another worker, rather than risk being killed with the task and wait for their
    claims to run out. A member whose claim would run out before the task's time limit is given
    back too, never started: the dispatcher may hand it to another task then, and two attempts
    at once would be two outcomes for one due time (docs/operator.md#claims). That is every
    member of a task that waited in the queue for half the claim, and of one the ORM broker
    delivers again after its worker died. And once the operator that forked this worker has
    died (``lifeline``), no member starts: they are given back for the next leader.
    """
    started = time.monotonic()
    limit = settings.Q_CLUSTER.get("timeout") or 60
    until = datetime.fromisoformat(claimed_until)
    results: list[str] = []
    for index, (namespace, name, uid, due_at, *cached) in enumerate(members):
        due_time = datetime.fromisoformat(due_at)
        late = time.monotonic() - started > limit / 2
        if late or (until - max(due_time, datetime.now(UTC))).total_seconds() < limit:
            why = (
                f"past half its time limit ({limit / 2:.0f} s)"
                if late
                else f"with claims running out within its time limit ({limit} s)"
            )
            return results + _give_back(members[index:], until, why)
        _wait_for(due_time)
        if lifeline.operator_gone():
            # An orphan starts no evaluation (docs/architecture.md#processes-and-threads).
            return results + _give_back(members[index:], until, "after its operator died")
        try:
            snapshot = cached[0] if cached and isinstance(cached[0], dict) else None
            results.append(reconcile_one(namespace, name, due_at, uid, snapshot))
        except Exception:
            # The reconciler turns every failure it knows into an outcome; this one is a bug,
            # logged with its traceback. The analysis keeps its claim; its neighbours still run.
            log.exception("reconcile %s/%s failed; the rest of its batch goes on", namespace, name)
            results.append(Result.ERROR.value)
    return results


def _give_back(left: Sequence[Sequence[str]], until: datetime, why: str) -> list[str]:
    """Make ``left`` due again at its due times (``due.release``); return their results."""
    given_back = due.release(
        [(member[2], datetime.fromisoformat(member[3])) for member in left], until
    )
    # given_back < len(left): the rest moved on meanwhile (claimed again, rescheduled).
    log.warning(
        "reconcile batch %s: %d analyses not started, %d of them given back",
        why,
        len(left),
        given_back,
    )
    return [RELEASED] * len(left)


def _wait_for(due_at: datetime) -> None:
    # On a clock, not a condition: the member was claimed ahead and must never start early.
    while (left := (due_at - datetime.now(UTC)).total_seconds()) > 0:
        time.sleep(left)


def resync_task(client: kube.KubeClient | None = None) -> str:
    """List every RolloutAnalysis and repair the mirror (``analyses.mirror.sync_all``)."""
    client = client or reconciler().client
    namespaces = tuple(settings.SENTINEL.namespaces)
    listed_at = timezone.now()
    items: list[dict[str, object]] = []
    for namespace in namespaces or (None,):
        items.extend(client.list_all(kube.analyses_path(namespace))[0])
    result = mirror.sync_all(items, listed_at=listed_at, namespaces=namespaces or None)
    log.info("full resync: %s", result)
    return str(result)


def prune_task(now: datetime | None = None) -> int:
    """Delete history older than ``SENTINEL_HISTORY_RETENTION``."""
    retention = timedelta(seconds=settings.SENTINEL.history_retention_seconds)
    cutoff = (now or datetime.now(UTC)) - retention
    removed = mirror.prune_history(cutoff)
    # Notifications are history too, kept as long.
    deliveries = notifications.prune(cutoff)
    log.info(
        "pruned %d history rows and %d notifications older than %s", removed, deliveries, retention
    )
    return removed


def drop_schedules() -> None:
    """Delete the django-q2 schedules older versions created for the periodic jobs.

    django-q2's scheduler is off (``sentinel_operator.periodic`` queues those jobs), so the rows
    would only be listed in the admin as if they still ran.
    """
    from django_q.models import Schedule

    Schedule.objects.filter(name__in=(RESYNC_SCHEDULE, PRUNE_SCHEDULE)).delete()
