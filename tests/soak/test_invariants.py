"""The soak's invariant checks (``bench.soak_invariants``) catch what they are meant to catch.

Pure: each test builds a small ``History`` by hand, as a run would have recorded it, and checks
that a healthy history passes and that each kind of wrong behaviour is a violation.
"""

from __future__ import annotations

from bench.soak_invariants import INVARIANTS, check_all
from bench.soak_plan import FAILING, HEALTHY
from bench.soak_record import (
    Attempt,
    ClusterSample,
    FaultRecord,
    History,
    MirrorRow,
    ProcessMemory,
    RssSample,
    TruthChange,
)

T0 = 1_000_000.0


def _history(*, regress_at: float | None = 30.0, limit: int = 2) -> History:
    history = History("soak", started=T0, ended=T0 + 300)
    history.mirror = [MirrorRow(1, "soak", "a", "uid-a", 10.0, limit, False, T0, None)]
    history.plans = {"a": {"kind": "regressing"}}
    history.truths = [TruthChange(T0, "a", HEALTHY)]
    if regress_at is not None:
        history.truths.append(TruthChange(T0 + regress_at, "a", FAILING))
    return history


def _attempt(
    pk: int, at: float, outcome: str, failures: int, *, paused: bool = False, value: float = 0.1
) -> Attempt:
    reason = "MetricsUnavailable" if outcome == "Error" else ""
    values = (None,) if outcome == "Error" else (value,)
    return Attempt(pk, 1, T0 + at, T0 + at + 0.1, 1, outcome, failures, reason, paused, values)


def _healthy_regression(history: History) -> None:
    """Every 10 s; failing from 30 s; paused at the 2nd failure; status agrees at the end."""
    rows = []
    failures = 0
    for index, at in enumerate(range(1, 300, 10)):
        failing = at >= 41
        failures = failures + 1 if failing else 0
        rows.append(
            _attempt(
                index,
                at,
                "Fail" if failing else "Pass",
                failures,
                paused=failures == 2,
                value=FAILING if failing else HEALTHY,
            )
        )
    history.attempts = rows
    history.final_statuses = {"a": ("uid-a", {"failures": failures, "lastVerdict": "Fail"})}


def _violations(history: History) -> dict[int, list[str]]:
    return {f.number: f.violations for f in check_all(history) if f.violations}


def test_the_registry_holds_the_invariants_in_order() -> None:
    assert sorted(INVARIANTS) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_a_healthy_history_has_no_violation() -> None:
    history = _history()
    _healthy_regression(history)
    assert _violations(history) == {}


def _passing_with_gap(gap: tuple[float, float]) -> History:
    """A healthy analysis evaluated every 10 s, with no attempt inside ``gap``."""
    history = _history(regress_at=None)
    history.plans = {"a": {"kind": "healthy"}}
    history.attempts = [
        _attempt(index, at, "Pass", 0)
        for index, at in enumerate(range(1, 300, 10))
        if not gap[0] < at < gap[1]
    ]
    history.final_statuses = {"a": ("uid-a", {"failures": 0, "lastVerdict": "Pass"})}
    return history


def test_a_gap_without_a_fault_is_a_dropped_due_time() -> None:
    assert _violations(_passing_with_gap((0, 0))) == {}
    # Due at 111 s; max(interval, 60 s) later nothing had started.
    assert 1 in _violations(_passing_with_gap((105, 200)))


def test_a_blocking_fault_excuses_the_gap_until_it_ends_plus_the_bound() -> None:
    history = _passing_with_gap((105, 200))
    history.faults = [FaultRecord("database-restart", T0 + 95, T0 + 100, T0 + 145)]
    assert 1 not in _violations(history)
    history.faults = [FaultRecord("database-restart", T0 + 95, T0 + 100, T0 + 120)]
    assert 1 in _violations(history)


def test_a_failure_counted_during_an_outage_is_a_violation() -> None:
    history = _history(regress_at=None)
    history.plans = {"a": {"kind": "healthy"}}
    history.attempts = [
        _attempt(0, 1, "Pass", 0),
        _attempt(1, 11, "Error", 1),
        _attempt(2, 21, "Pass", 0),
    ]
    history.ended = T0 + 25
    history.final_statuses = {"a": ("uid-a", {"failures": 0, "lastVerdict": "Pass"})}
    assert 4 in _violations(history)


def test_a_fail_the_truth_does_not_explain_is_a_violation() -> None:
    history = _history(regress_at=None)
    history.plans = {"a": {"kind": "healthy"}}
    history.attempts = [_attempt(0, 1, "Fail", 1, value=FAILING), _attempt(1, 11, "Pass", 0)]
    history.ended = T0 + 15
    history.final_statuses = {"a": ("uid-a", {"failures": 0, "lastVerdict": "Pass"})}
    assert 4 in _violations(history)


