"""The invariants a soak run is judged by, each a pure function of the finished ``History``.

``INVARIANTS`` is the registry: ``@invariant(number, title)`` adds a check, and ``check_all``
runs every registered one in order. Each returns a ``Finding``: how many things it checked and
one line per violation. The precise definitions are in ``docs/reliability.md``; the numbers are
issue 12's. Invariant 5 (one notification per transition, docs/notifications.md) reads
``History.notifications`` (the delivery tables) and ``History.received`` (what the webhook
receiver got).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench.soak_plan import (
    MAX_VALUE,
    NOTIFY_ATTEMPTS,
    NOTIFY_RETRY_AFTER,
    NOTIFY_RETRY_MAX,
    NOTIFY_TIMEOUT,
    PERSON_LANE,
    RECEIVER_LANE,
    FaultKind,
    samples_case,
)
from bench.soak_record import Attempt, FaultRecord, History, MirrorRow
from sentinel_core.requeue import requeue_at
from sentinel_site.config import DEFAULT_CLAIM_TIMEOUT

# How long a value set on the metrics app takes to be what a query returns: Prometheus scrapes
# every second; on a loaded machine a scrape can be late by several seconds.
SCRAPE_LAG = 10.0
# The dispatch claim of a queued reconcile (SENTINEL_CLAIM_TIMEOUT: the shipped default, which
# soak_stack gives the replicas): a task lost with a killed worker is dispatched again when it
# runs out.
CLAIM_TIMEOUT = float(DEFAULT_CLAIM_TIMEOUT)
# The backoff jitter (±10 %), and a second of clock granularity on top.
JITTER = 1.1
# The leader's Lease (testkit's OperatorProcess default): a SIGKILLed leader is replaced
# within it, plus one retry period (2 s).
LEASE = 17.0
# The §13 memory bound for the ha configuration: all operator processes together (PSS).
OPERATOR_RSS_LIMIT_MB = 600.0
# Unbounded growth, for runs long enough to tell it from start-up: MB per minute.
RSS_SLOPE_LIMIT = 5.0
RSS_SLOPE_MIN_MINUTES = 10.0
# A (re)started process's first minute is start-up, not growth.
STARTUP_SECONDS = 60.0

ERROR = "Error"
DECISIVE = ("Pass", "Fail", "Inconclusive")
RECEIVER_KINDS = frozenset(kind.value for kind in RECEIVER_LANE)
PERSON_KINDS = frozenset(kind.value for kind in PERSON_LANE)
# How long one delivery may take from its row to its last try: every retry delay (doubling,
# capped, +10 % jitter), every try's timeout, the pump's claim of a try lost with a killed worker
# (notifications/pump.py, 15 s) and the replacement of a killed leader, whose pump it is.
DELIVERY_PATIENCE = (
    sum(min(NOTIFY_RETRY_AFTER * 2**n, NOTIFY_RETRY_MAX) * JITTER for n in range(NOTIFY_ATTEMPTS))
    + NOTIFY_ATTEMPTS * NOTIFY_TIMEOUT
    + 15.0
    + LEASE
    + 10.0
)


@dataclass
class Finding:
    number: int
    title: str
    checked: int = 0
    violations: list[str] = field(default_factory=list)
    # Figures that are reported but not judged (e.g. RSS slopes, unverifiable due times).
    notes: list[str] = field(default_factory=list)

    def violate(self, message: str) -> None:
        self.violations.append(message)


Check = Callable[[History, Finding], None]
INVARIANTS: dict[int, tuple[str, Check]] = {}


def invariant(number: int, title: str) -> Callable[[Check], Check]:
    """Register ``check`` as invariant ``number``; a number may be registered once."""

    def register(check: Check) -> Check:
        if number in INVARIANTS:
            raise ValueError(f"invariant {number} is registered twice")
        INVARIANTS[number] = (title, check)
        return check

    return register


def check_all(history: History) -> list[Finding]:
    """Run every registered invariant on ``history``, in number order."""
    findings = []
    for number in sorted(INVARIANTS):
        title, check = INVARIANTS[number]
        finding = Finding(number, title)
        check(history, finding)
        findings.append(finding)
    return findings


# -- shared views of the history -------------------------------------------------------------


class _Served:
    """What the metrics app served for each analysis, as recorded when it was set."""

    def __init__(self, history: History) -> None:
        self._times: dict[str, list[float]] = defaultdict(list)
        self._values: dict[str, list[float | None]] = defaultdict(list)
        for change in sorted(history.truths, key=lambda c: c.at):
            self._times[change.analysis].append(change.at)
            self._values[change.analysis].append(change.value)

    def between(self, analysis: str, start: float, end: float) -> list[float | None]:
        """Return every value served for ``analysis`` at some instant of [start, end]."""
        times, values = self._times[analysis], self._values[analysis]
        first = max(0, bisect.bisect_right(times, start) - 1)
        last = bisect.bisect_right(times, end)
        return values[first:last]

    def first_at(self, analysis: str, value: float) -> float | None:
        for at, served in zip(self._times[analysis], self._values[analysis], strict=True):
            if served == value:
                return at
        return None


def _by_analysis(history: History) -> dict[int, list[Attempt]]:
    rows: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in history.attempts:
        rows[attempt.analysis_id].append(attempt)
    for found in rows.values():
        found.sort(key=lambda a: (a.started, a.id))
    return rows


def _patience(interval: float) -> float:
    """The bound of docs/status.md: an outage's end is noticed within max(interval, 60 s)."""
    return max(interval, 60.0)


