"""The invariants a soak run is judged by, each a pure function of the finished ``History``.

``INVARIANTS`` is the registry: ``@invariant(number, title)`` adds a check, and ``check_all``
runs every registered one in order. Each returns a ``Finding``: how many things it checked and
one line per violation. The precise definitions are in ``docs/reliability.md``; the numbers are
issue 12's. Invariant 5 (one notification per transition, SPEC §14) reads
``History.notifications`` (the delivery tables) and ``History.received`` (what the webhook
receiver got).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.soak_plan import (
    FAILING,
    MAX_VALUE,
    NOTIFY_ATTEMPTS,
    NOTIFY_RETRY_AFTER,
    NOTIFY_RETRY_MAX,
    NOTIFY_TIMEOUT,
    PERSON_LANE,
    RECEIVER_LANE,
    FaultKind,
    TruthKind,
    samples_case,
)
from bench.soak_record import Attempt, FaultRecord, History, MirrorRow

# How long a value set on the metrics app takes to be what a query returns: Prometheus scrapes
# every second; on a loaded machine a scrape can be late by several seconds.
SCRAPE_LAG = 10.0
# The dispatch claim of a queued reconcile (sentinel_operator.dispatcher.CLAIM_TIMEOUT): a task
# lost with a killed worker is dispatched again when it runs out.
CLAIM_TIMEOUT = 120.0
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
    """SPEC §5's bound: an outage's end is noticed within max(interval, 60 s)."""
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


# -- the invariants ----------------------------------------------------------------------------


@invariant(1, "every due time of every live analysis has an attempt (nothing silently dropped)")
def no_due_time_dropped(history: History, finding: Finding) -> None:
    rows = _by_analysis(history)
    unverifiable = 0
    late = late_unblocked = 0
    for row in history.mirror:
        live_until = _live_until(history, row)
        patience = _patience(row.interval)
        # The first due time is the creation; after each attempt, +interval (an answer) or the
        # backoff, at most max(interval, 60 s) with jitter (an error).
        dues = [(row.created, None)]
        for attempt in rows.get(row.id, []):
            step = row.interval if attempt.outcome != ERROR else patience * JITTER + 1.0
            dues.append((attempt.finished + step, attempt))
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


@invariant(2, "no pause without failureLimit real failures; every regression paused in time")
def pauses_justified_and_timely(history: History, finding: Finding) -> None:
    served = _Served(history)
    rows = _by_analysis(history)
    mirror = {row.id: row for row in history.mirror}
    # (a) Every pausing attempt: not dryRun, at the limit, and the failures it counted since
    # the count last started (with failureWindow: the Fails in the window) were all failing by
    # the scripted truth.
    window_pauses = 0
    for analysis_id, attempts in rows.items():
        row = mirror[analysis_id]
        window = int((history.plans.get(row.name) or {}).get("failure_window") or 0)
        run: list[Attempt] = []
        decisive: list[Attempt] = []
        generation = None
        resumed = [at for at, _ in person_resumes(history).get(row.name, [])]
        for attempt in attempts:
            if resumed and attempt.started >= resumed[0]:
                # A person's resume starts the count afresh (invariant 8 checks that it did).
                run, decisive, resumed = [], [], [r for r in resumed if r > attempt.started]
            if window:
                # failureWindow: the count is the Fails among the last `window` Pass/Fail
                # verdicts since the last spec edit (a new generation empties the window).
                if attempt.generation != generation:
                    decisive, generation = [], attempt.generation
                if attempt.outcome in ("Pass", "Fail"):
                    decisive = [*decisive, attempt][-window:]
                run = [a for a in decisive if a.outcome == "Fail"]
            # The failing attempts the count is made of (a count of 1 starts afresh: after a
            # pass, a spec edit or a person's resume).
            elif attempt.outcome == "Fail":
                run = [attempt] if attempt.failures_after <= 1 else [*run, attempt]
            elif attempt.failures_after == 0:
                run = []
            if not window:
                run = run[-max(row.failure_limit, 1) :]
            if not attempt.paused:
                continue
            finding.checked += 1
            if row.dry_run:
                finding.violate(f"{row.name} is dryRun but paused its target")
            if attempt.failures_after < row.failure_limit or len(run) < row.failure_limit:
                finding.violate(
                    f"{row.name}: paused at {attempt.started - history.started:.1f} s with "
                    f"{attempt.failures_after} failures, {len(run)} failing attempts counted, "
                    f"limit {row.failure_limit}"
                )
            real = 0
            for counted in run:
                seen = served.between(row.name, *_truth_window(history, counted))
                real += any(_value_failing(v) for v in seen)
                if not any(_value_failing(v) for v in seen):
                    finding.violate(
                        f"{row.name}: a failure counted at "
                        f"{counted.started - history.started:.1f} s when the truth served {seen}"
                    )
            if window and real >= row.failure_limit:
                window_pauses += 1
    if window_pauses:
        finding.notes.append(
            f"{window_pauses} pauses with failureWindow, each with failureLimit real failures "
            "in the window"
        )
    # (b) Every Deployment seen paused was paused by analyses that had paused it by then.
    pause_times: dict[str, list[float]] = defaultdict(list)
    for analysis_id, attempts in rows.items():
        pause_times[mirror[analysis_id].name] += [a.started for a in attempts if a.paused]
    dry = {row.name for row in history.mirror if row.dry_run}
    reported: set[tuple[str, str]] = set()
    for sample in history.samples:
        for name, (uid, paused, paused_by) in sample.deployments.items():
            if not paused:
                continue
            finding.checked += 1
            owners = [entry.split("/", 1)[-1] for entry in paused_by.split(",") if entry]
            valid = [o for o in owners if any(t <= sample.at for t in pause_times.get(o, []))]
            if (not valid or any(o in dry for o in owners)) and (name, uid) not in reported:
                reported.add((name, uid))
                finding.violate(
                    f"Deployment {name} paused at {sample.at - history.started:.1f} s by "
                    f"{paused_by or 'nobody named'}, with no pausing evaluation behind it"
                )
    # (c) Every scripted regression paused within (failureLimit + 1) x interval of becoming
    # visible, plus what faults and resets took (see docs/reliability.md).
    late_checks = judged = 0
    for row in history.mirror:
        plan = history.plans.get(row.name) or {}
        if plan.get("kind") != TruthKind.REGRESSING.value:
            continue
        regressed = served.first_at(row.name, FAILING)
        if regressed is None:
            continue
        live_until = _live_until(history, row)
        visible = max(regressed, row.created) + SCRAPE_LAG
        pauses = [
            a.started
            for a in rows.get(row.id, [])
            if a.paused and a.started >= visible - SCRAPE_LAG
        ]
        resets = sorted(
            at
            for at, action, name in history.actions
            if name == row.name and action in ("edit-analysis", "recreate-target")
        )
        start = visible
        while True:
            deadline = _regression_deadline(start, row, history.faults, rows.get(row.id, []))
            reset = next((r for r in resets if start < r <= deadline), None)
            if reset is None or any(start <= p <= reset for p in pauses):
                break
            start = reset
        if deadline >= live_until:
            late_checks += 1
            continue
        finding.checked += 1
        judged += 1
        if not any(start - SCRAPE_LAG <= p <= deadline for p in pauses):
            first = f"{pauses[0] - history.started:.1f} s" if pauses else "never"
            finding.violate(
                f"{row.name}: regression visible at {start - history.started:.1f} s "
                f"(limit {row.failure_limit}, interval {row.interval:.0f} s) not paused by "
                f"{deadline - history.started:.1f} s; first pause {first}"
            )
    finding.notes.append(
        f"{judged} regressions judged for timeliness, {late_checks} too close to the end to judge"
    )


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

_TITLE = re.compile(r"Rollout Sentinel: (\w+) — [^/]+/(\S+)")
_WHEN = re.compile(r"(\w+) at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\. Analysis:")
_KILLS = (FaultKind.LEADER_SIGKILL.value, FaultKind.WORKER_KILL.value)


def _arrival_key(title: str, message: str) -> tuple[str, str, str] | None:
    """Return (event, analysis name, transition time) of a message, as notifications compose it."""
    head = _TITLE.search(title)
    when = _WHEN.findall(message)
    if head is None or not when:
        return None
    return head.group(1), head.group(2), when[-1][1]


def _row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    at = row["transition_at"]
    if isinstance(at, datetime):
        at = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(row["event"]), str(row["name"]), str(at)


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else 0.0


def _receiver_down(history: History) -> list[FaultRecord]:
    return [f for f in history.faults if f.kind in RECEIVER_KINDS and not f.skipped]


def _during(at: float, faults: list[FaultRecord], slack: float) -> bool:
    return any(f.started - slack <= at <= f.ended + slack for f in faults)


def _delivery_tables(history: History) -> tuple[list[dict[str, Any]], dict[Any, list[dict]]]:
    rows = history.notifications.get("notifications_delivery", [])
    tries: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for attempt in history.notifications.get("notifications_deliveryattempt", []):
        tries[attempt["delivery_id"]].append(attempt)
    return rows, tries


def notification_figures(history: History) -> dict[str, Any]:
    """Return what the receiver got and what the delivery rows say, for the report."""
    rows, tries = _delivery_tables(history)
    arrivals = Counter(
        _arrival_key(title, message)
        for _, status, title, message in history.received
        if status == 200
    )
    down = _receiver_down(history)
    during = [
        row
        for row in rows
        if any(_during(_epoch(t["started_at"]), down, 1.0) for t in tries[row["id"]])
    ]
    return {
        "received_posts": len(history.received),
        "received_by_status": dict(Counter(status for _, status, _, _ in history.received)),
        "messages_received": sum(arrivals.values()),
        "duplicate_messages": sum(n - 1 for n in arrivals.values() if n > 1),
        "deliveries_by_event": dict(Counter(str(r["event"]) for r in rows)),
        "deliveries_by_state": dict(Counter(str(r["state"]) for r in rows)),
        "tries": sum(len(t) for t in tries.values()),
        "deliveries_tried_while_receiver_down": {
            "sent": sum(1 for r in during if r["state"] == "sent"),
            "failed": sum(1 for r in during if r["state"] == "failed"),
            "pending": sum(1 for r in during if r["state"] == "pending"),
        },
    }


@invariant(5, "exactly one notification per transition, across failovers")
def one_notification_per_transition(history: History, finding: Finding) -> None:
    if "notifications_delivery" not in history.notifications:
        finding.notes.append("no delivery table recorded: notifications not part of this run")
        return
    rows, tries = _delivery_tables(history)
    down = _receiver_down(history)
    arrivals: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for at, status, title, message in history.received:
        if status != 200:
            continue
        key = _arrival_key(title, message)
        if key is None:
            finding.violate(
                f"a message at {at - history.started:.1f} s not from a delivery: {title}"
            )
            continue
        arrivals[key].append(at)
    # Every row: one key, sent exactly once, or failed only because the receiver was down.
    keys = Counter(str(r["key"]) for r in rows)
    for key, count in keys.items():
        if count > 1:
            finding.violate(f"delivery key {key} stored {count} times")
    by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_key[_row_key(row)].append(row)
    unjudged = 0
    for row in rows:
        finding.checked += 1
        key = _row_key(row)
        got = arrivals.get(key, [])
        label = f"{row['event']} of {row['name']} ({key[2]})"
        oks = sum(1 for t in tries[row["id"]] if t["ok"])
        if row["state"] == "sent":
            if not got:
                finding.violate(f"{label}: recorded sent, never arrived")
            elif len(got) > 1:
                # The documented at-least-once window: a worker killed after the receiver
                # accepted and before the row was marked sent (docs/notifications.md).
                killed = any(
                    f.kind in _KILLS and f.started <= max(got) and f.ended + 20.0 >= min(got)
                    for f in history.faults
                )
                text = f"{label}: arrived {len(got)} times"
                if killed:
                    finding.notes.append(f"{text}, a worker or leader killed between the two")
                else:
                    finding.violate(text)
            if oks != 1:
                finding.violate(f"{label}: sent with {oks} successful tries recorded")
        elif row["state"] == "failed":
            if got:
                finding.violate(f"{label}: recorded failed, but arrived {len(got)} times")
            if int(row["attempts"]) < NOTIFY_ATTEMPTS:
                finding.violate(f"{label}: failed after {row['attempts']} tries")
            for attempt in tries[row["id"]]:
                at = _epoch(attempt["started_at"])
                if not attempt["ok"] and not _during(at, down, NOTIFY_TIMEOUT + 1.0):
                    finding.violate(
                        f"{label}: a try failed at {at - history.started:.1f} s while the "
                        f"receiver was up ({str(attempt['error'])[:120]})"
                    )
        elif _epoch(row["created_at"]) < history.ended - DELIVERY_PATIENCE:
            finding.violate(f"{label}: still {row['state']} at the end, {row['attempts']} tries")
        else:
            unjudged += 1
    for key, got in arrivals.items():
        if key not in by_key:
            finding.violate(f"{key[0]} of {key[1]} ({key[2]}) arrived {len(got)} times, no row")
    # Every decided pause has its one Paused row, and every Paused row a decided pause.
    mirror = {row.id: row for row in history.mirror}
    paused_rows: dict[Any, list[float]] = defaultdict(list)
    for row in rows:
        if row["event"] == "Paused":
            paused_rows[row["analysis_id"]].append(_epoch(row["transition_at"]))
    for attempt in history.attempts:
        if not attempt.paused:
            continue
        finding.checked += 1
        found = [
            t
            for t in paused_rows.get(attempt.analysis_id, [])
            if attempt.started - 2.0 <= t <= attempt.finished + 2.0
        ]
        name = mirror[attempt.analysis_id].name if attempt.analysis_id in mirror else "?"
        if len(found) != 1:
            finding.violate(
                f"{name}: pause at {attempt.started - history.started:.1f} s has "
                f"{len(found)} Paused deliveries"
            )
    # The converse is a decision at the limit, not necessarily one that patched the target: an
    # analysis re-created while its target is still paused under its name reaches the limit on
    # a target already paused (the history row says paused only for the evaluation that
    # patched), and its RolloutPaused=True is a transition of this new analysis.
    pauses = defaultdict(list)
    for attempt in history.attempts:
        row = mirror.get(attempt.analysis_id)
        limit = row.failure_limit if row is not None else 1
        if attempt.paused or (attempt.outcome == "Fail" and attempt.failures_after >= limit):
            pauses[attempt.analysis_id].append(attempt)
    for analysis_id, times in paused_rows.items():
        for t in times:
            finding.checked += 1
            if not any(a.started - 2.0 <= t <= a.finished + 2.0 for a in pauses[analysis_id]):
                finding.violate(
                    f"a Paused delivery at {t - history.started:.1f} s with no pausing evaluation"
                )
    # Recovered answers a MetricsUnavailable message (docs/notifications.md).
    unavailable: dict[Any, list[float]] = defaultdict(list)
    for row in rows:
        if row["event"] == "MetricsUnavailable":
            unavailable[row["analysis_id"]].append(_epoch(row["transition_at"]))
    for row in rows:
        if row["event"] != "Recovered":
            continue
        finding.checked += 1
        at = _epoch(row["transition_at"])
        if not any(t < at for t in unavailable.get(row["analysis_id"], [])):
            finding.violate(
                f"Recovered of {row['name']} at {at - history.started:.1f} s without a "
                "MetricsUnavailable before it"
            )
    figures = notification_figures(history)
    finding.notes.append(
        f"{figures['messages_received']} messages received ({figures['received_posts']} POSTs, "
        f"by status {figures['received_by_status']}), {figures['duplicate_messages']} duplicates; "
        f"deliveries by state {figures['deliveries_by_state']}, "
        f"by event {figures['deliveries_by_event']}; tried while the receiver was down "
        f"{figures['deliveries_tried_while_receiver_down']}"
    )
    finding.notes.append(f"{unjudged} deliveries too close to the end to judge")


@invariant(6, "no status write lost: the cluster's status is the last decided one")
def final_status_is_last_decision(history: History, finding: Finding) -> None:
    rows = _by_analysis(history)
    by_uid = {row.uid: row for row in history.mirror}
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
        if failures != last.failures_after:
            finding.violate(
                f"{name}: status says failures {failures}, the last history row "
                f"({last.outcome} at {last.started - history.started:.1f} s) "
                f"{last.failures_after}"
            )
        decisive = [a for a in attempts if a.outcome in DECISIVE]
        verdict = status.get("lastVerdict")
        if decisive and verdict != decisive[-1].outcome:
            finding.violate(
                f"{name}: status says lastVerdict {verdict}, the last decisive row "
                f"{decisive[-1].outcome}"
            )


@invariant(7, "no crash loop, no 'database is locked', no traceback, memory bounded")
def processes_healthy(history: History, finding: Finding) -> None:
    for at, component, code in history.unexpected_exits:
        finding.checked += 1
        finding.violate(
            f"{component} exited on its own at {at - history.started:.1f} s (code {code})"
        )
    kills = sum(
        1 for f in history.faults if f.kind == FaultKind.WORKER_KILL.value and not f.skipped
    )
    reincarnated = 0
    for component, text in sorted(history.logs.items()):
        finding.checked += 1
        locked = text.count("database is locked")
        if locked:
            finding.violate(f"{component}: 'database is locked' {locked} times")
        reincarnated += text.count("reincarnated worker")
        # SPEC: no traceback for the user. A dependency gone is one line (the operator's
        # sentinel_operator.transient, the API's 503); a traceback left is a bug to look at.
        errors = _traceback_errors(text)
        if errors:
            kinds = Counter(errors).most_common(3)
            finding.violate(
                f"{component}: {len(errors)} tracebacks in the log; "
                + "; ".join(f"{n} x {line[:200]}" for line, n in kinds)
            )
    if reincarnated > kills:
        finding.violate(
            f"{reincarnated} django-q2 workers reincarnated, {kills} of them killed by the run"
        )
    finding.notes.append(f"{reincarnated} worker reincarnations ({kills} workers killed)")
    minutes = (history.ended - history.started) / 60.0
    for component, slope in sorted(rss_slopes(history).items()):
        finding.notes.append(f"RSS slope {component}: {slope:+.2f} MB/min")
        if component.startswith(("operator", "web")) and minutes >= RSS_SLOPE_MIN_MINUTES:
            finding.checked += 1
            if slope > RSS_SLOPE_LIMIT:
                finding.violate(f"{component}: RSS grows {slope:.2f} MB/min")
    for sample in history.rss:
        # PSS: the forked workers share most pages with their parent.
        total = sum(mb for name, mb in sample.pss.items() if name.startswith("operator"))
        finding.checked += 1
        if total > OPERATOR_RSS_LIMIT_MB:
            finding.violate(
                f"operators use {total:.0f} MB at {sample.at - history.started:.1f} s "
                f"(limit {OPERATOR_RSS_LIMIT_MB:.0f} MB)"
            )


def _traceback_errors(text: str) -> list[str]:
    """Return the exception line that ends each traceback of ``text`` (chained ones once)."""
    errors = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        # Also inside a line: django-q2 logs a failed task's traceback as text after its error.
        if "Traceback (most recent call last)" not in lines[index]:
            index += 1
            continue
        index += 1
        while index < len(lines) and (not lines[index] or lines[index][0].isspace()):
            index += 1
        ending = lines[index] if index < len(lines) else ""
        # The next line that is neither blank nor the exception message's continuation.
        following = next((x for x in lines[index + 1 :] if x and not x[0].isspace()), "")
        # "The above exception was the direct cause...": one record, judged by its last error.
        if not following.startswith(("The above exception", "During handling")):
            errors.append(ending)
    return errors


def rss_slopes(history: History) -> dict[str, float]:
    """Return each component's RSS slope (MB/min, least squares) over the second half of the run.

    The first half holds start-up (imports, caches, connection pools); a leak shows in the rest.
    Only the component's last incarnation counts, from a minute after it was first seen: a
    process the run restarted starts afresh.
    "operators (all)" sums both replicas over the samples where both are in their last one.
    """
    middle = history.started + (history.ended - history.started) / 2.0
    last_pid = history.rss[-1].pids if history.rss else {}
    # When each incarnation was first seen: its first minute is start-up (forking workers).
    born: dict[tuple[str, int | None], float] = {}
    for sample in history.rss:
        for component, pid in sample.pids.items():
            born.setdefault((component, pid), sample.at)
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for sample in history.rss:
        if sample.at < middle:
            continue
        minute = (sample.at - middle) / 60.0
        current = [
            component
            for component, mb in sample.mb.items()
            if mb > 0
            and sample.pids.get(component) == last_pid.get(component)
            and sample.at >= born[(component, sample.pids.get(component))] + STARTUP_SECONDS
        ]
        for component in current:
            series[component].append((minute, sample.mb[component]))
        operators = [name for name in sample.mb if name.startswith("operator-")]
        if operators and all(name in current for name in operators):
            series["operators (all)"].append((minute, sum(sample.mb[n] for n in operators)))
    slopes = {}
    for component, points in series.items():
        if len(points) < 3:
            continue
        mean_x = sum(x for x, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        spread = sum((x - mean_x) ** 2 for x, _ in points)
        if spread > 0:
            slopes[component] = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return slopes


# Invariant 8 lives in its own module; imported last, as it uses the helpers above.
from bench import soak_resumes  # noqa: E402, F401