def test_a_pause_before_the_limit_or_never_is_a_violation() -> None:
    early = _history()
    _healthy_regression(early)
    first_fail = next(i for i, a in enumerate(early.attempts) if a.outcome == "Fail")
    a = early.attempts[first_fail]
    early.attempts[first_fail] = Attempt(
        a.id, 1, a.started, a.finished, 1, "Fail", 1, "", True, a.values
    )
    assert 2 in _violations(early)

    never = _history()
    _healthy_regression(never)
    never.attempts = [
        Attempt(a.id, 1, a.started, a.finished, 1, a.outcome, a.failures_after, "", False, a.values)
        for a in never.attempts
    ]
    assert 2 in _violations(never)


def test_a_deployment_running_again_without_a_person_is_a_violation() -> None:
    history = _history()
    _healthy_regression(history)
    history.samples = [
        ClusterSample(T0 + 100, {}, {"a": ("dep-uid", True, "soak/a")}),
        ClusterSample(T0 + 105, {}, {"a": ("dep-uid", False, "")}),
    ]
    assert 3 in _violations(history)
    # A Deployment deleted and created again is a new object, not a resume.
    history.samples[1] = ClusterSample(T0 + 105, {}, {"a": ("new-uid", False, "")})
    assert 3 not in _violations(history)


def test_a_status_that_is_not_the_last_decision_is_a_violation() -> None:
    history = _history()
    _healthy_regression(history)
    history.final_statuses = {"a": ("uid-a", {"failures": 0, "lastVerdict": "Pass"})}
    assert 6 in _violations(history)


def test_database_is_locked_in_a_log_is_a_violation() -> None:
    history = _history()
    _healthy_regression(history)
    history.logs = {"operator-0": "ok\ndjango.db.utils.OperationalError: database is locked\n"}
    assert 7 in _violations(history)


def test_a_traceback_in_a_log_is_a_violation_counted_once_per_record() -> None:
    history = _history()
    _healthy_regression(history)
    chained = (
        "ERROR dispatcher: pass failed\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in f\npsycopg.OperationalError: refused\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "y.py", line 2, in g\n'
        "django.db.utils.OperationalError: refused\n"
    )
    history.logs = {"operator-0": chained, "operator-1": "ERROR pass failed: the database is"}
    violations = _violations(history)[7]
    assert violations == [
        "operator-0: 1 tracebacks in the log; 1 x django.db.utils.OperationalError: refused"
    ]


def test_each_operator_process_s_private_memory_is_reported_on_its_own() -> None:
    history = _history()
    _healthy_regression(history)
    tree = [(100, 0), (101, 1), (102, 2)]
    history.rss = [
        RssSample(
            T0 + minute * 60,
            {"operator-0": 300.0},
            {"operator-0": 200.0 + minute},
            {"operator-0": 100},
            # The worker (102) grows 5 MB a minute; the others stay.
            {
                "operator-0": tuple(
                    ProcessMemory(pid, depth, 100.0, 60.0, 40.0 + (pid == 102) * 5.0 * minute)
                    for pid, depth in tree
                )
            },
        )
        for minute in range(5)
    ]
    notes = next(f.notes for f in check_all(history) if f.number == 7)
    assert "operator-0 pid 100 (operator): private 40 -> 40 MB over 4.0 min, PSS 60 MB" in notes
    # And what each held when the tree's sum peaked (the last sample here).
    assert (
        "at the operators' PSS peak (240 s): operator-0 100/0: PSS 60 private 40, "
        "101/1: PSS 60 private 40, 102/2: PSS 60 private 60"
    ) in notes
    assert (
        "operator-0 pid 102 (django-q2 worker, monitor or pusher): private 40 -> 60 MB over "
        "4.0 min, PSS 60 MB"
    ) in notes


def test_a_regression_may_wait_out_a_fault_but_not_longer() -> None:
    """Failing from 30 s (visible at 40 s), limit 2, interval 10: paused by 70 s, or by 70 s
    plus what a fault cost this analysis (its start to the first attempt after it ended)."""
    history = _history()
    history.ended = T0 + 400
    pause_at = 140.0
    rows, failures = [], 0
    for index, at in enumerate(range(1, 400, 10)):
        outage = 50 < at < 140
        failing = at >= 41
        if outage:
            rows.append(_attempt(index, at, "Error", failures))
            continue
        failures = failures + 1 if failing else 0
        rows.append(
            _attempt(
                index,
                at,
                "Fail" if failing else "Pass",
                failures,
                paused=at == pause_at + 1,
                value=FAILING if failing else HEALTHY,
            )
        )
    history.attempts = rows
    history.final_statuses = {"a": ("uid-a", {"failures": failures, "lastVerdict": "Fail"})}
    assert 2 in _violations(history)
    # Prometheus down from 50 s to 140 s: the analysis' next attempt is at 141 s.
    history.faults = [FaultRecord("prometheus-502", T0 + 50, T0 + 140)]
    assert 2 not in _violations(history)


