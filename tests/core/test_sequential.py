"""Sequential judgment's pure core: the e-process, its state in the status, verdicts, messages.

The numbers are checked against independent arithmetic (SciPy's binomial pmf, exact
expectations over every outcome, a numeric integral over a continuous prior); the false-pause
rates of whole rollouts are measured in bench/sequential_calibration.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from sentinel_core.conditions import Verdict
from sentinel_core.metric_kinds.sequential import (
    GRID,
    Settings,
    Side,
    State,
    Step,
    advance,
    begin,
    fresh,
    grid,
    judge_sequential,
    key_of,
    log_ratios,
)

SINCE = "2026-12-03T10:02:00Z"

counts = st.integers(min_value=0, max_value=5_000)


@st.composite
def steps(draw: st.DrawFn, share: tuple[int, int] | None = None) -> Step:
    """Draw one step; with ``share`` both sides' totals are fixed (an equal share)."""
    new_total, old_total = share or (draw(counts), draw(counts))
    new_bad = draw(st.integers(0, new_total))
    old_bad = draw(st.integers(0, old_total))
    return Step(Side(new_bad, new_total), Side(old_bad, old_total), "2026-12-03T10:03:00Z")


margins = st.sampled_from([0.0, 0.1, 0.25, 1.0])


def test_evidence_is_one_with_no_data() -> None:
    state = fresh("hash-1", SINCE)
    assert state.evidence == 1.0
    assert advance(state, [], Settings()).evidence == 1.0
    # A step without events on a side, or without bad events, carries no evidence either.
    empty = [Step(Side(0, 0), Side(5, 100), "t"), Step(Side(0, 100), Side(0, 100), "t")]
    assert advance(state, empty, Settings()).evidence == pytest.approx(1.0, abs=1e-5)


@given(st.lists(steps(), max_size=30), margins)
@settings(max_examples=60, deadline=None)
def test_evidence_is_never_negative_and_finite(batch: list[Step], margin: float) -> None:
    state = advance(fresh("h", SINCE), batch, Settings(max_increase=margin))
    assert 0 <= state.evidence < math.inf
    assert state.steps == len(batch)


@given(st.lists(steps(share=(1_000, 3_000)), min_size=2, max_size=20), margins, st.randoms())
@settings(max_examples=60, deadline=None)
def test_the_order_of_steps_does_not_change_the_evidence_when_shares_are_equal(
    batch: list[Step], margin: float, rnd: object
) -> None:
    shuffled = list(batch)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    config = Settings(max_increase=margin)
    one = advance(fresh("h", SINCE), batch, config)
    other = advance(fresh("h", SINCE), shuffled, config)
    # The log ratios are rounded (down) to 1e-6 per step in the status: at most 20 of them.
    assert math.isclose(one.evidence, other.evidence, rel_tol=1e-4, abs_tol=1e-12)
    # ... and equal the single step with the summed counts (the counts are sufficient).
    summed = Step(
        Side(sum(s.new.bad for s in batch), sum(s.new.total for s in batch)),
        Side(sum(s.old.bad for s in batch), sum(s.old.total for s in batch)),
        "t",
    )
    whole = advance(fresh("h", SINCE), [summed], config)
    assert math.isclose(one.evidence, whole.evidence, rel_tol=1e-4, abs_tol=1e-12)


@given(st.lists(steps(), min_size=1, max_size=10), st.text(min_size=1, max_size=8))
@settings(max_examples=40, deadline=None)
def test_a_new_key_starts_afresh_and_the_same_key_continues(batch: list[Step], key: str) -> None:
    # begin is what the kind's measuring and judge continue the evidence from (moved here from
    # the removed sequential.resume, which only the tests called).
    now = datetime(2026, 12, 3, 11, 0, tzinfo=UTC)
    started = datetime(2026, 12, 3, 10, 2, tzinfo=UTC)
    state = advance(fresh(key_of("rollout-a", 1), SINCE), batch, Settings())
    same = {"rollout_start": started, "resumed_at": None, "now": now}
    again = begin(state, new_hash="rollout-a", generation=1, **same)
    assert again is state
    # A new rollout, a spec edit or a resume changes the key: nothing is carried over.
    other = begin(state, new_hash="rollout-a" + key, generation=1, **same)
    assert other == fresh(key_of("rollout-a" + key, 1), SINCE)
    assert other.evidence == 1.0 and other.new_total == 0 and other.steps == 0
    edited = begin(state, new_hash="rollout-a", generation=2, **same)
    assert edited == fresh(key_of("rollout-a", 2), "2026-12-03T11:00:00Z")
    assert begin(None, new_hash="k", generation=1, **same) == fresh(key_of("k", 1), SINCE)


