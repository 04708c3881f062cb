"""Keep the database mirror of RolloutAnalysis resources in step with the cluster.

The operator's watch calls ``upsert_from_resource`` for ADDED and MODIFIED events and
``mark_deleted`` for DELETED ones; the periodic full resync calls ``sync_all`` with a fresh
list; a django-q2 schedule calls ``prune_history``; the UI and API services call
``upsert_from_resource`` with the API server's answer to their writes. Objects are the API
server's JSON as dicts (what ``CustomObjectsApi`` and watch events return).

Every write is one short transaction. With SQLite, the embedded default, a transaction holds the
database's only write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``, so the checks that find
nothing to do run outside any transaction, and long jobs (pruning) commit in batches.

The API server accepts more than the mirror's columns hold (a condition reason of 1,024
characters in a 64-character column), so descriptive columns are truncated to their size; and
one object the mirror cannot hold is logged and skipped by ``sync_all``, never allowed to fail
the whole list (the watch relists after a failed sync, and would relist forever).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from django.db import DataError, IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from analyses import due
from analyses.models import Analysis, AnalysisMetric, Evaluation
from sentinel_core.conditions import ConditionType
from sentinel_core.resource import AnalysisResource, MalformedResource
from sentinel_core.spec import MetricSpec
from sentinel_core.values import parse_time
from sentinel_db import sql

log = logging.getLogger(__name__)

# What one object the mirror cannot hold raises: metadata missing or too long (ValueError,
# MalformedResource), a number beyond the column (OverflowError on SQLite, DataError elsewhere).
UNMIRRORABLE = (ValueError, OverflowError, DataError)

# Rows per pruning transaction: small enough that other writers wait milliseconds, not seconds.
_PRUNE_BATCH = 500


@dataclass(frozen=True)
class SyncResult:
    """What one full resync changed."""

    created: int
    updated: int
    unchanged: int
    # Rows that were live in the mirror but absent from the list.
    deleted: int
    # Listed objects not mirrored: unreadable, unmirrorable, or outside ``namespaces``.
    skipped: int = 0


class _Change(Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    # The list was older than what the mirror already holds (see ``sync_all``).
    STALE = "stale"


# Identity columns are never truncated: two objects must not collapse into one row. The API
# server keeps them within these sizes anyway; an object beyond them is refused.
_IDENTITY = ("uid", "namespace", "name")


def _limit(column: str) -> int | None:
    field = Analysis._meta.get_field(column)
    return field.max_length if isinstance(field, models.CharField) else None


def _check_identity(resource: AnalysisResource) -> None:
    for column in _IDENTITY:
        value, most = str(getattr(resource, column)), _limit(column)
        if most is not None and len(value) > most:
            raise MalformedResource(f"metadata {column} is longer than {most} characters")


def _fit(column: str, value: Any) -> Any:
    """Return ``value`` cut to the column's size (a reason of 1,024 characters fits 64)."""
    most = _limit(column)
    if most is not None and isinstance(value, str) and len(value) > most:
        return value[:most]
    return value


def _columns(resource: AnalysisResource) -> dict[str, Any]:
    """Return the values to store on the row (uid and created_at excluded), cut to size."""
    return {column: _fit(column, value) for column, value in _raw_columns(resource).items()}


def _raw_columns(resource: AnalysisResource) -> dict[str, Any]:
    summary, status = resource.summary, resource.status
    ready = status.condition(ConditionType.READY)
    return {
        "namespace": resource.namespace,
        "name": resource.name,
        "resource_version": resource.resource_version,
        "generation": resource.generation,
        "spec": resource.raw_spec,
        "status": resource.raw_status,
        "target_name": summary.target_name,
        "interval_seconds": summary.interval_seconds,
        "failure_limit": summary.failure_limit,
        "failure_window": summary.failure_window,
        "dry_run": summary.dry_run,
        "last_verdict": str(status.last_verdict or ""),
        "failures": status.failures,
        "paused": resource.paused,
        "ready": status.is_true(ConditionType.READY),
        "ready_reason": str(ready.reason) if ready is not None else "",
        "last_evaluation_at": status.last_evaluation_time,
        "observed_generation": status.observed_generation,
    }


