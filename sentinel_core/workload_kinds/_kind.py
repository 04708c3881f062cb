"""What a target (workload) kind is: the one small interface each kind's package exposes.

A kind (``deployment``, ``statefulset``, ``daemonset``) is a ``WorkloadKind``: how its object
says it is held, how a pause holds it (and what the pause records of it), and, for the kinds
whose controller records ControllerRevisions, what that controller rolls out. The kind-free
halves (the pause and release patches, the rollout's key and start) live beside the registry in
``workload_kinds`` and ask the kind; docs/architecture.md ("Adding a target kind") walks through
a new one. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sentinel_core.pause_record import ON_DELETE, PauseRecord, RecordState, strategy_type
from sentinel_core.status import Rollout
from sentinel_core.values import integer, utc_seconds

Workload = Mapping[str, Any]
# A merge patch's ``spec`` part, and the pause record's annotations of what the target had.
SpecChange = dict[str, Any]
Kept = dict[str, str]
# When the newest of the workload's revision objects was created, if it is the one with this
# rollout key (``WorkloadKind.rollout_key``); None otherwise. The reconciler reads the cluster for
# it, so a kind asks only when the rollout changed.
Created = Callable[[str], datetime | None]


@dataclass(frozen=True)
class ControllerRevisions:
    """What a StatefulSet's or DaemonSet's status and revisions say of its rolling update.

    ``update``: the revision it rolls out (its pods' ``controller-revision-hash``), None before
    its controller wrote one; ``old``: the older revisions whose pods still run, empty unless
    it is rolling out; ``caught_up``: its controller has seen its latest spec
    (``status.observedGeneration``), so ``update`` is the latest template's.
    """

    update: str | None = None
    old: tuple[str, ...] = ()
    caught_up: bool = False

    @property
    def rolling(self) -> bool:
        """Return whether a rollout is under way: pods of an older revision still run."""
        return bool(self.old)

    @property
    def hashes(self) -> tuple[str | None, tuple[str, ...]]:
        """Return the new pods' hash and the old ones', as the metric kinds split series."""
        return self.update, self.old


def numbered(item: Workload) -> tuple[int, ...]:
    """Return a ControllerRevision's number (its ``revision``), none when it has none."""
    number = integer(item.get("revision"))
    return (number,) if number is not None else ()


def next_revision_rollout(
    previous: Rollout | None,
    revisions: ControllerRevisions,
    *,
    created: datetime | None,
    now: datetime,
) -> Rollout | None:
    """Return ``status.rollout`` of a StatefulSet or DaemonSet after reading ``revisions``.

    Its key is the revision the controller rolls out, read only once the controller has seen
    the latest spec (before that it names an older template's; unchanged meanwhile). A
    revision other than the recorded one is a rollout that began when the controller created
    it (``created``, its ControllerRevision's ``creationTimestamp``; now when that is not
    known). The first revision ever seen is recorded without a start, as a Deployment's first
    template, unless its rollout is under way: then its start is known.
    """
    if revisions.update is None or not revisions.caught_up:
        return previous
    if previous is not None and previous.template_hash == revisions.update:
        return previous
    if previous is None and not revisions.rolling:
        return Rollout(template_hash=revisions.update)
    started = created if created is not None else now
    return Rollout(template_hash=revisions.update, started_at=utc_seconds(started))


def revision_rollout(
    previous: Rollout | None,
    workload: Workload,
    read: ControllerRevisions | None,
    created: Created,
    now: datetime,
) -> Rollout | None:
    """Return the rollout of a kind whose controller records revisions (``next_revision_rollout``).

    The creation time is asked only on a change: one list per rollout, not per evaluation.
    """
    if read is None:
        return previous
    key = read.update
    new = previous.template_hash != key if previous is not None else read.rolling
    at = created(key) if read.caught_up and key and new else None
    return next_revision_rollout(previous, read, created=at, now=now)


@dataclass(frozen=True)
class WorkloadKind:
    """One target kind's surface: everything the rest of the product asks of it."""

    # spec.target.kind, as the CRD's enum spells it.
    name: str
    # Whether the workload is held (its controller rolls no pod over by itself), given the pause
    # record as read and checked against it.
    held: Callable[[Workload, PauseRecord], bool]
    # The spec change that holds the workload as read, and the record of what it had before.
    hold: Callable[[Workload], tuple[SpecChange, Kept]]
    # What a further pause of a target a trusted record already holds sends again.
    rehold: Callable[[], SpecChange]
    # The pause record checked against the workload it sits on (HELD, STALE or UNTRUSTED), once
    # its values are read: the workload, the record's annotations, the holders it names, and
    # whether the target was held before the first pause.
    trust: Callable[[Workload, Mapping[str, str], tuple[str, ...], bool], PauseRecord]
    # The next ``status.rollout`` (docs/status.md#rollouts-statusrollout) from the previous one,
    # the workload as read, what its controller rolls out (``revisions``; None for a kind
    # without) and now, asking ``created`` when the rollout changed.
    rollout: Callable[
        [Rollout | None, Workload, ControllerRevisions | None, Created, datetime], Rollout | None
    ]
    # What its controller rolls out, from the workload and the hashes of the ControllerRevisions
    # it owns (highest ``revision`` first); None for a kind whose rollouts are read otherwise
    # (a Deployment: its pod template's hash and its ReplicaSets).
    revisions: Callable[[Workload, Sequence[str]], ControllerRevisions] | None = None
    # Whether ``revisions`` needs the owned ControllerRevisions listed (its status does not name
    # the revision it rolls out).
    lists_revisions: bool = False
    # The key of one of its revision objects (a ControllerRevision, a Deployment's ReplicaSet)
    # as its pods are labelled; "" when the object carries none.
    revision_key: Callable[[Workload], str] = lambda item: ""
    # The apps/v1 plural of its revision objects, listed by the owner's selector.
    revision_plural: str = "controllerrevisions"
    # One of its revision objects' key as ``rollout`` asks ``created`` for it; None: its
    # ``revision_key`` (a Deployment's rollout is its template's hash, not its pods' label).
    rollout_key: Callable[[Workload], str] | None = None
    # One of its revision objects' numbers, for the backtest's past rollouts (a ControllerRevision's
    # ``revision``; a ReplicaSet's revision and the revision history a rollback leaves).
    revision_numbers: Callable[[Workload], tuple[int, ...]] = numbered
    # The record's annotations a pause that changed the workload keeps of what it changed
    # (``pause_record.KEPT_KEYS``: none for a Deployment, whose paused-before says it all).
    kept_keys: tuple[str, ...] = ()
    # Why those annotations' values cannot be read ("" when they can).
    kept_problem: Callable[[Mapping[str, str]], str] = lambda present: ""


def nothing() -> SpecChange:
    """Return no spec change."""
    return {}


def held_on_delete(workload: Workload) -> bool:
    """Return whether a StatefulSet or DaemonSet is held by its ``OnDelete`` strategy."""
    return strategy_type(workload) == ON_DELETE


def held_by_on_delete(workload: Workload, holders: tuple[str, ...]) -> PauseRecord:
    """Return the record of a pause on a StatefulSet or DaemonSet a person held by ``OnDelete``.

    The pause changed nothing, so only the strategy tells whether the hold is still there.
    """
    if not held_on_delete(workload):
        return PauseRecord(
            RecordState.STALE, problem="its strategy was switched by hand", named=holders
        )
    return PauseRecord(RecordState.HELD, holders, True, None, named=holders)


def caught_up(workload: Workload) -> bool:
    """Return whether the workload's controller has seen its latest spec."""
    observed = integer((workload.get("status") or {}).get("observedGeneration"))
    generation = integer((workload.get("metadata") or {}).get("generation"))
    return observed is not None and generation is not None and observed >= generation


def labelled(label: str) -> Callable[[Workload], str]:
    """Return the ``revision_key`` that reads a revision object's ``label``."""

    def key(item: Workload) -> str:
        labels = (item.get("metadata") or {}).get("labels") or {}
        value = labels.get(label) if isinstance(labels, Mapping) else None
        return value if isinstance(value, str) else ""

    return key


def named(item: Workload) -> str:
    """Return a revision object's name (a StatefulSet's pods are labelled with it)."""
    return str((item.get("metadata") or {}).get("name") or "")