@given(st.lists(steps(), max_size=15), margins)
@settings(max_examples=60, deadline=None)
def test_the_state_round_trips_through_the_status_dict(batch: list[Step], margin: float) -> None:
    config = Settings(max_increase=margin, metrics=3, false_pause_rate=0.01)
    state = advance(fresh("h", SINCE), batch, config)
    raw = json.loads(json.dumps(state.to_dict(config.needed)))
    assert State.from_dict(raw) == state
    assert raw["needed"] == 300
    expected = {"evidence", "needed", "ratio", "newBad", "newTotal", "oldBad", "oldTotal"}
    assert expected | {"since", "through"} <= set(raw)
    assert len(raw["logRatios"]) in (0, GRID)


@pytest.mark.parametrize(
    "broken",
    [
        None,
        [],
        {"key": "k", "since": SINCE},
        {**fresh("k", SINCE).to_dict(20), "newBad": -1},
        {**fresh("k", SINCE).to_dict(20), "logRatios": [0.0, 1.0]},
        {**fresh("k", SINCE).to_dict(20), "logRatios": ["x"] * GRID},
        {**fresh("k", SINCE).to_dict(20), "dispersion": None},
        {**fresh("k", SINCE).to_dict(20), "steps": "3"},
        {**fresh("k", SINCE).to_dict(20), "oldPods": -1},
        {**fresh("k", SINCE).to_dict(20), "perPod": "yes"},
    ],
)
def test_a_malformed_status_reads_as_no_state(broken: object) -> None:
    assert State.from_dict(broken) is None


def _state_with_evidence(evidence: float, old_pods: int = 4, **counts: float) -> State:
    return State(
        key="k",
        since=SINCE,
        through="2026-12-03T10:30:00Z",
        log_ratios=(math.log(evidence),) * GRID,
        old_pods=old_pods,
        **counts,
    )


FIGURES = {"new_bad": 31, "new_total": 1200, "old_bad": 13, "old_total": 1210}


def test_the_message_names_the_ratio_the_counts_and_the_evidence() -> None:
    config = Settings(false_pause_rate=0.005)
    outcome = judge_sequential(
        config, _state_with_evidence(87, **FIGURES), rollout=True, old_side=True
    )
    assert outcome.verdict is Verdict.PASS
    assert outcome.message == (
        "new pods' error rate is 2.4 \u00d7 the old pods' (31 of 1,200 vs 13 of 1,210 requests "
        "since 10:02); evidence 87 of 200 needed: no evidence of harm so far"
    )


def _pods(*totals: float) -> Side:
    pods = tuple((t / 100, t) for t in totals)
    return Side(sum(b for b, _ in pods), sum(totals), pods)


def test_the_bound_is_stated_only_with_counts_per_pod_and_four_old_pods_when_counting_began() -> (
    None
):
    def state(*steps: Step) -> State:
        return advance(fresh("k", SINCE), steps, Settings())

    def step(new: Side, old: Side, minute: int) -> Step:
        return Step(new, old, f"2026-12-03T10:{minute:02d}:00Z")

    assert fresh("k", SINCE).guarantee == (
        "Conditional",
        "no step with events on both sides yet",
    )
    four = state(step(_pods(900), _pods(900, 800, 1000, 700), 3))
    assert four.guarantee == ("Stated", "") and four.old_pods == 4
    # Old pods leave as the rollout proceeds: what counted is how many there were at first.
    later = advance(four, [step(_pods(900, 900), _pods(1000), 4)], Settings())
    assert later.guarantee == ("Stated", "")
    # A step without events on a side decides nothing: the first with events on both does.
    idle = step(_pods(0), _pods(0, 0, 0, 0), 3)
    one = state(idle, step(_pods(500), _pods(500), 4))
    assert one.old_pods == 1 and one.guarantee == (
        "Conditional",
        "only 1 old pod when counting began, fewer than the 4 needed to estimate how much "
        "pods differ",
    )
    three = state(step(_pods(900), _pods(900, 800, 0, 1000), 3))
    assert three.guarantee[1].startswith("only 3 old pods when counting began")
    # Sums without a pod label, in any step with events: conditional for the whole rollout.
    sides = state(
        step(_pods(900), _pods(900, 800, 1000, 700), 3), step(Side(5, 900), Side(9, 3000), 4)
    )
    assert not sides.per_pod and sides.guarantee[1].startswith("the series have no pod label")
    # Kept in the status; a state written before they were kept is conditional.
    assert State.from_dict(json.loads(json.dumps(sides.to_dict(20)))) == sides
    old = {k: v for k, v in four.to_dict(20).items() if k not in ("oldPods", "perPod")}
    assert State.from_dict(old).guarantee[0] == "Conditional"  # type: ignore[union-attr]
    raw = four.to_dict(20)
    assert (raw["guarantee"], raw["guaranteeReason"], raw["oldPods"]) == ("Stated", "", 4)