def upsert_from_resource(
    obj: Mapping[str, Any], *, now: datetime | None = None
) -> tuple[Analysis, bool]:
    """Mirror ``obj``; return its row and whether anything was written.

    The same ``resourceVersion`` again writes nothing. A new row, a spec change (new
    ``generation``) or a row brought back from deleted becomes due at ``now``, so the operator
    evaluates it at once; status-only changes (the operator's own writes) leave the schedule
    alone. Another live row under the same namespace/name but with a different uid is an earlier
    incarnation whose DELETED event was missed: it is marked deleted and keeps its history.
    Raise ``MalformedResource`` when metadata is missing or longer than its column.
    """
    return upsert(AnalysisResource.read(obj), now=now, resolved=False)


def upsert(
    resource: AnalysisResource, *, now: datetime | None = None, resolved: bool = True
) -> tuple[Analysis, bool]:
    """Mirror an object already read (the reconciler's, its templates resolved; ``resolved``
    False: as the API server keeps it); as ``upsert_from_resource`` otherwise."""
    row, change = _upsert(resource, now=now or timezone.now(), listed_at=None, resolved=resolved)
    assert row is not None  # only a resync with ``listed_at`` can skip a row
    return row, change in (_Change.CREATED, _Change.UPDATED)


# What an analysis's templates may give it when it sets none (docs/templates.md): the
# reconciler's resolved spec has them, an object as the API server keeps it does not. So only
# the reconciler sets them for an analysis that names templates; the watch, a resync and the web
# app's writes keep the row's (a new row starts from the product's defaults until its first
# evaluation, at once).
_RESOLVED_COLUMNS = ("interval_seconds", "failure_limit", "failure_window")

# The columns a status write changes; what ``refresh_status`` sets from the API server's answer.
# With them the resolved columns: a template's edit changes them with no new generation.
_STATUS_COLUMNS = (
    "resource_version",
    "status",
    "last_verdict",
    "failures",
    "paused",
    "ready",
    "ready_reason",
    "last_evaluation_at",
    "observed_generation",
    *_RESOLVED_COLUMNS,
)


def refresh_status(
    resource: AnalysisResource, *, now: datetime, scheduled: Mapping[str, Any]
) -> int | None:
    """Mirror the operator's own status write and the next due time in ONE UPDATE; return the pk.

    The hot path of every evaluation (docs/performance.md, "Bookkeeping as plain SQL"): one
    statement, no model instance. It writes only what a status write changes, so it applies
    only to the live row of the same uid and ``generation`` (spec and target are then the row's
    already; the interval and the failure limit too, unless templates gave them); anything
    else (no row yet, a deleted one, a spec changed meanwhile) returns None and the caller
    takes ``upsert``, which judges those cases. The ``generation`` guard is
    ``due.reschedule``'s: a row the watch made due at once for a newer spec keeps that.
    ``scheduled`` is the due columns ``due.rescheduled`` names.
    """
    columns = _columns(resource)
    assignments = {column: columns[column] for column in _STATUS_COLUMNS}
    assignments["mirrored_at"] = now
    assignments.update(scheduled)
    where = {"uid": resource.uid, "generation": resource.generation}
    found = sql.update_returning(Analysis, assignments, where, null=("deleted_at",))
    return int(found) if found is not None else None


def watch_can_skip(obj: Mapping[str, Any]) -> bool:
    """Whether a watch event's object needs no mirror write; read from the raw object, cheaply.

    Two cases: the row already holds this ``resourceVersion``; or the object is the live row
    plus an evaluation newer than the row's. Only the operator's status write sets
    ``lastEvaluationTime`` (the same ``generation``: a status write changes nothing else), and
    the worker that wrote it mirrors the answer in its own bookkeeping transaction; the watch
    writing it too, when its event came first, was one more write transaction per evaluation.
    A worker that dies in between leaves the row to the next reconcile's read. Anything odd
    (no uid, a generation that is not a number) is not skipped: ``upsert_from_resource``
    judges it.
    """
    meta = obj.get("metadata") or {}
    uid, version, generation = meta.get("uid"), meta.get("resourceVersion"), meta.get("generation")
    if not isinstance(uid, str) or not isinstance(version, str):
        return False
    found = sql.select_one(Analysis, _SKIP_COLUMNS, "uid", uid)
    if found is None or found.deleted_at is not None:
        return False
    if found.resource_version == version:
        return True
    evaluated = parse_time((obj.get("status") or {}).get("lastEvaluationTime"))
    if not (
        isinstance(generation, int) and generation == found.generation and evaluated is not None
    ):
        return False
    last_evaluation = sql.from_db(Analysis, "last_evaluation_at", found.last_evaluation_at)
    return last_evaluation is None or evaluated > last_evaluation