def test_a_stale_answer_right_after_a_prometheus_restart_is_explained_by_the_truth() -> None:
    """Prometheus stopped at 20 s (last scrape: 0.9), the truth turned 0.1 at 21 s, Prometheus
    back at 30 s answers its pre-stop sample at 31 s: a real Prometheus answer, not a wrong
    count (seen in the 12-minute run of docs/reliability.md)."""
    history = _history(regress_at=None)
    history.plans = {"a": {"kind": "flapping"}}
    history.truths = [TruthChange(T0, "a", FAILING), TruthChange(T0 + 21, "a", HEALTHY)]
    history.attempts = [
        _attempt(0, 1, "Fail", 1, value=FAILING),
        _attempt(1, 11, "Fail", 2, value=FAILING),
        _attempt(2, 20.5, "Error", 2),
        _attempt(3, 31, "Fail", 3, value=FAILING),
        _attempt(4, 41, "Pass", 0),
    ]
    history.ended = T0 + 45
    history.final_statuses = {"a": ("uid-a", {"failures": 0, "lastVerdict": "Pass"})}
    assert 4 in _violations(history)
    history.faults = [FaultRecord("prometheus-stopped", T0 + 20, T0 + 30)]
    assert _violations(history) == {}


# -- invariant 5 and the new truths --------------------------------------------------------------


def _delivery(pk: int, at: float, state: str, tries: int = 1, event: str = "Paused") -> dict:
    from datetime import UTC, datetime

    when = datetime.fromtimestamp(T0 + at, UTC).replace(microsecond=0)
    return {
        "id": pk,
        "key": f"uid-a/{event}@{when:%Y-%m-%dT%H:%M:%SZ}/soak-hook",
        "analysis_id": 1,
        "name": "a",
        "event": event,
        "transition_at": when,
        "created_at": when,
        "state": state,
        "attempts": tries,
    }


def _try(delivery: int, at: float, ok: bool) -> dict:
    from datetime import UTC, datetime

    started = datetime.fromtimestamp(T0 + at, UTC)
    return {"delivery_id": delivery, "started_at": started, "ok": ok, "error": ""}


def _arrival(row: dict, at: float, status: int = 200) -> tuple[float, int, str, str]:
    title = f"Rollout Sentinel: {row['event']} — soak/a"
    body = f"why\n\n{row['event']} at {row['transition_at']:%Y-%m-%d %H:%M:%S} UTC. Analysis: x"
    return (T0 + at, status, title, body)


def _notified(*, sends: int = 1, state: str = "sent") -> History:
    """The healthy regression (paused at 51 s) with its one Paused delivery."""
    history = _history()
    _healthy_regression(history)
    row = _delivery(1, 51.0, state)
    history.notifications = {
        "notifications_delivery": [row],
        "notifications_deliveryattempt": [_try(1, 52.0, state == "sent")],
    }
    history.received = [_arrival(row, 52.0 + n) for n in range(sends)]
    return history


def test_one_message_per_pause_holds_and_a_duplicate_or_a_loss_does_not() -> None:
    assert _violations(_notified()) == {}
    assert 5 in _violations(_notified(sends=2))
    assert 5 in _violations(_notified(sends=0))


def test_a_pause_without_its_delivery_row_is_a_violation() -> None:
    history = _notified()
    history.notifications["notifications_delivery"] = []
    history.received = []
    assert 5 in _violations(history)


def test_a_delivery_failed_only_while_the_receiver_was_down() -> None:
    history = _notified(sends=0, state="failed")
    row = history.notifications["notifications_delivery"][0]
    row["attempts"] = 4
    history.notifications["notifications_deliveryattempt"] = [
        _try(1, at, False) for at in (52.0, 54.0, 58.0, 66.0)
    ]
    assert 5 in _violations(history)  # the receiver was up: a failure is not explained
    history.faults.append(FaultRecord("receiver-500", T0 + 50.0, T0 + 70.0))
    assert 5 not in _violations(history)


def test_a_fail_under_the_minsamples_minimum_is_a_violation() -> None:
    history = _history()
    _healthy_regression(history)
    history.plans["a"]["min_samples"] = 100.0
    history.truths.append(TruthChange(T0, "a-samples", 20.0))
    assert 4 in _violations(history)
    history.truths.append(TruthChange(T0 + 35.0, "a-samples", 500.0))
    assert 4 not in _violations(history)


def test_a_window_pause_needs_failure_limit_real_failures_in_the_window() -> None:
    # Flapping every 10 s, window 4, limit 2: Fail, Pass, Fail pauses on the second Fail.
    history = _history(regress_at=None)
    history.plans = {"a": {"kind": "flapping-window", "failure_window": 4}}
    history.truths = [
        TruthChange(T0 + at, "a", FAILING if (at // 10) % 2 == 0 else HEALTHY)
        for at in range(0, 300, 10)
    ]
    rows = [
        _attempt(1, 1, "Fail", 1, value=FAILING),
        _attempt(2, 11, "Pass", 1),
        _attempt(3, 21, "Fail", 2, paused=True, value=FAILING),
    ]
    history.attempts = rows
    history.final_statuses = {"a": ("uid-a", {"failures": 2, "lastVerdict": "Fail"})}
    assert 2 not in _violations(history)
    # The same pause with only one Fail in the window.
    history.attempts = [rows[1], _attempt(3, 21, "Fail", 2, paused=True, value=FAILING)]
    assert 2 in _violations(history)