def test_a_conditional_bound_is_said_in_the_message() -> None:
    two = _state_with_evidence(87, old_pods=2, **FIGURES)
    outcome = judge_sequential(Settings(false_pause_rate=0.005), two, rollout=True, old_side=True)
    assert outcome.message == (
        "new pods' error rate is 2.4 \u00d7 the old pods' (31 of 1,200 vs 13 of 1,210 requests "
        "since 10:02); evidence 87 of 200 needed (false-pause bound conditional: only 2 old pods "
        "when counting began, fewer than the 4 needed to estimate how much pods differ): no "
        "evidence of harm so far"
    )


def test_evidence_at_the_budget_fails() -> None:
    # Three sequential metrics share alpha = 0.05: each needs 3 / 0.05 = 60.
    config = Settings(max_increase=0.1, metrics=3, false_pause_rate=0.05)
    assert config.needed == 60
    failed = judge_sequential(
        config, _state_with_evidence(60, **FIGURES), rollout=True, old_side=True
    )
    assert failed.verdict is Verdict.FAIL
    assert failed.message.endswith("evidence 60 of 60 needed: worse than maxIncrease 10 % allows")
    below = judge_sequential(
        config, _state_with_evidence(59, **FIGURES), rollout=True, old_side=True
    )
    assert below.verdict is Verdict.PASS


def test_evidence_that_reached_the_budget_stays_a_fail_below_it() -> None:
    config = Settings(max_increase=0.1, metrics=3, false_pause_rate=0.05)
    dipped = replace(_state_with_evidence(59, **FIGURES), reached_at="2026-12-03T10:20:00Z")
    failed = judge_sequential(config, dipped, rollout=True, old_side=True)
    assert failed.verdict is Verdict.FAIL
    assert failed.message.endswith(
        "evidence 59 of 60 needed: it reached 60 at 10:20, worse than maxIncrease 10 % allows"
    )
    # Kept in the status, and read back as written.
    assert State.from_dict(json.loads(json.dumps(dipped.to_dict(60)))) == dipped
    assert State.from_dict({**dipped.to_dict(60), "reachedAt": 3}) is None
    assert "reachedAt" not in _state_with_evidence(59, **FIGURES).to_dict(60)


def test_huge_evidence_is_written_in_a_few_digits() -> None:
    # A clearly bad side's evidence grows geometrically: e^690 is a 300-digit number.
    config = Settings(false_pause_rate=0.05)
    failed = judge_sequential(
        config, _state_with_evidence(math.exp(690), **FIGURES), rollout=True, old_side=True
    )
    assert failed.verdict is Verdict.FAIL
    assert "evidence 4.6e+299 of 20 needed" in failed.message
    large = judge_sequential(
        config, _state_with_evidence(123_456, **FIGURES), rollout=True, old_side=True
    )
    assert "evidence 123,456 of 20 needed" in large.message


def test_nothing_to_compare_is_inconclusive_with_the_reason() -> None:
    config = Settings()
    state = _state_with_evidence(2, **FIGURES)
    no_rollout = judge_sequential(config, state, rollout=False, old_side=True)
    assert no_rollout.verdict is Verdict.INCONCLUSIVE
    assert "no rollout in progress" in no_rollout.missing
    no_old = judge_sequential(config, state, rollout=True, old_side=False)
    assert no_old.verdict is Verdict.INCONCLUSIVE
    assert "no old ReplicaSet has replicas" in no_old.missing
    for kind in ("StatefulSet", "DaemonSet"):
        held = judge_sequential(config, state, rollout=True, old_side=False, kind=kind)
        assert held.verdict is Verdict.INCONCLUSIVE
        assert f"no pods of the {kind} run an older controller revision" in held.missing
    few = _state_with_evidence(2, new_bad=1, new_total=99, old_bad=3, old_total=900)
    early = judge_sequential(config, few, rollout=True, old_side=True)
    assert early.verdict is Verdict.INCONCLUSIVE
    assert early.missing == (
        "no comparison yet: 99 requests on the new pods since 10:02, under minEvents 100"
    )


