"""Invariant 8 and the person lane: a person's resume is judged, never mistaken for the operator's.

Pure, like ``test_invariants``: a hand-built ``History`` of one regressing analysis (interval
10 s, failureLimit 2, failing from 30 s, paused at 51 s) that a person resumes at 105 s.
"""

from __future__ import annotations

from bench.soak_invariants import check_all
from bench.soak_plan import COMPACT, FAILING, HEALTHY, FaultKind, draw_plan
from bench.soak_record import Attempt, ClusterSample, FaultRecord, History, MirrorRow, TruthChange

T0 = 1_000_000.0
RESUMED = 105.0


def _history(after: list[tuple[int, bool]], how: str = "resume-api") -> History:
    """``after``: (failures counted, paused) of the Fail attempts from 111 s, every 10 s."""
    # The run ends 5 s after the last attempt: every due time was met.
    history = History("soak", started=T0, ended=T0 + 111 + 10 * len(after))
    history.mirror = [MirrorRow(1, "soak", "a", "uid-a", 10.0, 2, False, T0, None)]
    history.plans = {"a": {"kind": "regressing"}}
    history.truths = [TruthChange(T0, "a", HEALTHY), TruthChange(T0 + 30, "a", FAILING)]
    rows = [(at, "Pass", 0, False) for at in (1, 11, 21, 31)]
    rows += [(41, "Fail", 1, False), (51, "Fail", 2, True), (61, "Fail", 3, False)]
    rows += [(at, "Fail", n, False) for at, n in ((71, 4), (81, 5), (91, 6), (101, 7))]
    rows += [(111 + 10 * i, "Fail", n, p) for i, (n, p) in enumerate(after)]
    history.attempts = [
        Attempt(
            i, 1, T0 + at, T0 + at + 0.1, 1, outcome, n, "", paused, (FAILING if n else HEALTHY,)
        )
        for i, (at, outcome, n, paused) in enumerate(rows)
    ]
    last = rows[-1][2]
    history.final_statuses = {"a": ("uid-a", {"failures": last, "lastVerdict": "Fail"})}
    history.faults = [FaultRecord(how, T0 + RESUMED - 0.5, T0 + RESUMED, analysis="a")]
    history.actions = [(T0 + RESUMED, how, "a")]
    repaused = next((111 + 10 * i for i, (_, p) in enumerate(after) if p), None)
    history.samples = [
        ClusterSample(T0 + at, {}, {"a": ("dep", repaused is not None and at > repaused, "soak/a")})
        for at in range(110, int(history.ended - T0), 5)
    ]
    history.samples.insert(0, ClusterSample(T0 + 100, {}, {"a": ("dep", True, "soak/a")}))
    return history


def _violations(history: History) -> dict[int, list[str]]:
    return {f.number: f.violations for f in check_all(history) if f.violations}


def test_a_resume_that_restarts_the_count_and_pauses_again_in_time_holds() -> None:
    history = _history([(1, False), (2, True), (3, False)])
    assert _violations(history) == {}
    eight = next(f for f in check_all(history) if f.number == 8)
    assert eight.checked == 2 and "1 regressions still present paused again" in eight.notes[0]
    # Without the person's resume, the Deployment running again is the operator's doing.
    history.faults, history.actions = [], []
    assert 3 in _violations(history)


def test_a_count_the_resume_did_not_clear_is_a_violation() -> None:
    history = _history([(8, False), (9, False), (10, False)])
    assert "counted 8 failures" in " ".join(_violations(history)[8])


def test_pausing_again_before_failure_limit_more_failures_is_a_violation() -> None:
    history = _history([(1, True), (2, False)])
    assert "after 1 failed attempts (limit 2)" in " ".join(_violations(history)[8])


def test_a_regression_still_present_must_pause_again_in_time() -> None:
    never = _history([(n, False) for n in range(1, 12)])
    assert "not paused again" in " ".join(_violations(never)[8])
    # After kubectl rollout resume, one interval more: the attempt that sees it never pauses.
    late = [(1, False), (2, False), (3, False), (4, True)]
    assert 8 in _violations(_history(late, "resume-api"))
    assert 8 not in _violations(_history(late, "resume-kubectl"))