def adds_an_evaluation(previous: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is the watch's last copy of it, ``previous``, plus a newer evaluation.

    The watch asks this before ``watch_can_skip``, and needs no read for it: ``previous`` was
    mirrored when the watch saw it (written, or left to the worker that wrote it), so an object
    with the same metadata but its ``resourceVersion`` (same uid, same ``generation``, labels
    and annotations) and a newer ``lastEvaluationTime`` is the operator's own status write, and
    its worker mirrors it. Anything else, also an object the watch holds no copy of, is for
    ``watch_can_skip`` to judge.
    """
    if previous is None:
        return False
    before = previous.get("metadata") or {}
    meta = obj.get("metadata") or {}
    if not isinstance(meta.get("uid"), str) or not isinstance(meta.get("generation"), int):
        return False
    if _identity(meta) != _identity(before):
        return False
    evaluated = parse_time((obj.get("status") or {}).get("lastEvaluationTime"))
    last = parse_time((previous.get("status") or {}).get("lastEvaluationTime"))
    return evaluated is not None and (last is None or evaluated > last)


def _identity(meta: Mapping[str, Any]) -> dict[str, Any]:
    # What a status write never changes; managedFields are not kept in the watch's copy.
    return {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields")}


# What ``watch_can_skip`` reads: one SELECT by uid (plain SQL, ``sentinel_db.sql``: the ORM's
# compilation of this read cost more than the read, once per watch event, and every status
# write comes back as one; docs/performance.md, "Cuts 7 and 8").
_SKIP_COLUMNS = ("resource_version", "deleted_at", "generation", "last_evaluation_at")


def mark_deleted(namespace: str, name: str, uid: str, *, now: datetime | None = None) -> None:
    """Mark the live row of the deleted resource; keep it and its history for the retention.

    Clearing ``next_due_at`` drops it from the dispatch queue at once
    (docs/operator.md#deleted-analysis). Only the row of ``uid`` is marked, never another one
    under the same name: an analysis deleted and created again is a new incarnation whose
    watch event may arrive before the old one's delete is recorded, and marking it would drop
    its evaluations until the next resync. An empty ``uid`` marks nothing.
    """
    if not uid:
        return
    rows = Analysis.objects.live().filter(namespace=namespace, name=name, uid=uid)
    # A single UPDATE statement is its own short transaction.
    due.mark_deleted(rows, now or timezone.now())


def live_uid(namespace: str, name: str) -> str:
    """Return the uid of the live row named ``namespace/name``; "" when there is none."""
    found = Analysis.objects.live().filter(namespace=namespace, name=name).order_by()
    return next(iter(found.values_list("uid", flat=True)[:1]), "")


def sync_all(
    objects: Iterable[Mapping[str, Any]],
    *,
    listed_at: datetime,
    namespaces: Iterable[str] | None = None,
    now: datetime | None = None,
) -> SyncResult:
    """Upsert every listed object and mark deleted the live rows the list does not contain.

    ``listed_at`` is when the list request was sent. The watch keeps writing while a resync
    runs; a row it wrote (or marked deleted) after ``listed_at`` is newer than the list, so the
    list neither overwrites, revives nor deletes it. ``namespaces`` (``SENTINEL_NAMESPACES``;
    None means all) bounds it: objects in other namespaces are never mirrored, rows in other
    namespaces never deleted.

    Each object is mirrored on its own: one that cannot be (metadata missing, a number beyond
    its column) is logged and skipped, and its existing row is kept, not marked deleted.
    """
    at = now or timezone.now()
    scope = None if namespaces is None else frozenset(namespaces)
    counts = dict.fromkeys(_Change, 0)
    skipped = 0
    seen: set[str] = set()
    # Most listed objects are what their live row already holds (the workers mirror their own
    # status writes): told by uid and resourceVersion from one read of every live row, without
    # parsing the object or reading its row. At 4,000 analyses the resync took 7 s of a worker
    # that way, a burst of dispatch lag every five minutes (docs/performance.md). Anything
    # else takes ``_upsert``, which reads its row again, under the write lock when it writes.
    held = dict(Analysis.objects.live().values_list("uid", "resource_version"))
    for obj in objects:
        uid = _held_as_listed(obj, held, scope)
        if uid is not None:
            seen.add(uid)
            counts[_Change.UNCHANGED] += 1
            continue
        try:
            resource = AnalysisResource.read(obj)
        except MalformedResource as exc:
            log.warning("mirror: skipped an unreadable listed object: %s", exc)
            skipped += 1
            continue
        if scope is not None and resource.namespace not in scope:
            log.warning(
                "mirror: skipped %s/%s: outside SENTINEL_NAMESPACES",
                resource.namespace,
                resource.name,
            )
            skipped += 1
            continue
        seen.add(resource.uid)
        try:
            _, change = _upsert(resource, now=at, listed_at=listed_at, resolved=False)
        except UNMIRRORABLE as exc:
            log.warning("mirror: skipped %s/%s: %s", resource.namespace, resource.name, exc)
            skipped += 1
            continue
        counts[change] += 1

    live = Analysis.objects.live()
    if scope is not None:
        live = live.filter(namespace__in=list(scope))
    missing = [
        pk
        for pk, uid, mirrored_at in live.values_list("pk", "uid", "mirrored_at")
        if uid not in seen and (mirrored_at is None or mirrored_at <= listed_at)
    ]
    deleted = 0
    for start in range(0, len(missing), _PRUNE_BATCH):
        # Checked again in the UPDATE: the watch may have written a row since it was read.
        deleted += due.mark_deleted(
            Analysis.objects.filter(pk__in=missing[start : start + _PRUNE_BATCH])
            .filter(deleted_at__isnull=True)
            .filter(Q(mirrored_at__isnull=True) | Q(mirrored_at__lte=listed_at)),
            at,
        )
    return SyncResult(
        created=counts[_Change.CREATED],
        updated=counts[_Change.UPDATED],
        unchanged=counts[_Change.UNCHANGED] + counts[_Change.STALE],
        deleted=deleted,
        skipped=skipped,
    )


def _held_as_listed(
    obj: Mapping[str, Any], held: Mapping[str, str], scope: frozenset[str] | None
) -> str | None:
    """Return the uid of ``obj`` when its live row holds this very ``resourceVersion``."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if not isinstance(uid, str) or not isinstance(version, str) or held.get(uid) != version:
        return None
    if scope is not None and meta.get("namespace") not in scope:
        return None
    return uid


def prune_history(older_than: datetime) -> int:
    """Delete evaluations started before ``older_than`` and analyses deleted before it.

    Return how many evaluations and analyses were removed (their metric results and metric rows
    go with them). Works in batches, each its own transaction, so a large backlog never holds
    the write lock for long.
    """
    removed = 0
    # The deletes cascade to MetricResult / AnalysisMetric rows in the same transaction.
    while batch := list(
        Evaluation.objects.filter(started_at__lt=older_than)
        .order_by()
        .values_list("pk", flat=True)[:_PRUNE_BATCH]
    ):
        with transaction.atomic():
            _, per_model = Evaluation.objects.filter(pk__in=batch).only("pk").delete()
        removed += per_model.get(Evaluation._meta.label, 0)
    while batch := list(
        Analysis.objects.filter(deleted_at__lt=older_than)
        .order_by()
        .values_list("pk", flat=True)[:_PRUNE_BATCH]
    ):
        with transaction.atomic():
            _, per_model = Analysis.objects.filter(pk__in=batch).only("pk").delete()
        # Evaluations recorded after the cutoff by a reconcile racing the deletion count too.
        removed += per_model.get(Analysis._meta.label, 0) + per_model.get(Evaluation._meta.label, 0)
    return removed


def _upsert(
    resource: AnalysisResource,
    *,
    now: datetime,
    listed_at: datetime | None,
    raced: bool = False,
    resolved: bool = True,
) -> tuple[Analysis | None, _Change]:
    _check_identity(resource)
    # Inside the caller's transaction (the operator's bookkeeping) this first read already holds
    # the row (SQLite: the write lock since BEGIN IMMEDIATE; PostgreSQL: FOR UPDATE), so it is
    # not read twice. uid is unique: no ORDER BY, whose compilation cost more than the query.
    locked = transaction.get_connection().in_atomic_block
    by_uid = Analysis.objects.filter(uid=resource.uid).order_by()
    existing = _one(by_uid.select_for_update() if locked else by_uid)
    if _unchanged(existing, resource):
        return existing, _Change.UNCHANGED
    with transaction.atomic():
        # Else read again under the write lock: another process may have written meanwhile.
        row = existing if locked else _one(by_uid.select_for_update())
        if _unchanged(row, resource):
            return row, _Change.UNCHANGED
        others = (
            Analysis.objects.live()
            .filter(namespace=resource.namespace, name=resource.name)
            .exclude(uid=resource.uid)
        )
        if listed_at is not None and (
            (row is not None and _touched_after(row, listed_at))
            or others.filter(mirrored_at__gt=listed_at).exists()
        ):
            return row, _Change.STALE
        if row is None or row.deleted_at is not None:
            # Only a row that becomes live can meet an earlier incarnation: a live row already
            # marked it when it did. Skipped, it is one UPDATE less per evaluation.
            due.mark_deleted(others, now)

        change = _Change.UPDATED
        spec_changed = True
        if row is None:
            change = _Change.CREATED
            row = Analysis(uid=resource.uid)
            due.due_now(row, now, revived=False)
        else:
            spec_changed = row.spec != resource.raw_spec
            if row.deleted_at is not None or row.generation != resource.generation:
                due.due_now(row, now, revived=row.deleted_at is not None)
        columns = _columns(resource)
        if not resolved and change != _Change.CREATED and "templates" in resource.raw_spec:
            for column in _RESOLVED_COLUMNS:
                del columns[column]
        for column, value in columns.items():
            setattr(row, column, value)
        row.created_at = resource.created_at or row.created_at or now
        row.deleted_at = None
        row.mirrored_at = now
        if change != _Change.CREATED or raced:
            row.save()
        else:
            try:
                with transaction.atomic():
                    row.save()
            except IntegrityError:
                # Another process inserted this uid since the read above (the watch's relist
                # beside a resync task, or the web app's write beside the watch: on PostgreSQL
                # the insert waited for it, then met the unique uid). Its row is committed now:
                # mirror onto it, as if it had been there when this one read.
                return _upsert(
                    resource, now=now, listed_at=listed_at, raced=True, resolved=resolved
                )
        if spec_changed:
            _sync_metrics(row, resource.summary.metrics)
    return row, change


def _one(rows: models.QuerySet[Analysis]) -> Analysis | None:
    found = list(rows[:1])
    return found[0] if found else None


def _unchanged(row: Analysis | None, resource: AnalysisResource) -> bool:
    return (
        row is not None
        and row.deleted_at is None
        and row.resource_version == resource.resource_version
    )


def _touched_after(row: Analysis, moment: datetime) -> bool:
    stamps = [stamp for stamp in (row.mirrored_at, row.deleted_at) if stamp is not None]
    return any(stamp > moment for stamp in stamps)


def _metric_columns(metric: MetricSpec) -> dict[str, Any]:
    """Return the ``AnalysisMetric`` columns of one parsed metric (its position aside)."""
    increase, baseline, guard = metric.max_increase, metric.baseline, metric.min_samples
    return {
        "query": metric.query,
        "max_value": metric.max_value,
        "max_increase_percent": increase.percent if increase is not None else None,
        "max_increase_absolute": increase.absolute if increase is not None else None,
        "baseline_offset": (baseline.offset or "") if baseline is not None else "",
        "baseline_before_rollout": baseline.before_rollout if baseline is not None else False,
        "min_samples_query": guard.query if guard is not None else "",
        "min_samples_min": guard.min if guard is not None else None,
        "compare": metric.compare.to_dict() if metric.compare is not None else {},
        "sequential": metric.sequential.to_dict() if metric.sequential is not None else {},
    }


def _sync_metrics(row: Analysis, metrics: tuple[MetricSpec, ...]) -> None:
    wanted = {metric.name: _metric_columns(metric) for metric in metrics}
    existing = {metric.name: metric for metric in row.metrics.all()}
    stale = [metric.pk for name, metric in existing.items() if name not in wanted]
    if stale:
        AnalysisMetric.objects.filter(pk__in=stale).delete()
    for position, (name, columns) in enumerate(wanted.items()):
        columns = {"position": position, **columns}
        metric = existing.get(name)
        if metric is None:
            AnalysisMetric.objects.create(analysis=row, name=name, **columns)
            continue
        changed = [field for field, value in columns.items() if getattr(metric, field) != value]
        if changed:
            for field in changed:
                setattr(metric, field, columns[field])
            metric.save(update_fields=changed)