def test_a_ratio_without_old_bad_events_is_not_invented() -> None:
    state = _state_with_evidence(3, new_bad=4, new_total=500, old_bad=0, old_total=800)
    outcome = judge_sequential(Settings(), state, rollout=True, old_side=True)
    assert state.ratio is None
    assert outcome.message.startswith(
        "new pods' error rate against the old pods' (4 of 500 vs 0 of 800 requests"
    )
    assert state.to_dict(20)["ratio"] is None


# Independent arithmetic: SciPy's binomial pmf and integrators, not the module's formulas.


def _pi(rho: np.ndarray | float, share: float) -> np.ndarray:
    return np.asarray(rho) * share / (np.asarray(rho) * share + 1 - share)


def test_each_grid_point_is_the_binomial_likelihood_ratio_step_by_step() -> None:
    rng = np.random.default_rng(7)
    rho0 = 1.1
    config = Settings(max_increase=0.1)
    state = fresh("h", SINCE)
    expected = np.zeros(GRID)
    for share in np.linspace(0.1, 0.9, 9):
        n = int(rng.integers(100, 5000))
        m = int(n * (1 - share) / share)
        x, y = int(rng.integers(0, 40)), int(rng.integers(0, 40))
        state = advance(state, [Step(Side(x, n), Side(y, m), "t")], config)
        s = n / (n + m)
        expected += stats.binom.logpmf(x, x + y, _pi(grid(rho0), s)) - stats.binom.logpmf(
            x, x + y, _pi(rho0, s)
        )
    np.testing.assert_allclose(state.log_ratios, expected, atol=GRID * 1e-6)
    assert state.evidence == pytest.approx(np.exp(expected).mean(), rel=1e-4)


@pytest.mark.parametrize("bad", [1, 5, 40, 300])
@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_the_evidence_is_fair_at_the_margin_and_unfavourable_below_it(
    bad: int, share: float
) -> None:
    # E[evidence] over every outcome of one step: exactly 1 at rho = rho0 (a test martingale)
    # and below 1 for a better new side, which is why H0 may be rho <= rho0.
    rho0 = 1.25
    x = np.arange(bad + 1)
    n, m = 1000 * share, 1000 * (1 - share)
    logs = log_ratios(x, np.full(x.shape, n), bad - x, np.full(x.shape, m), rho0)
    evidence = np.exp(logs).mean(axis=-1)
    at_margin = (stats.binom.pmf(x, bad, _pi(rho0, share)) * evidence).sum()
    assert at_margin == pytest.approx(1.0, abs=1e-9)
    for better in (1.0, 0.5):
        below = (stats.binom.pmf(x, bad, _pi(better, share)) * evidence).sum()
        assert below < 1.0


def test_two_steps_with_a_ramping_share_stay_fair() -> None:
    # The supermartingale over two steps with different shares, summed over every outcome.
    rho0, bad = 1.0, (12, 9)
    shares = (0.2, 0.7)
    total = 0.0
    for x1 in range(bad[0] + 1):
        for x2 in range(bad[1] + 1):
            state = advance(
                fresh("h", SINCE),
                [
                    Step(Side(x1, 200), Side(bad[0] - x1, 800), "t"),
                    Step(Side(x2, 700), Side(bad[1] - x2, 300), "t"),
                ],
                Settings(max_increase=rho0 - 1),
            )
            p = stats.binom.pmf(x1, bad[0], shares[0]) * stats.binom.pmf(x2, bad[1], shares[1])
            total += p * state.evidence
    # Rounding the log ratios down (status) only lowers the evidence.
    assert total == pytest.approx(1.0, abs=1e-4) and total <= 1.0 + 1e-12


