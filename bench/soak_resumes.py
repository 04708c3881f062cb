"""Invariant 8: what follows a person's resume (the soak's person lane, docs/status.md).

A person resumes a paused Deployment through the REST API's resume action or with ``kubectl
rollout resume`` (``bench.soak_faults``). The operator never resumes (invariant 3); after a
person did, the failure count starts again, so the analysis pauses again only after
``failureLimit`` more failures, and a regression still present does pause again in time.
Registered by ``bench.soak_invariants`` (imported at its end); definitions in
``docs/reliability.md``.
"""

from __future__ import annotations

from bench.soak_invariants import (
    SCRAPE_LAG,
    Finding,
    _by_analysis,
    _live_until,
    _regression_deadline,
    _Served,
    invariant,
    person_resumes,
)
from bench.soak_plan import FAILING, FaultKind, TruthKind
from bench.soak_record import Attempt, History, MirrorRow
from sentinel_core.conditions import ErrorReason

# Attempts the Kubernetes API cut short: they wrote no status, so they could not see a resume.
CUT_SHORT = frozenset(reason.value for reason in ErrorReason)


@invariant(8, "a person's resume clears the count; a regression still present pauses again")
def resumes_restart_the_count(history: History, finding: Finding) -> None:
    rows = _by_analysis(history)
    served = _Served(history)
    resumes = person_resumes(history)
    unjudged = repaused = 0
    for row in history.mirror:
        attempts = rows.get(row.id, [])
        live_until = _live_until(history, row)
        mine = [
            (at, how) for at, how in resumes.get(row.name, []) if row.created <= at < live_until
        ]
        for index, (at, how) in enumerate(mine):
            following = mine[index + 1][0] if index + 1 < len(mine) else live_until
            after = [a for a in attempts if at <= a.started < following]
            if not after:
                unjudged += 1
                continue
            finding.checked += 1
            _count_restarted(history, row, at, how, after, finding)
            if _regression_present(history, served, row, at):
                repaused += _paused_again(history, row, at, how, attempts, following, finding)
    finding.notes.append(
        f"{sum(len(v) for v in resumes.values())} resumes by a person; {repaused} regressions "
        f"still present paused again in time; {unjudged} resumes without a later attempt"
    )


def _count_restarted(
    history: History, row: MirrorRow, at: float, how: str, after: list[Attempt], finding: Finding
) -> None:
    """(a) The first attempt after the resume counts from 0; (b) no pause before the limit."""
    seeing = [a for a in after if a.error_reason not in CUT_SHORT]
    if not seeing:
        return
    first = seeing[0]
    allowed = 1 if first.outcome == "Fail" else 0
    if first.failures_after > allowed:
        finding.violate(
            f"{row.name}: resumed ({how}) at {at - history.started:.1f} s, the next attempt at "
            f"{first.started - history.started:.1f} s counted {first.failures_after} failures"
        )
    fails = 0
    for attempt in after:
        fails += attempt.outcome == "Fail"
        if not attempt.paused:
            continue
        if fails < row.failure_limit:
            finding.violate(
                f"{row.name}: resumed ({how}) at {at - history.started:.1f} s, paused again at "
                f"{attempt.started - history.started:.1f} s after {fails} failed attempts "
                f"(limit {row.failure_limit})"
            )
        return


def _regression_present(history: History, served: _Served, row: MirrorRow, at: float) -> bool:
    """Whether a scripted regression was visible, and stays, when the person resumed."""
    plan = history.plans.get(row.name) or {}
    if plan.get("kind") != TruthKind.REGRESSING.value:
        return False
    regressed = served.first_at(row.name, FAILING)
    return regressed is not None and regressed + SCRAPE_LAG <= at


def _paused_again(
    history: History,
    row: MirrorRow,
    at: float,
    how: str,
    attempts: list[Attempt],
    following: float,
    finding: Finding,
) -> int:
    """(c) A regression still present pauses again within (failureLimit + 1) intervals.

    After ``kubectl rollout resume`` one interval more: the attempt that sees the target
    running again acknowledges the resume and never pauses (``sentinel_core.decision``),
    whereas the REST API's resume has reset the count in the status already.
    """
    extra = 1 if how == FaultKind.RESUME_KUBECTL.value else 0
    deadline = _regression_deadline(at, row, history.faults, attempts, extra=extra)
    resets = [
        t
        for t, action, name in history.actions
        if name == row.name and action in ("edit-analysis", "recreate-target") and at < t
    ]
    if deadline >= min(following, history.ended, *resets, _live_until(history, row)):
        return 0  # resumed again, edited or ended before the deadline: not judged
    finding.checked += 1
    if any(a.paused and at <= a.started <= deadline for a in attempts):
        return 1
    finding.violate(
        f"{row.name}: regression still present when resumed ({how}) at "
        f"{at - history.started:.1f} s (limit {row.failure_limit}, interval "
        f"{row.interval:.0f} s), not paused again by {deadline - history.started:.1f} s"
    )
    return 0
