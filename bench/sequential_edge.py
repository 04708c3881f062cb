"""Good rollouts at the margin's edge with few pods, as lines for ``bench.sequential_replay``.

``generate`` writes ``--rollouts`` good rollouts of ``--old`` old and ``--new`` new pods as
the replay's JSON Lines: ``--steps`` steps (30), ``--requests`` requests per step split evenly
among the pods, bad events Poisson per pod and step at 1 % times a factor per pod and step
(gamma, CV ``--wander``, 0.6: pods whose error rates wander) and a factor per pod for its whole
life (gamma, CV ``--persistent``, 0: pods that stay different), the new pods' rate 1.2 times
the old pods' — exactly
``maxIncrease: 20 %``, the edge of what a good rollout is. Two metrics share
``falsePauseRate: 0.05``, as in docs/analysis.md ("Where the bound is stated").
``summarize`` reads the replay's output and prints the share paused with its Wilson 95 %
interval and what the status said of the bound.

Run: ``.venv/bin/python -m bench.sequential_edge generate --old 2 --new 1 --seed 1 |
.venv/bin/python -m bench.sequential_replay | .venv/bin/python -m bench.sequential_edge summarize``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable
from typing import IO

import numpy as np

BAD_RATE = 0.01
RHO = 1.2
SETTINGS = {
    "falsePauseRate": 0.05,
    "metrics": 2,
    "maxIncrease": {"percent": 20},
    "minEvents": 100,
    "interval": "30s",
}


def _factors(rng: np.random.Generator, cv: float, size: int) -> np.ndarray:
    """Return gamma factors of mean 1 and coefficient of variation ``cv`` (1 when 0)."""
    if cv <= 0:
        return np.ones(size)
    shape = 1 / cv**2
    return rng.gamma(shape, 1 / shape, size=size)


def generate(
    old: int,
    new: int,
    *,
    rollouts: int,
    seed: int,
    requests: float,
    steps: int = 30,
    wander: float = 0.6,
    persistent: float = 0.0,
    rho: float = RHO,
    metrics: int = 2,
    margin: float = 20.0,
    per_pod: bool = True,
    increase: bool = False,
    out: IO[str],
) -> None:
    """Write ``rollouts`` rollouts as replay lines, the new pods' rate ``rho`` times the old's.

    ``increase``: each step's counts as ``increase()`` at a 15 s scrape and a 30 s interval gives
    them, one scrape interval's events extrapolated to the step (twice them), not the step's.
    """
    rng = np.random.default_rng(seed)
    pods = old + new
    share = requests / pods
    settings = {**SETTINGS, "metrics": metrics, "maxIncrease": {"percent": margin}}
    for _ in range(rollouts):
        lifelong = _factors(rng, persistent, pods)
        counted = []
        for _ in range(steps):
            rate = BAD_RATE * lifelong * _factors(rng, wander, pods)
            rate[old:] *= rho
            bad = 2 * rng.poisson(share / 2 * rate) if increase else rng.poisson(share * rate)
            counted.append(
                {
                    "old": [[int(b), share] for b in bad[:old]],
                    "new": [[int(b), share] for b in bad[old:]],
                }
            )
        line = {"settings": settings, "steps": counted, "perPod": per_pod}
        out.write(json.dumps(line) + "\n")


def wilson(paused: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Return the Wilson score interval of ``paused`` of ``n``."""
    p = paused / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(lines: Iterable[str]) -> str:
    """Return one line: paused of judged, its Wilson interval, and what the status said."""
    rows = [json.loads(line) for line in lines if line.strip()]
    if not rows:
        return "no rollouts"
    paused = sum(row["pausedAt"] is not None for row in rows)
    low, high = wilson(paused, len(rows))
    said = Counter(row["guarantee"] for row in rows)
    words = ", ".join(f"{name} {count}" for name, count in sorted(said.items()))
    steps = sorted(row["pausedAt"] for row in rows if row["pausedAt"] is not None)
    median = f", median step {float(np.median(steps)):g}" if steps else ""
    return (
        f"paused {paused} of {len(rows)}: {100 * paused / len(rows):.1f} % "
        f"[{100 * low:.1f}, {100 * high:.1f}]{median}; guarantee: {words}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("generate", help="write good rollouts at the edge as replay lines")
    make.add_argument("--old", type=int, required=True)
    make.add_argument("--new", type=int, required=True)
    make.add_argument("--rollouts", type=int, default=1000)
    make.add_argument("--seed", type=int, required=True)
    make.add_argument("--requests", type=float, default=2000.0)
    make.add_argument("--steps", type=int, default=30)
    make.add_argument("--wander", type=float, default=0.6)
    make.add_argument("--persistent", type=float, default=0.0)
    make.add_argument("--rho", type=float, default=RHO, help="new pods' rate over the old's")
    make.add_argument("--metrics", type=int, default=2, help="sequential metrics sharing 0.05")
    make.add_argument("--margin", type=float, default=20.0, help="maxIncrease in percent")
    make.add_argument("--sides", action="store_true", help="perPod false: the sides' sums")
    make.add_argument("--increase", action="store_true", help="counts as increase() gives")
    sub.add_parser("summarize", help="read the replay's output, print the share paused")
    args = parser.parse_args(argv)
    if args.command == "generate":
        if min(args.old, args.new, args.rollouts, args.steps) < 1 or args.requests <= 0:
            parser.error("--old, --new, --rollouts and --steps at least 1, --requests above 0")
        if args.rho <= 0 or args.metrics < 1 or args.margin < 0:
            parser.error("--rho above 0, --metrics at least 1, --margin at least 0")
        if args.wander < 0 or args.persistent < 0:
            parser.error("--wander and --persistent are coefficients of variation, at least 0")
        generate(
            args.old,
            args.new,
            rollouts=args.rollouts,
            seed=args.seed,
            requests=args.requests,
            steps=args.steps,
            wander=args.wander,
            persistent=args.persistent,
            rho=args.rho,
            metrics=args.metrics,
            margin=args.margin,
            per_pod=not args.sides,
            increase=args.increase,
            out=sys.stdout,
        )
    else:
        print(summarize(sys.stdin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