def test_the_person_lane_leaves_the_other_lanes_of_a_seed_unchanged() -> None:
    plan = draw_plan(12, analyses=16, seconds=180, settle=70, intervals=(5, 10), pace=COMPACT)
    person = [f for f in plan.faults if f.kind.value.startswith("resume-")]
    assert {f.kind for f in person} == {FaultKind.RESUME_API, FaultKind.RESUME_KUBECTL}
    assert all(f.at >= COMPACT.person_first for f in person)
    # Seed 12's other faults, as the short soak test had them before the person lane existed.
    others = [(f.kind.value, f.at) for f in plan.faults if f not in person]
    assert len(others) == 19 and others[:3] == [
        ("receiver-500", 22.5),
        ("kubectl-delete-target", 23.6),
        ("prometheus-html", 23.9),
    ]


def _recreated_then_resumed(*, resumed: bool) -> History:
    """Seed 12's red run (issue 23), as recorded: s0014 deleted at 87.2 s and created again at
    91.6 s (its Deployment still paused under its name), a Fail at 91.7 s (failures 1), a
    person's resume through the API at 93.8 s, then a worker killed mid-query at 99 s: the
    reconcile it held keeps s0014 claimed for 120 s, past the end of the run at 187 s."""
    history = History("soak", started=T0, ended=T0 + 187)
    history.mirror = [
        MirrorRow(1, "soak", "s0014", "uid-old", 5.0, 2, False, T0 + 1, T0 + 87.2),
        MirrorRow(2, "soak", "s0014", "uid-new", 5.0, 2, False, T0 + 91.6, None),
    ]
    history.plans = {"s0014": {"kind": "regressing"}}
    history.truths = [TruthChange(T0, "s0014", HEALTHY), TruthChange(T0 + 60, "s0014", FAILING)]
    old = [(at, "Pass", 0, False) for at in range(2, 62, 5)]
    old += [(62, "Fail", 1, False), (67, "Fail", 2, True)]
    old += [(at, "Fail", n, False) for n, at in enumerate(range(72, 87, 5), start=3)]
    history.attempts = [
        Attempt(
            i, 1, T0 + at, T0 + at + 0.1, 1, outcome, n, "", paused, (FAILING if n else HEALTHY,)
        )
        for i, (at, outcome, n, paused) in enumerate(old)
    ]
    history.attempts.append(
        Attempt(99, 2, T0 + 91.7, T0 + 91.9, 1, "Fail", 1, "", False, (FAILING,))
    )
    history.actions = [
        (T0 + 87.2, "delete-analysis", "s0014"),
        (T0 + 91.6, "create-analysis", "s0014"),
    ]
    history.faults = [
        FaultRecord("kubectl-delete-analysis", T0 + 87.2, T0 + 91.6, analysis="s0014"),
        FaultRecord("worker-kill", T0 + 99.0, T0 + 99.0, blocks_until=T0 + 219.0, detail="pid 1"),
    ]
    if resumed:
        history.faults.append(FaultRecord("resume-api", T0 + 93.3, T0 + 93.8, analysis="s0014"))
        history.actions.append((T0 + 93.8, "resume-api", "s0014"))
    history.samples = [
        ClusterSample(T0 + at, {}, {"s0014": ("dep", at < 93.8 or not resumed, "soak/s0014")})
        for at in range(70, 187, 5)
    ]
    history.final_statuses = {
        "s0014": ("uid-new", {"failures": 0 if resumed else 1, "lastVerdict": "Fail"})
    }
    return history


def test_a_resume_through_the_api_after_the_last_attempt_is_the_last_decision() -> None:
    history = _recreated_then_resumed(resumed=True)
    assert 6 not in _violations(history)
    six = next(f for f in check_all(history) if f.number == 6)
    assert six.checked == 1 and six.notes[0].startswith("1 analyses whose last status write")
    # The same status without the person's resume is a lost write.
    lost = _recreated_then_resumed(resumed=False)
    lost.final_statuses["s0014"][1]["failures"] = 0
    assert "status says failures 0" in " ".join(_violations(lost)[6])
    # And a resume whose reset the next evaluation overwrote is lost too.
    history.final_statuses["s0014"][1]["failures"] = 1
    assert "a person's resume after it 0" in " ".join(_violations(history)[6])


def test_a_resume_before_the_last_attempt_leaves_the_status_to_that_attempt() -> None:
    history = _recreated_then_resumed(resumed=True)
    history.attempts.append(
        Attempt(100, 2, T0 + 99.5, T0 + 99.7, 1, "Fail", 1, "", False, (FAILING,))
    )
    assert "status says failures 0" in " ".join(_violations(history)[6])
    history.final_statuses["s0014"][1]["failures"] = 1
    assert 6 not in _violations(history)
