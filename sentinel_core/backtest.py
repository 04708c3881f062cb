"""Backtest, the pure part: a target's past rollouts, the instants to replay, the verdicts' summary.

A backtest replays an analysis over the target's past rollouts (docs/backtest.md).
``sentinel_cluster.past_revisions`` reads the revisions (a Deployment's ReplicaSets, a
StatefulSet's or DaemonSet's ControllerRevisions) as ``PastRevision``; ``past_rollouts`` turns
them into the periods to replay, marking those a person rolled back; ``instants`` says when the
operator would have evaluated each; ``sentinel_operator.backtest`` measures and decides at each
instant and builds a ``RolloutReplay``; ``summarize`` compares the would-be pauses with the
rollbacks. No I/O, no clock: "now" is handed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sentinel_core.values import format_time

# At most this many rollouts per backtest, the newest first (docs/backtest.md).
MAX_ROLLOUTS = 50
DEFAULT_ROLLOUTS = 10
# A rollout's period ends at the next one's start, or this long after its own.
DEFAULT_MAX_DURATION_SECONDS = 3600.0
MAX_DURATION_LIMIT_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class PastRevision:
    """One revision of the target as its controller recorded it.

    ``key`` is what the target's pods are labelled with (``pod-template-hash``, a StatefulSet's
    revision name, a DaemonSet's ``controller-revision-hash``); ``numbers`` every revision
    number it held (a Deployment's ``deployment.kubernetes.io/revision`` and its
    ``revision-history``; a ControllerRevision's ``revision``): more than one when a rollback
    brought it back.
    """

    key: str
    created: datetime
    numbers: tuple[int, ...]
    name: str = ""

    @property
    def first(self) -> int:
        return min(self.numbers) if self.numbers else -1


@dataclass(frozen=True)
class PastRollout:
    """One rollout to replay: from its revision's creation to the next one's, or a bound."""

    revision: int
    key: str
    started_at: datetime
    ended_at: datetime
    # A later revision brought an older template back: a person rolled this one back.
    rolled_back: bool = False
    # The revision it replaced (the newest one created before it).
    previous_key: str | None = None
    # It ended where the next revision was created: a time the API server keeps to the second.
    ended_by_next: bool = False
    # Every revision created before it, newest first: the old sides a ``compare`` or
    # ``sequential`` metric may find still serving at an instant (``old_side_query``).
    older_keys: tuple[str, ...] = ()

    @property
    def candidates(self) -> tuple[str, ...]:
        """Return the revisions whose pods may have been its old side, newest first."""
        if self.older_keys:
            return self.older_keys
        return (self.previous_key,) if self.previous_key else ()


def past_rollouts(
    revisions: Sequence[PastRevision],
    *,
    now: datetime,
    max_duration: float = DEFAULT_MAX_DURATION_SECONDS,
    limit: int = DEFAULT_ROLLOUTS,
) -> tuple[PastRollout, ...]:
    """Return the newest ``limit`` rollouts of ``revisions``, oldest first.

    Each revision's creation starts a rollout (the first one too: its predecessor may have
    been deleted by ``revisionHistoryLimit``); it ends at the next revision's creation, at
    ``max_duration`` seconds after its start, or now, whichever comes first. A revision is
    rolled back when the next revision number after its first belongs to a revision created
    before it: an older template came back (the rollback itself is not a new rollout).
    """
    ordered = sorted(revisions, key=lambda r: (r.created, r.first))
    by_number = {n: r for r in ordered for n in r.numbers}
    rollouts: list[PastRollout] = []
    for index, revision in enumerate(ordered):
        end = min(revision.created + timedelta(seconds=max_duration), now)
        by_next = index + 1 < len(ordered) and ordered[index + 1].created <= end
        if by_next:
            end = ordered[index + 1].created
        later = sorted(n for n in by_number if n > revision.first)
        back = bool(later) and by_number[later[0]].created < revision.created
        previous = ordered[index - 1].key if index > 0 else None
        older = tuple(
            dict.fromkeys(r.key for r in reversed(ordered[:index]) if r.key != revision.key)
        )
        rollouts.append(
            PastRollout(
                revision=revision.first,
                key=revision.key,
                started_at=revision.created,
                ended_at=max(end, revision.created),
                rolled_back=back,
                previous_key=previous,
                ended_by_next=by_next,
                older_keys=older,
            )
        )
    return tuple(rollouts[-limit:]) if limit > 0 else ()


def instants(rollout: PastRollout, interval: float) -> tuple[datetime, ...]:
    """Return when the operator would have evaluated during ``rollout``, every ``interval``.

    The first evaluation one interval after the rollout began (the operator notices a rollout
    at its next evaluation), the last one before its end (where the next rollout begins). A
    next revision's creation time is kept to the second, so it may have been created up to a
    second after ``ended_at``: an instant within that second is still this rollout's (live,
    the operator notices the next rollout only at its next evaluation after the creation).
    """
    out: list[datetime] = []
    step = timedelta(seconds=interval)
    moment = rollout.started_at + step
    end = rollout.ended_at + timedelta(seconds=1 if rollout.ended_by_next else 0)
    while moment < end:
        out.append(moment)
        moment += step
    return tuple(out)


def old_side_query(metric: Any) -> tuple[str, str] | None:
    """Return the instant query that says whose pods a sided metric saw, and the label to read.

    Live, a ``compare`` or ``sequential`` metric's old side is the older revisions whose pods
    still run at that moment (a Deployment's older ReplicaSets with replicas, a StatefulSet's or
    DaemonSet's current revision while it rolls out); the cluster keeps no record of when they
    stopped, so the replay asks Prometheus which revisions' series the metric's data still holds
    at the instant: ``compare``'s own query, ``sequential``'s ``total`` (or the histogram's
    ``_count``), counted by the metric's ``by``. None for a metric that has no sides.
    """
    if metric.compare is not None:
        by = metric.compare.by
        return f"count by ({by}) ({metric.query})", by
    sequential = metric.sequential
    if sequential is None:
        return None
    if sequential.total is not None:
        selector = sequential.total
    else:
        name, brace, rest = str(sequential.histogram).partition("{")
        selector = f"{name.strip()}_count{brace}{rest}"
    return f"count by ({sequential.by}) ({selector})", sequential.by


@dataclass
class Verdicts:
    """How many evaluations of a rollout were Pass, Fail, Inconclusive, or errors."""

    passed: int = 0
    failed: int = 0
    inconclusive: int = 0
    errors: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "pass": self.passed,
            "fail": self.failed,
            "inconclusive": self.inconclusive,
            "error": self.errors,
        }


@dataclass(frozen=True)
class Step:
    """One replayed evaluation: its instant, outcome, and each metric's value and verdict."""

    at: datetime
    outcome: str
    metrics: tuple[dict[str, Any], ...] = ()
    paused: bool = False
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": format_time(self.at), "outcome": self.outcome}
        out["metrics"] = list(self.metrics)
        if self.paused:
            out["paused"] = True
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class RolloutReplay:
    """What the analysis would have done during one past rollout."""

    rollout: PastRollout
    verdicts: Verdicts
    steps: tuple[Step, ...]
    would_pause_at: datetime | None = None
    # Which evaluation (1 = the first) would have paused it.
    evaluation: int | None = None
    metric: str | None = None
    value: str | None = None
    limit: float | None = None
    # The sentence the live status would have carried (RolloutPaused's message).
    message: str = ""
    # Prometheus held nothing for this period (retention): no verdict is guessed.
    no_data: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.rollout
        return {
            "revision": r.revision,
            "hash": r.key,
            "startedAt": format_time(r.started_at),
            "endedAt": format_time(r.ended_at),
            "rolledBack": r.rolled_back,
            "wouldPauseAt": format_time(self.would_pause_at) if self.would_pause_at else None,
            "evaluation": self.evaluation,
            "metric": self.metric,
            "value": self.value,
            "limit": self.limit,
            "message": self.message,
            "verdicts": self.verdicts.to_dict(),
            "noData": self.no_data,
            "evaluations": [s.to_dict() for s in self.steps],
        }


def summarize(replays: Sequence[RolloutReplay]) -> dict[str, Any]:
    """Return the summary: pauses against rollbacks (docs/backtest.md).

    ``caught``: rolled back by a person and paused by the guard, with how long after its start
    (the rollback's own time is not recorded by Kubernetes: the rollout's end bounds it);
    ``missed``: rolled back, never paused; ``falsePauses``: paused, not rolled back.
    """
    caught = [
        {
            "revision": r.rollout.revision,
            "pausedAfterSeconds": (r.would_pause_at - r.rollout.started_at).total_seconds(),
            "beforeEndSeconds": (r.rollout.ended_at - r.would_pause_at).total_seconds(),
        }
        for r in replays
        if r.rollout.rolled_back and r.would_pause_at is not None
    ]
    missed = [
        r.rollout.revision
        for r in replays
        if r.rollout.rolled_back and r.would_pause_at is None and not r.no_data
    ]
    false_pauses = [
        r.rollout.revision
        for r in replays
        if not r.rollout.rolled_back and r.would_pause_at is not None
    ]
    return {
        "rollouts": len(replays),
        "wouldPause": sum(1 for r in replays if r.would_pause_at is not None),
        "rolledBack": sum(1 for r in replays if r.rollout.rolled_back),
        "noData": sum(1 for r in replays if r.no_data),
        "caught": caught,
        "missed": missed,
        "pausedNotRolledBack": false_pauses,
    }


def exit_code(replays: Sequence[RolloutReplay]) -> int:
    """Return 1 when the guard would have paused a rollout nobody rolled back, else 0."""
    return 1 if any(r.would_pause_at and not r.rollout.rolled_back for r in replays) else 0
