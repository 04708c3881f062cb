"""Keep the database mirror of RolloutAnalysis resources in step with the cluster.

The operator's watch calls ``upsert_from_resource`` for ADDED and MODIFIED events and
``mark_deleted`` for DELETED ones; the periodic full resync calls ``sync_all`` with a fresh
list; a django-q2 schedule calls ``prune_history``; the UI and API services call
``upsert_from_resource`` with the API server's answer to their writes. Objects are the API
server's JSON as dicts (what ``CustomObjectsApi`` and watch events return).

Every write is one short transaction. With SQLite, the embedded default, a transaction holds the
database's only write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``, so the checks that find
nothing to do run outside any transaction, and long jobs (pruning) commit in batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from analyses.models import Analysis, AnalysisMetric, Evaluation
from sentinel_core.conditions import ConditionStatus, ConditionType, Verdict
from sentinel_core.spec import DEFAULT_FAILURE_LIMIT, DEFAULT_INTERVAL, parse_duration

# Defaults the CRD applies; used only for objects that bypassed it (never in practice).
_DEFAULT_INTERVAL_SECONDS = parse_duration(DEFAULT_INTERVAL)
# Rows per pruning transaction: small enough that other writers wait milliseconds, not seconds.
_PRUNE_BATCH = 500
_VERDICTS = frozenset(Verdict)


class MalformedResource(ValueError):
    """The object lacks the metadata a mirror row needs (namespace, name or uid)."""


@dataclass(frozen=True)
class SyncResult:
    """What one full resync changed."""

    created: int
    updated: int
    unchanged: int
    # Rows that were live in the mirror but absent from the list.
    deleted: int


class _Change(Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    # The list was older than what the mirror already holds (see ``sync_all``).
    STALE = "stale"


@dataclass(frozen=True)
class _Resource:
    """The columns of an ``Analysis`` row, read from one object."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    created_at: datetime | None
    spec: dict[str, Any]
    status: dict[str, Any]
    target_name: str
    interval_seconds: float
    failure_limit: int
    dry_run: bool
    last_verdict: str
    failures: int
    paused: bool
    ready: bool
    ready_reason: str
    last_evaluation_at: datetime | None
    observed_generation: int | None

    def columns(self) -> dict[str, Any]:
        """Return the values to store on the row (uid and created_at excluded)."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "resource_version": self.resource_version,
            "generation": self.generation,
            "spec": self.spec,
            "status": self.status,
            "target_name": self.target_name,
            "interval_seconds": self.interval_seconds,
            "failure_limit": self.failure_limit,
            "dry_run": self.dry_run,
            "last_verdict": self.last_verdict,
            "failures": self.failures,
            "paused": self.paused,
            "ready": self.ready,
            "ready_reason": self.ready_reason,
            "last_evaluation_at": self.last_evaluation_at,
            "observed_generation": self.observed_generation,
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
    Raise ``MalformedResource`` when metadata is missing.
    """
    row, change = _upsert(_read(obj), now=now or timezone.now(), listed_at=None)
    assert row is not None  # only a resync with ``listed_at`` can skip a row
    return row, change in (_Change.CREATED, _Change.UPDATED)


