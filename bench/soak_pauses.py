"""Invariant 2: no pause without failureLimit real failures; every regression paused in time.

Registered by ``bench.soak_invariants`` (imported at its end); definitions in
``docs/reliability.md``.
"""

from __future__ import annotations

from collections import defaultdict

from bench.soak_invariants import (
    SCRAPE_LAG,
    Finding,
    _by_analysis,
    _live_until,
    _regression_deadline,
    _Served,
    _truth_window,
    _value_failing,
    invariant,
    person_resumes,
)
from bench.soak_plan import (
    FAILING,
    TruthKind,
)
from bench.soak_record import Attempt, History


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
        paused_in_time = any(start - SCRAPE_LAG <= p <= deadline for p in pauses)
        if not paused_in_time and not _held_paused(history, row.name, start, deadline):
            first = f"{pauses[0] - history.started:.1f} s" if pauses else "never"
            finding.violate(
                f"{row.name}: regression visible at {start - history.started:.1f} s "
                f"(limit {row.failure_limit}, interval {row.interval:.0f} s) not paused by "
                f"{deadline - history.started:.1f} s; first pause {first}"
            )
    finding.notes.append(
        f"{judged} regressions judged for timeliness, {late_checks} too close to the end to judge"
    )


def _held_paused(history: History, name: str, start: float, end: float) -> bool:
    """Whether Deployment ``name`` was seen paused in every cluster sample of [start, end].

    An analysis deleted and created again finds its target still paused by the incarnation
    before it (nobody resumed it): the rollout is held, and there is nothing left to pause.
    """
    seen = [
        sample.deployments[name][1]
        for sample in history.samples
        if start <= sample.at <= end and name in sample.deployments
    ]
    return bool(seen) and all(seen)
