"""Calibrate compare: false failures with no regression, detection of real ones.

The figures and what they mean: docs/analysis.md#calibration-benchcompare_calibrationpy.

Both sides are drawn from one distribution for ``--seeds`` seeds (at least 1,000) and judged by
the product's own ``sentinel_core.metric_kinds.compare.judge_comparison``: the share that fails
is the false-failure rate, which must not exceed 1 - confidence plus its sampling error (two
standard errors of a binomial proportion). Then the new side is made worse by +10 %, +25 % and +50 %
and the share that fails is the detection rate. Pure: no servers, no clock; the figures are in
docs/analysis.md.

Distributions, one sample per interval step (what ``query_range`` returns per side):

- ``latency``: lognormal latencies (median 0.25 s, sigma 0.3), the shift multiplies them;
- ``errors``: an error rate per step, the share of failed requests among 200 Bernoulli trials
  at p = 1 %; the shift multiplies p;
- ``latency-ar``: lognormal latencies whose log follows an AR(1) process with rho = 0.5, as a
  ``rate(...[1m])`` sampled every 30 s is: neighbouring samples are not independent, which the
  test assumes. Reported to show what autocorrelation does, not held to the bound.

Run: ``.venv/bin/python -m bench.compare_calibration [--json] [--seeds N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sentinel_core.metric_kinds.compare import Compare, Sides, judge_comparison

Draw = Callable[[random.Random, int, float], list[float]]
SHIFTS = (0.10, 0.25, 0.50)


def _latency(rng: random.Random, n: int, shift: float) -> list[float]:
    return [0.25 * (1 + shift) * rng.lognormvariate(0, 0.3) for _ in range(n)]


def _errors(rng: random.Random, n: int, shift: float) -> list[float]:
    p = 0.01 * (1 + shift)
    return [sum(rng.random() < p for _ in range(200)) / 200 for _ in range(n)]


def _latency_ar(rng: random.Random, n: int, shift: float) -> list[float]:
    rho, sigma = 0.5, 0.3
    # Stationary start, innovations scaled so that the marginal sigma stays 0.3.
    x = rng.gauss(0, sigma)
    out = []
    for _ in range(n):
        out.append(0.25 * (1 + shift) * math.exp(x))
        x = rho * x + rng.gauss(0, sigma * math.sqrt(1 - rho * rho))
    return out


DISTRIBUTIONS: dict[str, tuple[Draw, bool]] = {
    # name: (draw, held to the bound)
    "latency": (_latency, True),
    "errors": (_errors, True),
    "latency-ar": (_latency_ar, False),
}


@dataclass(frozen=True)
class Row:
    distribution: str
    samples: int
    confidence: float
    seeds: int
    false_failure: float
    bound: float
    within_bound: bool | None
    detection: dict[str, float]


def rate(compare: Compare, draw: Draw, n: int, shift: float, seeds: int, salt: int) -> float:
    """Return the share of ``seeds`` runs that fail with the new side shifted by ``shift``."""
    failed = 0
    for seed in range(seeds):
        rng = random.Random(seed * 1_000_003 + salt)
        old = draw(rng, n, 0.0)
        new = draw(rng, n, shift)
        sides = Sides("new", ("old",), tuple(new), tuple(old))
        failed += judge_comparison(compare, sides).failed
    return failed / seeds


def calibrate(seeds: int, sizes: tuple[int, ...], confidences: tuple[float, ...]) -> list[Row]:
    rows = []
    for name, (draw, held) in DISTRIBUTIONS.items():
        for n in sizes:
            for confidence in confidences:
                compare = Compare(confidence=confidence, min_samples=min(n, 10))
                alpha = 1 - confidence
                bound = alpha + 2 * math.sqrt(alpha * (1 - alpha) / seeds)
                false = rate(compare, draw, n, 0.0, seeds, salt=1)
                detection = {
                    f"+{round(s * 100)}%": rate(compare, draw, n, s, seeds, salt=2) for s in SHIFTS
                }
                rows.append(
                    Row(
                        name,
                        n,
                        confidence,
                        seeds,
                        false,
                        round(bound, 4),
                        (false <= bound) if held else None,
                        detection,
                    )
                )
    return rows


def table(rows: list[Row]) -> str:
    head = (
        "| distribution | samples/side | confidence | false failures | bound "
        "| +10 % | +25 % | +50 % |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mark = {True: "", False: " **over**", None: " (not held)"}[r.within_bound]
        d = r.detection
        lines.append(
            f"| {r.distribution} | {r.samples} | {r.confidence:g} | {r.false_failure:.1%}{mark} "
            f"| {r.bound:.1%} | {d['+10%']:.1%} | {d['+25%']:.1%} | {d['+50%']:.1%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=1000, help="runs per case (>= 1000)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--sizes", default="10,20,40", help="samples per side, comma-separated")
    parser.add_argument("--confidences", default="0.95,0.99", help="comma-separated")
    args = parser.parse_args(argv)
    if args.seeds < 1000:
        print("--seeds must be at least 1000, the calibration's minimum", file=sys.stderr)
        return 2
    sizes = tuple(int(s) for s in args.sizes.split(","))
    confidences = tuple(float(c) for c in args.confidences.split(","))
    started = time.monotonic()
    rows = calibrate(args.seeds, sizes, confidences)
    print(table(rows))
    print(f"\n{args.seeds} seeds per case; {time.monotonic() - started:.0f} s")
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    held = [r for r in rows if r.within_bound is not None]
    return 0 if all(r.within_bound for r in held) else 1


if __name__ == "__main__":
    raise SystemExit(main())