def test_the_grid_is_close_to_the_continuous_prior_it_discretises() -> None:
    # A log-uniform prior on (rho0, 10 rho0], integrated by quad, against the grid mixture.
    rho0, x, y, n, m = 1.1, 45, 30, 4000, 6000
    state = advance(fresh("h", SINCE), [Step(Side(x, n), Side(y, m), "t")], Settings(0.1))
    s = n / (n + m)

    def ratio(log_rho: float) -> float:
        rho = math.exp(log_rho)
        return float(
            np.exp(
                stats.binom.logpmf(x, x + y, _pi(rho, s))
                - stats.binom.logpmf(x, x + y, _pi(rho0, s))
            )
        )

    low, high = math.log(rho0), math.log(10 * rho0)
    integral, _ = integrate.quad(ratio, low, high, limit=200)
    continuous = integral / (high - low)
    assert state.evidence > 2
    assert state.evidence == pytest.approx(continuous, rel=0.1)


def test_over_dispersion_is_estimated_from_the_old_pods_and_tempers_the_evidence() -> None:
    rng = np.random.default_rng(3)
    kappa = 0.36  # per-pod CV 0.6, as the calibration's "pods" noise
    plain = fresh("h", SINCE)
    tempered = fresh("h", SINCE)
    for _ in range(40):
        requests = rng.poisson(2000, size=10).astype(float)
        rates = 0.01 * rng.gamma(1 / kappa, kappa, size=10)
        bad = rng.poisson(requests * rates).astype(float)
        new = Side(
            bad[:4].sum(), requests[:4].sum(), tuple(zip(bad[:4], requests[:4], strict=True))
        )
        old = Side(
            bad[4:].sum(), requests[4:].sum(), tuple(zip(bad[4:], requests[4:], strict=True))
        )
        plain = advance(
            plain, [Step(Side(new.bad, new.total), Side(old.bad, old.total), "t")], Settings()
        )
        tempered = advance(tempered, [Step(new, old, "t")], Settings())
    assert plain.kappa == 0
    assert tempered.kappa == pytest.approx(kappa, rel=0.4)
    # The same counts weigh less once the pods are known to wander.
    assert max(tempered.log_ratios) < max(plain.log_ratios) or plain.evidence < 1


def test_the_likelihood_ratio_reproduces_savvis_published_canary_example() -> None:
    # savvi's InhomogeneousPoissonProcess example (examples/InhomogeneousPoissonProcess.qmd in
    # assuncaolfi/savvi, Lindon & Malek's canary test): exposures rho = [0.8, 0.2], log-rate
    # effects [1.5, 2], 1,500 events drawn after np.random.seed(1), a Dirichlet(100 * rho)
    # prior; its published result is the first p <= 0.05 at n = 210, p = 0.045579631759249686.
    # Here the same Bayes factor is the module's likelihood ratio (at any rho, the new side's
    # share 0.2) integrated over that prior by SciPy's quad.
    exposure = np.array([0.8, 0.2])
    theta = exposure * np.exp([1.5, 2.0])
    theta /= theta.sum()
    draws = np.random.RandomState(1).multinomial(1, theta, size=1500)  # np.random.seed(1)
    share = 0.2

    def p_value(n: int) -> float:
        old, new = draws[:n].sum(axis=0)

        def integrand(pi: float) -> float:
            rho = pi * (1 - share) / (share * (1 - pi))
            log_ratio = log_ratios(new, share, old, 1 - share, 1.0, alternatives=np.array([rho]))
            return float(np.exp(log_ratio[0]) * stats.beta.pdf(pi, 100 * share, 100 * (1 - share)))

        factor, _ = integrate.quad(integrand, 0, 1, limit=200, epsabs=0, epsrel=1e-11)
        return 1 / factor

    assert p_value(210) == pytest.approx(0.045579631759249686, rel=1e-7)
    assert p_value(209) > 0.05


@given(
    st.integers(1, 10_000),
    st.integers(1, 10_000),
    st.integers(1, 400),
    margins,
)
@settings(max_examples=60, deadline=None)
def test_more_of_the_bad_events_on_the_new_side_is_more_evidence(
    new_total: int, old_total: int, bad: int, margin: float
) -> None:
    config = Settings(max_increase=margin)
    evidence = [
        advance(
            fresh("h", SINCE), [Step(Side(x, new_total), Side(bad - x, old_total), "t")], config
        ).evidence
        for x in range(0, bad + 1, max(1, bad // 20))
    ]
    assert all(b >= a * (1 - 1e-5) for a, b in pairwise(evidence))
