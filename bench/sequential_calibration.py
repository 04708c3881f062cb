"""Calibrate sequential judgment on whole simulated rollouts, beside compare and a threshold.

Each case simulates ``--rollouts`` rolling updates (at least 2,000) of a 10-pod Deployment:
each lasts 10 to 30 evaluations (drawn per rollout) while the new pods go from 1 to 9 of 10,
so the new side's share of the traffic ramps from 0.1 to 0.9; traffic follows the time of day
(the rollout starts at a random hour; 5-minute steps) with 10 % noise per step. Bad events
are Poisson per pod and step at a 1 % rate (0.1 % in one case), times:

- ``poisson``: nothing else;
- ``common``: a factor shared by both sides per step (gamma, CV 0.5): a dependency's bad
  minute, which comparing at the same moment should ignore;
- ``pods``: a factor per pod and step (gamma, CV 0.6): pods whose error rates wander;
- ``sticky``: a factor per pod for its whole life (gamma, CV 0.3): some pods are simply worse.

A good rollout gives the new pods the old pods' rate; a bad one multiplies it by 1.25, 1.5,
2 or 3 on the first metric (with 3 or 10 metrics the others stay good, and each metric's
evidence must reach m/alpha). Every rollout is judged four ways, on the same counts:

- ``sequential``: the product's ``sentinel_core.metric_kinds.sequential.accumulate`` and
  ``evidence_of``, with per-pod counts (``seq/pods``) and with the two sides' sums only
  (``seq/sides``);
- ``compare``: the product's ``judge_comparison`` (Mann-Whitney) each evaluation on the pods'
  per-step error rates over the last 10 steps (lookback 5m at 30s), failureLimit 1 and 3
  (one metric only: it is the slow part);
- ``threshold``: the new pods' error rate over the step above twice the normal rate
  (maxValue), failureLimit 1 and 3.

Per case and judge: the share of good rollouts paused at any point, held to alpha plus two
standard errors where docs/analysis.md claims the promise; for each bad rollout the share
paused and the median evaluation of the pause. Pure: no servers; figures in docs/analysis.md.

Run: ``.venv/bin/python -m bench.sequential_calibration [--json] [--rollouts N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from sentinel_core.metric_kinds.compare import Compare, Sides, judge_comparison
from sentinel_core.metric_kinds.sequential import (
    GRID,
    Settings,
    accumulate,
    effective_pods,
    evidence_of,
    reached,
    spread_of,
    widenings,
)

PODS = 10
# The multiplication sign of the table's headings.
TIMES = "\u00d7"
MAX_STEPS = 30
MIN_STEPS = 10
EFFECTS = (1.25, 1.5, 2.0, 3.0)
ALPHA = 0.05
LOOKBACK_STEPS = 10
# Steps per day (5-minute evaluations) for the time-of-day curve.
DAY = 288
CHUNK = 500
NOISES = ("poisson", "common", "pods", "sticky")
# Where docs/analysis.md claims the false-pause bound for the sequential judge with per-pod
# counts and with sums only (the sums-only judge cannot see pods, so only Poisson-like noise).
CLAIMED = {"seq/pods": {"poisson", "common", "pods"}, "seq/sides": {"poisson", "common"}}


@dataclass(frozen=True)
class Case:
    noise: str
    traffic: int
    metrics: int
    bad_rate: float = 0.01
    # The sequential metrics' maxIncrease (a fraction); the bad rollouts' effects stay ratios.
    max_increase: float = 0.0

    @property
    def name(self) -> str:
        rate = "" if self.bad_rate == 0.01 else f", {self.bad_rate:.1%} bad"
        margin = f", maxIncrease {self.max_increase:.0%}" if self.max_increase else ""
        return f"{self.noise}, {self.traffic:,}/step, m={self.metrics}{rate}{margin}"


@dataclass(frozen=True)
class Row:
    case: str
    judge: str
    rollouts: int
    false_pause: float
    bound: float
    within_bound: bool | None
    # effect -> [share paused, median evaluation of the pause (None: none paused)]
    detection: dict[str, tuple[float, float | None]]


@dataclass(frozen=True)
class _Rollouts:
    requests: np.ndarray  # (R, K, P)
    bad: np.ndarray  # (R, M, K, P)
    new: np.ndarray  # (R, K, P) bool
    live: np.ndarray  # (R, K) bool: the step belongs to the rollout


def simulate(case: Case, effect: float, rollouts: int, rng: np.random.Generator) -> _Rollouts:
    """Return ``rollouts`` rolling updates of ``case`` with the first metric's ratio ``effect``."""
    r, k, p, m = rollouts, MAX_STEPS, PODS, case.metrics
    steps = rng.integers(MIN_STEPS, MAX_STEPS + 1, size=r)
    index = np.arange(k)
    live = index[None, :] < steps[:, None]
    new_pods = np.clip(1 + (9 * index[None, :]) // steps[:, None], 1, 9)
    new = np.arange(p)[None, None, :] < new_pods[:, :, None]
    start = rng.uniform(0, 1, size=r)
    day = 1 + 0.5 * np.sin(2 * np.pi * (start[:, None] + index[None, :] / DAY))
    traffic = case.traffic * day * rng.gamma(100.0, 0.01, size=(r, k))
    requests = rng.poisson(np.broadcast_to((traffic / p)[:, :, None], (r, k, p))).astype(float)
    rate = np.full((r, m, k, p), case.bad_rate)
    if case.noise == "common":
        rate *= rng.gamma(4.0, 0.25, size=(r, m, k, 1))
    elif case.noise == "pods":
        shape = 1 / 0.6**2
        rate *= rng.gamma(shape, 1 / shape, size=(r, m, k, p))
    elif case.noise == "sticky":
        shape = 1 / 0.3**2
        # A pod slot's old pod and its new replacement are different pods.
        old_factor = rng.gamma(shape, 1 / shape, size=(r, m, 1, p))
        new_factor = rng.gamma(shape, 1 / shape, size=(r, m, 1, p))
        rate *= np.where(new[:, None], new_factor, old_factor)
    ratio = np.ones((1, m, 1, 1))
    ratio[0, 0] = effect
    rate = np.where(new[:, None], rate * ratio, rate)
    bad = rng.poisson(requests[:, None] * np.minimum(rate, 1.0)).astype(float)
    return _Rollouts(requests, bad, new, live)


def sequential_pauses(
    data: _Rollouts, metrics: int, per_pod: bool, max_increase: float = 0.0
) -> np.ndarray:
    """Return the evaluation (1-based) of each rollout's first pause, 0 when never paused."""
    r = data.requests.shape[0]
    settings = Settings(max_increase=max_increase, metrics=metrics, false_pause_rate=ALPHA)
    logs = np.zeros((r, metrics, GRID))
    excess = np.zeros((r, metrics))
    weight = np.zeros((r, metrics))
    paused = np.zeros(r, dtype=int)
    widening = np.ones((r, metrics))
    summed_bad = np.zeros(data.bad[:, :, 0].shape)
    summed_req = np.zeros(data.bad[:, :, 0].shape)
    for k in range(MAX_STEPS):
        requests = data.requests[:, None, k]  # (R, 1, P)
        bad = data.bad[:, :, k]  # (R, M, P)
        new = data.new[:, None, k]
        old = ~new
        new_req = np.where(new, requests, 0.0)
        old_req = np.where(old, requests, 0.0)
        old_bad = np.where(old, bad, 0.0)
        if per_pod:
            # Each old pod's counts summed since the start: the product's persistent spread.
            summed_bad = summed_bad + old_bad
            summed_req = summed_req + np.broadcast_to(old_req, bad.shape)
            live = (new_req.sum(-1) > 0) & (old_req.sum(-1) > 0)
            widening = np.where(
                live,
                widenings(
                    spread_of(summed_bad, summed_req),
                    effective_pods(np.broadcast_to(new_req, bad.shape)),
                    effective_pods(np.broadcast_to(old_req, bad.shape)),
                ),
                widening,
            )
        logs, excess, weight, _ = accumulate(
            logs,
            excess,
            weight,
            new_bad=np.where(new, bad, 0.0).sum(-1),
            new_total=np.broadcast_to(new_req.sum(-1), (r, metrics)),
            old_bad=old_bad.sum(-1),
            old_total=np.broadcast_to(old_req.sum(-1), (r, metrics)),
            rho0=settings.rho0,
            new_pods=np.broadcast_to(new_req, bad.shape) if per_pod else None,
            old_pods_bad=old_bad if per_pod else None,
            old_pods=np.broadcast_to(old_req, bad.shape) if per_pod else None,
            widening=widening,
        )
        failed = reached(evidence_of(logs), settings.needed).any(axis=1) & data.live[:, k]
        paused = np.where((paused == 0) & failed, k + 1, paused)
    return paused


def threshold_pauses(data: _Rollouts, bad_rate: float, limit: int) -> np.ndarray:
    """Return the first pause of a maxValue of twice the normal rate on the new pods' rate."""
    new_bad = np.where(data.new, data.bad[:, 0], 0).sum(-1)
    new_req = np.where(data.new, data.requests, 0).sum(-1)
    failed = (new_bad > 2 * bad_rate * np.maximum(new_req, 1)) & data.live
    return _first_run(failed, limit)


def compare_pauses(data: _Rollouts, limits: tuple[int, ...]) -> dict[int, np.ndarray]:
    """Return, per failureLimit, the first pause of compare on the pods' per-step rates."""
    compare = Compare()
    rates = data.bad[:, 0] / np.maximum(data.requests, 1)
    paused = {limit: np.zeros(data.live.shape[0], dtype=int) for limit in limits}
    for i in range(data.live.shape[0]):
        run = 0
        for k in range(int(data.live[i].sum())):
            window = slice(max(0, k - LOOKBACK_STEPS + 1), k + 1)
            side = data.new[i, window]
            values = rates[i, window]
            sides = Sides("new", ("old",), tuple(values[side]), tuple(values[~side]))
            run = run + 1 if judge_comparison(compare, sides).failed else 0
            for limit in limits:
                if run >= limit and paused[limit][i] == 0:
                    paused[limit][i] = k + 1
            # Paused under every limit: the rest of this rollout changes nothing.
            if all(p[i] > 0 for p in paused.values()):
                break
    return paused


def _head(data: _Rollouts, n: int) -> _Rollouts:
    return _Rollouts(data.requests[:n], data.bad[:n], data.new[:n], data.live[:n])


def _first_run(failed: np.ndarray, limit: int) -> np.ndarray:
    run = np.zeros(failed.shape[0], dtype=int)
    paused = np.zeros(failed.shape[0], dtype=int)
    for k in range(failed.shape[1]):
        run = np.where(failed[:, k], run + 1, 0)
        paused = np.where((paused == 0) & (run >= limit), k + 1, paused)
    return paused


def judge_all(
    case: Case, effect: float, rollouts: int, seed: int, compared: int
) -> dict[str, np.ndarray]:
    """Return each judge's first pause per rollout for one case and effect.

    ``compare`` judges only the first ``compared`` rollouts (the same ones, a subsample): one
    SciPy call per evaluation is what makes it slow.
    """
    out: dict[str, list[np.ndarray]] = {}
    salt = int(effect * 100) + NOISES.index(case.noise) * 1000 + case.traffic + case.metrics * 7
    entropy = [seed, salt, int(case.bad_rate * 1e5)]
    # A margin's cases draw their own rollouts; the others keep the streams of the table.
    entropy += [int(case.max_increase * 100)] if case.max_increase else []
    rng = np.random.default_rng(entropy)
    for start in range(0, rollouts, CHUNK):
        data = simulate(case, effect, min(CHUNK, rollouts - start), rng)
        found = {
            "seq/pods": sequential_pauses(data, case.metrics, True, case.max_increase),
            "seq/sides": sequential_pauses(data, case.metrics, False, case.max_increase),
        }
        if case.metrics == 1:
            if start < compared:
                head = _head(data, compared - start)
                for limit, paused in compare_pauses(head, (1, 3)).items():
                    found[f"compare fL{limit}"] = paused
            for limit in (1, 3):
                found[f"threshold fL{limit}"] = threshold_pauses(data, case.bad_rate, limit)
        for judge, paused in found.items():
            out.setdefault(judge, []).append(paused)
    return {judge: np.concatenate(parts) for judge, parts in out.items()}


def calibrate(cases: list[Case], rollouts: int, seed: int, compared: int) -> list[Row]:
    rows = []
    for case in cases:
        good = judge_all(case, 1.0, rollouts, seed, compared)
        bad = {effect: judge_all(case, effect, rollouts, seed, compared) for effect in EFFECTS}
        for judge, paused in good.items():
            n = len(paused)
            bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / n)
            false = float((paused > 0).mean())
            claimed = judge in CLAIMED and case.noise in CLAIMED[judge]
            detection = {}
            for effect in EFFECTS:
                hit = bad[effect][judge]
                median = float(np.median(hit[hit > 0])) if (hit > 0).any() else None
                detection[f"x{effect:g}"] = (float((hit > 0).mean()), median)
            rows.append(
                Row(
                    case.name,
                    judge,
                    n,
                    false,
                    round(bound, 4),
                    (false <= bound) if claimed else None,
                    detection,
                )
            )
    return rows


