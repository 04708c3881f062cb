"""Pods that stay different, and the ratio's bounds: the product against SciPy.

docs/analysis.md ("Pods that stay different", "The ratio's bounds") derives both; here the
product's evidence and bounds are recomputed from the counts with SciPy's binomial and
chi-square, written independently of the product's arithmetic, and the bounds' coverage is
measured on simulated rollouts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from sentinel_core.metric_kinds.sequential import (
    BOUND_GRID,
    GRID,
    Settings,
    Side,
    Step,
    advance,
    fresh,
)

SINCE = "2026-12-03T10:02:00Z"


def _pi(ratio: float, share: float) -> float:
    return ratio * share / (ratio * share + 1 - share)


def _dispersion(bad: np.ndarray, total: np.ndarray) -> tuple[float, float]:
    """The pods' chi-square excess over its degrees of freedom, and its weight (SciPy)."""
    p = bad.sum() / total.sum()
    chi2 = stats.chisquare(bad, total * p * bad.sum() / (total * p).sum()).statistic / (1 - p)
    squares = (total**2).sum() / total.sum()
    return chi2 - (len(bad) - 1), p * (total.sum() - squares) / (1 - p)


def _rollout(seed: int, effects: np.ndarray, new_ratio: float, steps: int) -> list[Step]:
    """Steps of 4 old and 2 new named pods, each pod's rate its effect times 1 %."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(steps):
        requests = np.array([3000.0, 3000, 2000, 2000, 1000 + 200 * i, 1000 + 200 * i])
        rate = 0.01 * effects * np.array([1, 1, 1, 1, new_ratio, new_ratio])
        bad = rng.poisson(requests * rate).astype(float)
        old = Side(
            bad[:4].sum(),
            requests[:4].sum(),
            tuple(zip(bad[:4], requests[:4], strict=True)),
            ("old-a", "old-b", "old-c", "old-d"),
        )
        new = Side(
            bad[4:].sum(),
            requests[4:].sum(),
            tuple(zip(bad[4:], requests[4:], strict=True)),
            ("new-a", "new-b"),
        )
        out.append(Step(new, old, f"2026-12-03T10:{3 + i:02d}:00Z"))
    return out


def test_the_widened_evidence_is_scipys_binomial_mixture_against_the_moving_boundary() -> None:
    effects = np.array([0.7, 1.0, 1.3, 1.1, 1.2, 0.9])
    steps = _rollout(11, effects, 1.5, 12)
    settings = Settings(max_increase=0.2)
    state = advance(fresh("k", SINCE), steps, settings)
    # Independently: each old pod's sums, their chi-square, the widening, the tempering.
    sums_bad, sums_total = np.zeros(4), np.zeros(4)
    excess = weight = 0.0
    logs = np.zeros(GRID)
    relative = 10 ** (np.arange(1, GRID + 1) / GRID)
    for step in steps:
        old = np.array(step.old.pods)
        new = np.array(step.new.pods)
        sums_bad, sums_total = sums_bad + old[:, 0], sums_total + old[:, 1]
        spread_excess, spread_weight = _dispersion(sums_bad, sums_total)
        spread = max(0.0, spread_excess / spread_weight)
        pods_new = new[:, 1].sum() ** 2 / (new[:, 1] ** 2).sum()
        pods_old = old[:, 1].sum() ** 2 / (old[:, 1] ** 2).sum()
        inverse = 1 / pods_new + 1 / pods_old
        # Student's t at the old pods' sums' degrees of freedom (4 pods, equal traffic: 3),
        # one point of the budget for pod luck.
        freedom = max(sums_total.sum() ** 2 / (sums_total**2).sum() - 1, 3)
        widening = math.exp(stats.t.ppf(0.99, freedom) * math.sqrt(spread * inverse))
        step_excess, step_weight = _dispersion(old[:, 0], old[:, 1])
        excess, weight = excess + step_excess, weight + step_weight
        kappa = max(0.0, excess / weight)
        share = step.new.total / (step.new.total + step.old.total)
        x, b = int(step.new.bad), int(step.new.bad + step.old.bad)
        boundary = 1.2 * widening
        pi0 = _pi(boundary, share)
        phi = 1 + 2 * kappa * (b - 1) * pi0 * (1 - pi0) * inverse
        null = stats.binom.logpmf(x, b, pi0)
        logs += (
            stats.binom.logpmf(x, b, [_pi(boundary * r, share) for r in relative]) - null
        ) / phi
    assert state.widening == pytest.approx(widening, rel=1e-9)
    assert state.widening > 1.3  # old pods 0.7-1.3: a spread the margin must make room for
    assert state.evidence == pytest.approx(math.exp(logsumexp(logs) - math.log(GRID)), rel=1e-5)
    # The same counts with the old pods alike widen the margin far less.
    alike = advance(fresh("k", SINCE), _rollout(11, np.ones(6), 1.5, 12), settings)
    assert 1 <= alike.widening < state.widening


def test_the_bounds_are_scipys_two_one_sided_binomial_mixtures_on_the_grid() -> None:
    rng = np.random.default_rng(5)
    steps = []
    for i in range(8):
        new_total, old_total = 500.0 + 300 * i, 4000.0 - 300 * i
        new_bad = float(rng.poisson(new_total * 0.02 * 2.0))
        old_bad = float(rng.poisson(old_total * 0.02))
        steps.append(Step(Side(new_bad, new_total), Side(old_bad, old_total), f"t{i}"))
    settings = Settings(metrics=2, false_pause_rate=0.05)
    state = advance(fresh("k", SINCE), steps, settings)
    ratios = 2.0 ** (np.arange(-30, 31) / 6)
    assert len(ratios) == BOUND_GRID
    loglik = np.zeros(BOUND_GRID)
    for step in steps:
        share = step.new.total / (step.new.total + step.old.total)
        x, b = int(step.new.bad), int(step.new.bad + step.old.bad)
        loglik += [stats.binom.logpmf(x, b, _pi(r, share)) for r in ratios]
    needed, limit = settings.needed, 2 * settings.needed

    def refuted_as_upper(k: int) -> bool:  # "ratio <= r_k", against the ratios above it
        above = loglik[k + 1 :] - loglik[k]
        return k < BOUND_GRID - 1 and logsumexp(above) - math.log(len(above)) >= math.log(limit)

    def refuted_as_lower(k: int) -> bool:  # "ratio >= r_k", against the ratios below it
        below = loglik[:k] - loglik[k]
        return k > 0 and logsumexp(below) - math.log(len(below)) >= math.log(limit)

    low = next(k for k in range(BOUND_GRID) if not refuted_as_upper(k))
    high = next(k for k in reversed(range(BOUND_GRID)) if not refuted_as_lower(k))
    lower, upper = state.bounds(needed)
    assert lower == pytest.approx(ratios[low - 1]) and upper == pytest.approx(ratios[high + 1])
    assert lower < 2.0 < upper  # the ratio as played
    assert lower > 1.0  # and "no worse" is ruled out
    assert state.to_dict(needed)["ratioLower"] == pytest.approx(lower, rel=1e-3)


def test_the_bounds_hold_the_true_ratio_at_every_step_in_all_but_the_budgets_share() -> None:
    # Poisson sides at a true ratio between grid points; one metric, falsePauseRate 0.2 so that
    # misses are frequent enough to measure (the bound is 0.2, at every step of 20).
    rng = np.random.default_rng(2026)
    settings = Settings(false_pause_rate=0.2)
    true_ratio, missed, rollouts = 1.37, 0, 300
    for _ in range(rollouts):
        state = fresh("k", SINCE)
        for i in range(20):
            new_total, old_total = 400.0 + 40 * i, 1600.0 - 40 * i
            new_bad = float(rng.poisson(new_total * 0.01 * true_ratio))
            old_bad = float(rng.poisson(old_total * 0.01))
            state = advance(
                state, [Step(Side(new_bad, new_total), Side(old_bad, old_total), "t")], settings
            )
            lower, upper = state.bounds(settings.needed)
            if (lower is not None and lower > true_ratio) or (
                upper is not None and upper < true_ratio
            ):
                missed += 1
                break
    # Anytime-valid at 0.2: observed well inside it (Ville's bound is not tight).
    assert missed / rollouts < 0.2
    assert state.bounds(settings.needed)[0] is not None  # and the bounds do close in