def mark_deleted(namespace: str, name: str, uid: str, *, now: datetime | None = None) -> None:
    """Mark the live row of the deleted resource; keep it and its history for the retention.

    Clearing ``next_due_at`` drops it from the dispatch queue at once (SPEC §5). An empty ``uid``
    (a delete seen without the object) matches whichever live row holds the name.
    """
    rows = Analysis.objects.live().filter(namespace=namespace, name=name)
    if uid:
        rows = rows.filter(uid=uid)
    # A single UPDATE statement is its own short transaction.
    rows.update(deleted_at=now or timezone.now(), next_due_at=None)


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
    list neither overwrites, revives nor deletes it. ``namespaces`` limits deletion to the
    namespaces that were listed (``SENTINEL_NAMESPACES``); None means all.
    """
    at = now or timezone.now()
    counts = dict.fromkeys(_Change, 0)
    seen: set[str] = set()
    for obj in objects:
        resource = _read(obj)
        seen.add(resource.uid)
        _, change = _upsert(resource, now=at, listed_at=listed_at)
        counts[change] += 1

    live = Analysis.objects.live()
    if namespaces is not None:
        live = live.filter(namespace__in=list(namespaces))
    missing = [
        pk
        for pk, uid, mirrored_at in live.values_list("pk", "uid", "mirrored_at")
        if uid not in seen and (mirrored_at is None or mirrored_at <= listed_at)
    ]
    deleted = 0
    for start in range(0, len(missing), _PRUNE_BATCH):
        # Checked again in the UPDATE: the watch may have written a row since it was read.
        deleted += (
            Analysis.objects.filter(pk__in=missing[start : start + _PRUNE_BATCH])
            .filter(deleted_at__isnull=True)
            .filter(Q(mirrored_at__isnull=True) | Q(mirrored_at__lte=listed_at))
            .update(deleted_at=at, next_due_at=None)
        )
    return SyncResult(
        created=counts[_Change.CREATED],
        updated=counts[_Change.UPDATED],
        unchanged=counts[_Change.UNCHANGED] + counts[_Change.STALE],
        deleted=deleted,
    )


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
    resource: _Resource, *, now: datetime, listed_at: datetime | None
) -> tuple[Analysis | None, _Change]:
    existing = Analysis.objects.filter(uid=resource.uid).first()
    if _unchanged(existing, resource):
        return existing, _Change.UNCHANGED
    with transaction.atomic():
        # Read again under the write lock: another process may have written meanwhile.
        row = Analysis.objects.select_for_update().filter(uid=resource.uid).first()
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
        others.update(deleted_at=now, next_due_at=None)

        change = _Change.UPDATED
        spec_changed = True
        if row is None:
            change = _Change.CREATED
            row = Analysis(uid=resource.uid, next_due_at=now)
        else:
            spec_changed = row.spec != resource.spec
            if row.deleted_at is not None or row.generation != resource.generation:
                due = row.next_due_at if row.deleted_at is None else None
                row.next_due_at = min(due, now) if due else now
        for column, value in resource.columns().items():
            setattr(row, column, value)
        row.created_at = resource.created_at or row.created_at or now
        row.deleted_at = None
        row.mirrored_at = now
        row.save()
        if spec_changed:
            _sync_metrics(row, resource.spec)
    return row, change


def _unchanged(row: Analysis | None, resource: _Resource) -> bool:
    return (
        row is not None
        and row.deleted_at is None
        and row.resource_version == resource.resource_version
    )


def _touched_after(row: Analysis, moment: datetime) -> bool:
    stamps = [stamp for stamp in (row.mirrored_at, row.deleted_at) if stamp is not None]
    return any(stamp > moment for stamp in stamps)


def _sync_metrics(row: Analysis, spec: Mapping[str, Any]) -> None:
    wanted = _metrics(spec)
    existing = {metric.name: metric for metric in row.metrics.all()}
    stale = [metric.pk for name, metric in existing.items() if name not in wanted]
    if stale:
        AnalysisMetric.objects.filter(pk__in=stale).delete()
    for position, (name, (query, max_value)) in enumerate(wanted.items()):
        metric = existing.get(name)
        if metric is None:
            AnalysisMetric.objects.create(
                analysis=row, position=position, name=name, query=query, max_value=max_value
            )
        elif (metric.position, metric.query, metric.max_value) != (position, query, max_value):
            metric.position, metric.query, metric.max_value = position, query, max_value
            metric.save(update_fields=["position", "query", "max_value"])


def _metrics(spec: Mapping[str, Any]) -> dict[str, tuple[str, float]]:
    """Return ``{name: (query, maxValue)}`` in spec order, skipping entries without a name."""
    wanted: dict[str, tuple[str, float]] = {}
    for item in spec.get("metrics") or []:
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        max_value = _number(item.get("maxValue"))
        # The CRD requires a numeric maxValue; anything else cannot have come from the cluster.
        if max_value is None:
            continue
        wanted.setdefault(str(item["name"]), (str(item.get("query") or ""), max_value))
    return wanted


def _read(obj: Mapping[str, Any]) -> _Resource:
    metadata = _mapping(obj.get("metadata"))
    namespace, name, uid = (str(metadata.get(key) or "") for key in ("namespace", "name", "uid"))
    if not (namespace and name and uid):
        raise MalformedResource(
            f"RolloutAnalysis object lacks metadata.namespace, name or uid: {dict(metadata)!r}"
        )
    spec = dict(_mapping(obj.get("spec")))
    status = dict(_mapping(obj.get("status")))
    conditions = {
        condition.get("type"): condition
        for condition in status.get("conditions") or []
        if isinstance(condition, Mapping)
    }
    ready = _mapping(conditions.get(ConditionType.READY))
    paused = _mapping(conditions.get(ConditionType.ROLLOUT_PAUSED))
    verdict = str(status.get("lastVerdict") or "")
    failure_limit = _integer(spec.get("failureLimit")) or 0
    return _Resource(
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=str(metadata.get("resourceVersion") or ""),
        generation=_integer(metadata.get("generation")) or 0,
        created_at=_timestamp(metadata.get("creationTimestamp")),
        spec=spec,
        status=status,
        target_name=str(_mapping(spec.get("target")).get("name") or ""),
        interval_seconds=_interval_seconds(spec.get("interval")),
        failure_limit=failure_limit if failure_limit > 0 else DEFAULT_FAILURE_LIMIT,
        dry_run=spec.get("dryRun") is True,
        last_verdict=verdict if verdict in _VERDICTS else "",
        failures=max(_integer(status.get("failures")) or 0, 0),
        paused=paused.get("status") == ConditionStatus.TRUE,
        ready=ready.get("status") == ConditionStatus.TRUE,
        ready_reason=str(ready.get("reason") or ""),
        last_evaluation_at=_timestamp(status.get("lastEvaluationTime")),
        observed_generation=_integer(status.get("observedGeneration")),
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _integer(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _timestamp(value: object) -> datetime | None:
    """Return an aware datetime for an RFC 3339 string (or a datetime), None otherwise."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _interval_seconds(value: object) -> float:
    """Return the seconds of ``spec.interval``, the CRD's default when it is absent or bad."""
    try:
        return parse_duration(value) if isinstance(value, str) else _DEFAULT_INTERVAL_SECONDS
    except ValueError:
        # The operator reports the spec as InvalidSpec; the mirror only needs a sortable number.
        return _DEFAULT_INTERVAL_SECONDS