def default_cases() -> list[Case]:
    cases = [Case(noise, traffic, 1) for traffic in (2_000, 20_000) for noise in NOISES]
    cases += [Case(noise, 20_000, m) for m in (3, 10) for noise in ("poisson", "pods")]
    cases += [Case("poisson", 2_000, m) for m in (3, 10)]
    cases += [Case("common", 20_000, 10), Case("pods", 2_000, 10)]
    cases.append(Case("poisson", 2_000, 1, bad_rate=0.001))
    # Persistent pod differences break the promise at maxIncrease 0; a margin for the pods'
    # spread is the remedy docs/analysis.md suggests, measured here.
    cases.append(Case("sticky", 20_000, 1, max_increase=0.25))
    return cases


def table(rows: list[Row]) -> str:
    effects = [f"x{e:g}" for e in EFFECTS]
    head = "| case | judge | good rollouts paused | " + " | ".join(
        TIMES + e[1:] + " paused (median eval.)" for e in effects
    )
    lines = [head + " |", "|---" * (3 + len(effects)) + "|"]
    for r in rows:
        mark = {True: "", False: " **over**", None: " (not claimed)"}[r.within_bound]
        cells = []
        for e in effects:
            share, median = r.detection[e]
            cells.append(f"{share:.1%} ({median:g})" if median is not None else f"{share:.1%}")
        lines.append(
            f"| {r.case} | {r.judge} | {r.false_pause:.1%}{mark} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=2000, help="rollouts per case (>= 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--compared", type=int, default=200, help="rollouts per case also judged by compare"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument(
        "--cases",
        default="",
        help="only the case of this name, or the cases whose name contains it (e.g. 'pods')",
    )
    parser.add_argument("--quick", action="store_true", help="allow fewer than 2,000 rollouts")
    args = parser.parse_args(argv)
    if args.rollouts < 2000 and not args.quick:
        print("--rollouts must be at least 2000 (or pass --quick for a smoke run)", file=sys.stderr)
        return 2
    if args.rollouts < 1:
        print("--rollouts must be at least 1", file=sys.stderr)
        return 2
    exact = [c for c in default_cases() if c.name == args.cases]
    cases = exact or [c for c in default_cases() if args.cases in c.name]
    started = time.monotonic()
    rows = calibrate(cases, args.rollouts, args.seed, args.compared)
    print(table(rows))
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.rollouts)
    print(
        f"\n{args.rollouts} rollouts per case ({min(args.compared, args.rollouts)} judged by "
        f"compare), alpha {ALPHA:g} (bound {bound:.1%}), seed {args.seed}; "
        f"{time.monotonic() - started:.0f} s"
    )
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    return 1 if any(r.within_bound is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