def _live_until(history: History, row: MirrorRow) -> float:
    """Return when this incarnation stopped being live: deleted by the run, or the end."""
    end = history.ended
    for at, action, name in history.actions:
        if name == row.name and action == "delete-analysis" and row.created - 2.0 <= at < end:
            end = at
    return end


def _blocked_deadline(start: float, patience: float, faults: Iterable[FaultRecord]) -> float:
    """Return start + patience, pushed past every blocking fault it runs into (+ patience)."""
    blocking = [f for f in faults if not f.skipped and f.blocks_until > 0]
    deadline = start + patience
    changed = True
    while changed:
        changed = False
        for fault in blocking:
            if fault.started <= deadline and fault.blocks_until >= start:
                pushed = fault.blocks_until + patience
                if pushed > deadline:
                    deadline, changed = pushed, True
    return deadline


def _truth_window(history: History, attempt: Attempt) -> tuple[float, float]:
    """Return the instants whose served value this attempt's query may have returned.

    Normally ``[started - SCRAPE_LAG, finished]``. Prometheus stopped and started again answers
    with the last sample it scraped before the stop until it scrapes again (the sample is
    within its 5-minute lookback), so an attempt during or within SCRAPE_LAG after such a stop
    may see what was served up to SCRAPE_LAG before the stop.
    """
    start = attempt.started - SCRAPE_LAG
    for fault in history.faults:
        if fault.kind != FaultKind.PROMETHEUS_STOPPED.value or fault.skipped:
            continue
        if fault.started <= attempt.finished and attempt.started <= fault.ended + SCRAPE_LAG:
            start = min(start, fault.started - SCRAPE_LAG)
    return start, attempt.finished


def _value_failing(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and value > MAX_VALUE


def _regression_deadline(
    start: float,
    row: MirrorRow,
    faults: list[FaultRecord],
    attempts: list[Attempt],
    extra: int = 0,
) -> float:
    """Return when (failureLimit + 1 + extra) x interval of undisturbed time after ``start``.

    A fault disturbs this analysis from its start until this analysis' first attempt that
    started after the fault ended (every kind counts, except kubectl actions on other
    analyses): that is the time the fault really cost it, and invariant 1 bounds how long the
    recovery may take. Without a recovering attempt the deadline is past the end.
    """
    budget = (row.failure_limit + 1 + extra) * row.interval
    starts = [a.started for a in attempts]
    disturbed = []
    for fault in faults:
        if fault.skipped or (fault.kind.startswith("kubectl") and fault.analysis != row.name):
            continue
        # A notification receiver down must not touch reconciles: not a disturbance; nor is
        # a person's resume (invariant 8 judges what follows one).
        if fault.kind in RECEIVER_KINDS or fault.kind in PERSON_KINDS:
            continue
        following = bisect.bisect_left(starts, fault.ended)
        recovered = starts[following] if following < len(starts) else math.inf
        if recovered > start:
            disturbed.append((max(fault.started, start), recovered))
    deadline = start
    for begin, finish in sorted(disturbed):
        if begin >= deadline + budget:
            break
        if finish <= deadline:
            continue
        budget -= max(0.0, begin - deadline)
        deadline = finish
    return deadline + budget


# -- the invariants ----------------------------------------------------------------------------


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@invariant(1, "every due time of every live analysis has an attempt (nothing silently dropped)")
def no_due_time_dropped(history: History, finding: Finding) -> None:
    rows = _by_analysis(history)
    unverifiable = 0
    late = late_unblocked = 0
    for row in history.mirror:
        live_until = _live_until(history, row)
        patience = _patience(row.interval)
        # The first due time is the creation; after each attempt, the product's requeue from
        # the attempt's due time (an answer) or the backoff, at most max(interval, 60 s) with
        # jitter (an error), after which the next due time is unknown (taken as its start).
        dues = [(row.created, None)]
        due_time: float | None = None
        for attempt in rows.get(row.id, []):
            if attempt.outcome == ERROR:
                dues.append((attempt.finished + patience * JITTER + 1.0, attempt))
                due_time = None
                continue
            again = requeue_at(
                None if due_time is None else _when(due_time),
                started=_when(attempt.started),
                now=_when(attempt.finished),
                interval=row.interval,
                uid=row.uid,
            ).timestamp()
            dues.append((again, attempt))
            due_time = again
        attempts = rows.get(row.id, [])
        for index, (due, _after) in enumerate(dues):
            if due >= live_until:
                continue
            following = attempts[index] if index < len(attempts) else None
            deadline = _blocked_deadline(due, patience, history.faults)
            if following is None:
                if deadline < live_until:
                    finding.checked += 1
                    finding.violate(
                        f"{row.name} (uid {row.uid[:8]}): due by {due - history.started:.1f} s, "
                        f"no attempt until the end ({live_until - history.started:.1f} s; "
                        f"deadline {deadline - history.started:.1f} s)"
                    )
                else:
                    unverifiable += 1
                continue
            finding.checked += 1
            if following.started > due + 5.0:
                late += 1
                if not any(
                    f.blocks_until > 0 and f.started <= following.started and f.blocks_until >= due
                    for f in history.faults
                    if not f.skipped
                ):
                    late_unblocked += 1
            if following.started > deadline:
                finding.violate(
                    f"{row.name}: due by {due - history.started:.1f} s, next attempt at "
                    f"{following.started - history.started:.1f} s, after the deadline "
                    f"{deadline - history.started:.1f} s"
                )
    finding.notes.append(
        f"{late} attempts started more than 5 s after their latest due time, "
        f"{late_unblocked} of them outside every blocking fault"
    )
    finding.notes.append(f"{unverifiable} last due times fell too close to the end to judge")


@invariant(3, "no analysis ever resumed by the operator")
def never_resumed(history: History, finding: Finding) -> None:
    # The person lane's resumes, carried out or tried: (analysis, started, ended).
    people = [
        (f.analysis, f.started, f.ended)
        for f in history.faults
        if f.kind in PERSON_KINDS and f.analysis and f.started
    ]
    last: dict[str, tuple[str, bool, float]] = {}
    by_person = 0
    for sample in sorted(history.samples, key=lambda s: s.at):
        for name, (uid, paused, _by) in sample.deployments.items():
            before = last.get(name)
            if before is not None and before[0] == uid and before[1]:
                finding.checked += 1
                # A person resumed it between the two samples: not the operator's doing.
                if not paused and any(
                    who == name and started <= sample.at and ended >= before[2] - 1.0
                    for who, started, ended in people
                ):
                    by_person += 1
                elif not paused:
                    finding.violate(
                        f"Deployment {name} (uid {uid[:8]}) paused at "
                        f"{before[2] - history.started:.1f} s, running again at "
                        f"{sample.at - history.started:.1f} s; nobody resumed it"
                    )
            last[name] = (uid, paused, sample.at)
    finding.notes.append(
        f"{by_person} Deployments seen running again after a person's resume "
        f"({len(people)} resumes by a person)"
    )


def person_resumes(history: History) -> dict[str, list[tuple[float, str]]]:
    """Return each analysis' resumes by a person: (when it was done, how), oldest first."""
    found: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for at, action, name in sorted(history.actions):
        if action in PERSON_KINDS:
            found[name].append((at, action))
    return found


@invariant(4, "failures never counted from an outage, a no-data or a passing evaluation")
def failures_only_from_failures(history: History, finding: Finding) -> None:
    served = _Served(history)
    mirror = {row.id: row for row in history.mirror}
    for analysis_id, attempts in _by_analysis(history).items():
        row = mirror[analysis_id]
        guard = (history.plans.get(row.name) or {}).get("min_samples")
        previous = 0
        for attempt in attempts:
            finding.checked += 1
            at = f"{attempt.started - history.started:.1f} s"
            if attempt.outcome == "Fail" and guard is not None:
                # Too little traffic is never judged: a Fail needs the guard to have seen enough.
                guarded = served.between(samples_case(row.name), *_truth_window(history, attempt))
                if not any(v is not None and not math.isnan(v) and v >= guard for v in guarded):
                    finding.violate(
                        f"{row.name}: Fail at {at} while the minSamples guard served {guarded} "
                        f"(minimum {guard:g})"
                    )
            if attempt.outcome == "Fail":
                if not attempt.values or not all(_value_failing(v) for v in attempt.values):
                    finding.violate(f"{row.name}: Fail at {at} with values {attempt.values}")
                seen = served.between(row.name, *_truth_window(history, attempt))
                if not any(_value_failing(v) for v in seen):
                    finding.violate(f"{row.name}: Fail at {at} while the truth served {seen}")
                if attempt.failures_after > previous + 1:
                    finding.violate(
                        f"{row.name}: failures {previous} -> {attempt.failures_after} at {at}"
                    )
            elif attempt.failures_after > previous:
                finding.violate(
                    f"{row.name}: failures {previous} -> {attempt.failures_after} at {at} on "
                    f"a {attempt.outcome} attempt ({attempt.error_reason or 'no reason'})"
                )
            previous = attempt.failures_after


# -- notifications -----------------------------------------------------------------------------


def _api_resumes(history: History, name: str, since: float) -> list[FaultRecord]:
    """Return the REST API resumes of ``name`` carried out from ``since`` on.

    The API's resume writes the analysis' status itself (failures 0, ``ResumedByUser``) and
    leaves no history row; ``kubectl rollout resume`` only touches the Deployment.
    """
    return [
        f
        for f in history.faults
        if f.kind == FaultKind.RESUME_API.value
        and f.analysis == name
        and not f.skipped
        and f.ended >= since
    ]


@invariant(6, "no status write lost: the cluster's status is the last decided one")
def final_status_is_last_decision(history: History, finding: Finding) -> None:
    rows = _by_analysis(history)
    by_uid = {row.uid: row for row in history.mirror}
    resumed_last = 0
    for name, (uid, status) in sorted(history.final_statuses.items()):
        row = by_uid.get(uid)
        attempts = rows.get(row.id, []) if row is not None else []
        if not attempts:
            if status:
                finding.violate(f"{name}: has a status but no history row")
            continue
        finding.checked += 1
        last = attempts[-1]
        failures = status.get("failures")
        # The last decision may be a person's: a resume through the API after the last attempt
        # wrote failures 0 (one whose request overlapped the attempt's write may come either
        # side of it). A worker killed with the next reconcile keeps the analysis claimed for
        # CLAIM_TIMEOUT, which can outlast a short run (seed 12, issue 23).
        assert row is not None
        resumes = _api_resumes(history, name, row.created)
        expected = {last.failures_after}
        if any(r.started > last.finished for r in resumes):
            expected = {0}
        elif any(r.started <= last.finished <= r.ended for r in resumes):
            expected.add(0)
        if expected == {0}:
            resumed_last += 1
        if failures not in expected:
            finding.violate(
                f"{name}: status says failures {failures}, the last history row "
                f"({last.outcome} at {last.started - history.started:.1f} s) "
                f"{last.failures_after}"
                + (", and a person's resume after it 0" if expected == {0} else "")
            )
        decisive = [a for a in attempts if a.outcome in DECISIVE]
        verdict = status.get("lastVerdict")
        if decisive and verdict != decisive[-1].outcome:
            finding.violate(
                f"{name}: status says lastVerdict {verdict}, the last decisive row "
                f"{decisive[-1].outcome}"
            )
    finding.notes.append(
        f"{resumed_last} analyses whose last status write was a person's resume through the API"
    )


# Invariants 2, 5, 7 and 8 live in their own modules; imported last, as they use the
# registry and the helpers above.
from bench import soak_deliveries, soak_pauses, soak_processes, soak_resumes  # noqa: E402, F401
