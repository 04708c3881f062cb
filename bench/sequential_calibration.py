"""Calibrate sequential judgment at the margin's edge on a grid of designs, beside compare.

Every rollout is judged through the replay tool's code path (``bench.sequential_replay``:
the product's spec parsing, ``advance`` and ``judge_sequential`` at every step,
failureLimit 1), on counts drawn by ``bench.sequential_edge.generate``: ``old``/``new`` pods,
each step's requests split evenly among them, bad events Poisson per pod and step at 1 % times
a factor per pod and step (gamma, "wander" CV) and a factor per pod for its life (gamma,
"persistent" CV); the new pods' rate ``rho`` times the old pods'.

Good rollouts sit at the margin's edge: rho = 1 + maxIncrease. Bad ones have rho 1.5, 2 and 3
on the first metric. With m metrics every metric is drawn (the others at the edge) and the
rollout pauses at the first metric's pause; they share falsePauseRate 0.05 (each needs m/0.05).

The factors and their levels (issue 40, point 5): maxIncrease 0, 10 %, 25 %; pods old/new 1/1,
2/1, 3/2, 4/2, 10/10; wander CV 0, 0.3, 0.6; persistent CV 0, 0.3, 0.6; 10, 30, 120 steps;
200, 2,000, 20,000 requests per step; 1 and 3 metrics; per-pod counts or the sides' sums; exact
counts or as ``increase()`` gives them. The full factorial is ~5,400 designs; the grid is a
base design (4/2 pods, maxIncrease 10 %, wander 0.3, persistent 0, 30 steps, 2,000/step, one
metric, per-pod, exact), one-factor-at-a-time blocks that move one factor to each of its other
levels, and the worst-case interactions (``ROWS``). Each design draws its rollouts from its own
seed (``--seed`` + 100 times its row + the effect), none used to choose a constant.

Per design: the good rollouts paused with the Wilson 95 % interval, what the status says of the
bound (``Stated``/``Conditional``), and per effect the share paused with the median step of the
pause, for the sequential judge, ``compare`` (the product's ``judge_comparison`` on the pods'
per-step rates over the last 10 steps, failureLimit 1 and 3; only the first ``--compared``
rollouts of each draw: one SciPy call per evaluation) and a threshold (``maxValue`` at twice the
normal rate on the new pods' rate over the step, failureLimit 1 and 3). A ``Stated`` design is
held to a Wilson upper bound of at most alpha + 1 point; the script exits 1 when one is over.

Run (nice: it is long; ``--rows`` picks designs by name, ``--out`` appends each design's JSON lines
as it finishes and a rerun skips the designs already there, so shards (``--shard i/n``) may share
one file; ``--table FILE`` prints the table of such lines):
``nice -n 19 .venv/bin/python -m bench.sequential_calibration --out grid.jsonl``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from bench.sequential_edge import BAD_RATE, generate, wilson
from bench.sequential_replay import parse_line, replay
from sentinel_core.metric_kinds.compare import Compare, Sides, judge_comparison

ALPHA = 0.05
# A Stated design's Wilson upper bound may exceed alpha by this much (docs/analysis.md).
SLACK = 0.01
EFFECTS = (1.5, 2.0, 3.0)
LOOKBACK_STEPS = 10
# The multiplication sign of the table's headings.
TIMES = "\u00d7"
JUDGES = ("sequential", "compare fL1", "compare fL3", "threshold fL1", "threshold fL3")


@dataclass(frozen=True)
class Design:
    """One row of the grid: a value for every factor."""

    name: str
    old: int = 4
    new: int = 2
    margin: float = 10.0  # maxIncrease, percent
    wander: float = 0.3
    persistent: float = 0.0
    steps: int = 30
    requests: float = 2000.0
    metrics: int = 1
    per_pod: bool = True
    increase: bool = False


BASE = Design("base: 4/2 pods, maxIncrease 10 %, wander 0.3, 30 steps, 2,000/step")


def _rows() -> tuple[Design, ...]:
    b = BASE
    return (
        b,
        replace(b, name="maxIncrease 0", margin=0.0),
        replace(b, name="maxIncrease 25 %", margin=25.0),
        replace(b, name="1/1 pods", old=1, new=1),
        replace(b, name="2/1 pods", old=2, new=1),
        replace(b, name="3/2 pods", old=3, new=2),
        replace(b, name="10/10 pods", old=10, new=10),
        replace(b, name="wander 0 (Poisson)", wander=0.0),
        replace(b, name="wander 0.6", wander=0.6),
        replace(b, name="persistent 0.3", persistent=0.3),
        replace(b, name="persistent 0.6", persistent=0.6),
        replace(b, name="10 steps", steps=10),
        replace(b, name="120 steps", steps=120),
        replace(b, name="200/step", requests=200.0),
        replace(b, name="20,000/step", requests=20000.0),
        replace(b, name="3 metrics", metrics=3),
        replace(b, name="sides' sums", per_pod=False),
        replace(b, name="increase() counts", increase=True),
        # The worst cases the issue names, and the worst Stated one for pods that stay different.
        replace(b, name="1/1 pods, wander 0.6", old=1, new=1, wander=0.6),
        replace(b, name="2/1 pods, wander 0.6", old=2, new=1, wander=0.6),
        replace(
            b, name="2/1 pods, wander 0.6, 20,000/step", old=2, new=1, wander=0.6, requests=20000.0
        ),
        replace(b, name="persistent 0.6, 120 steps", persistent=0.6, steps=120),
        replace(
            b,
            name="persistent 0.3, wander 0, 120 steps, 20,000/step",
            persistent=0.3,
            wander=0.0,
            steps=120,
            requests=20000.0,
        ),
        replace(
            b,
            name="persistent 0.6, 120 steps, 20,000/step",
            persistent=0.6,
            steps=120,
            requests=20000.0,
        ),
        replace(b, name="increase() counts, sides' sums", increase=True, per_pod=False),
        replace(
            b,
            name="maxIncrease 0, wander 0.6, 20,000/step, 3 metrics",
            margin=0.0,
            wander=0.6,
            requests=20000.0,
            metrics=3,
        ),
    )


ROWS = _rows()


@dataclass(frozen=True)
class Result:
    design: str
    judge: str
    rollouts: int
    paused: int
    false_pause: float
    wilson: tuple[float, float]
    guarantee: str | None
    within: bool | None
    # effect -> [share paused, median step of the pause (None: none paused)]
    detection: dict[str, tuple[float, float | None]]


@dataclass(frozen=True)
class _Draw:
    """One design's rollouts at one ratio: what each judge paused at (0: never)."""

    paused: dict[str, np.ndarray]
    guarantees: list[str]


def _lines(design: Design, rho: float, rollouts: int, seed: int) -> list[str]:
    out = io.StringIO()
    generate(
        design.old,
        design.new,
        rollouts=rollouts,
        seed=seed,
        requests=design.requests,
        steps=design.steps,
        wander=design.wander,
        persistent=design.persistent,
        rho=rho,
        metrics=design.metrics,
        margin=design.margin,
        per_pod=design.per_pod,
        increase=design.increase,
        out=out,
    )
    return out.getvalue().splitlines()


def draw(design: Design, rho: float, rollouts: int, seed: int, compared: int) -> _Draw:
    """Judge ``rollouts`` rollouts of ``design`` whose first metric's ratio is ``rho``."""
    edge = 1 + design.margin / 100
    sequential = np.zeros(rollouts, dtype=int)
    guarantees: list[str] = []
    first: list[str] = []
    for metric in range(design.metrics):
        lines = _lines(design, rho if metric == 0 else edge, rollouts, seed * 10 + metric)
        if metric == 0:
            first = lines
        for i, text in enumerate(lines):
            out = replay(parse_line(text))
            if metric == 0:
                guarantees.append(out["guarantee"])
            at = out["pausedAt"] or 0
            if at and (sequential[i] == 0 or at < sequential[i]):
                sequential[i] = at
    bad, total, new = _counts(first)
    paused = {"sequential": sequential}
    for limit in (1, 3):
        paused[f"threshold fL{limit}"] = _first_run(_threshold_failed(bad, total, new), limit)
    for limit, at in _compare(bad[:compared], total[:compared], new).items():
        paused[f"compare fL{limit}"] = at
    return _Draw(paused, guarantees)


def _counts(lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return bad and total (R, K, P) and which pods are new (P,) of the first metric's lines."""
    bad, total = [], []
    for text in lines:
        steps = json.loads(text)["steps"]
        pods = [[*step["old"], *step["new"]] for step in steps]
        bad.append([[b for b, _ in step] for step in pods])
        total.append([[t for _, t in step] for step in pods])
    first = json.loads(lines[0])["steps"][0]
    new = np.arange(len(first["old"]) + len(first["new"])) >= len(first["old"])
    return np.array(bad, dtype=float), np.array(total, dtype=float), new


def _threshold_failed(bad: np.ndarray, total: np.ndarray, new: np.ndarray) -> np.ndarray:
    new_bad = bad[:, :, new].sum(-1)
    new_total = total[:, :, new].sum(-1)
    return new_bad > 2 * BAD_RATE * np.maximum(new_total, 1)


def _first_run(failed: np.ndarray, limit: int) -> np.ndarray:
    run = np.zeros(failed.shape[0], dtype=int)
    paused = np.zeros(failed.shape[0], dtype=int)
    for k in range(failed.shape[1]):
        run = np.where(failed[:, k], run + 1, 0)
        paused = np.where((paused == 0) & (run >= limit), k + 1, paused)
    return paused


def _compare(bad: np.ndarray, total: np.ndarray, new: np.ndarray) -> dict[int, np.ndarray]:
    """Return, per failureLimit, the first pause of compare on the pods' per-step rates."""
    compare = Compare()
    rates = bad / np.maximum(total, 1)
    limits = (1, 3)
    paused = {limit: np.zeros(bad.shape[0], dtype=int) for limit in limits}
    for i in range(bad.shape[0]):
        run = 0
        for k in range(bad.shape[1]):
            window = rates[i, max(0, k - LOOKBACK_STEPS + 1) : k + 1]
            sides = Sides(
                "new", ("old",), tuple(window[:, new].ravel()), tuple(window[:, ~new].ravel())
            )
            run = run + 1 if judge_comparison(compare, sides).failed else 0
            for limit in limits:
                if run >= limit and paused[limit][i] == 0:
                    paused[limit][i] = k + 1
            # Paused under every limit: the rest of this rollout changes nothing.
            if all(p[i] > 0 for p in paused.values()):
                break
    return paused


def calibrate(
    design: Design, row: int, rollouts: int, detected: int, compared: int, seed: int
) -> list[Result]:
    """Return one result per judge for ``design`` (the ``row``-th of the grid)."""
    edge = 1 + design.margin / 100
    good = draw(design, edge, rollouts, seed + 100 * row, compared)
    bad = {
        e: draw(design, e, detected, seed + 100 * row + j + 1, compared)
        for j, e in enumerate(EFFECTS)
    }
    said = sorted(set(good.guarantees))
    guarantee = "/".join(said)
    results = []
    for judge in JUDGES:
        paused = good.paused[judge]
        n = len(paused)
        hits = int((paused > 0).sum())
        low, high = wilson(hits, n) if n else (0.0, 1.0)
        detection = {}
        for effect in EFFECTS:
            at = bad[effect].paused[judge]
            median = float(np.median(at[at > 0])) if (at > 0).any() else None
            detection[f"x{effect:g}"] = (float((at > 0).mean()) if len(at) else 0.0, median)
        stated = judge == "sequential" and said == ["Stated"]
        results.append(
            Result(
                design=design.name,
                judge=judge,
                rollouts=n,
                paused=hits,
                false_pause=hits / n if n else 0.0,
                wilson=(round(low, 4), round(high, 4)),
                guarantee=guarantee if judge == "sequential" else None,
                within=(high <= ALPHA + SLACK) if stated else None,
                detection=detection,
            )
        )
    return results


def table(results: Iterable[Result]) -> str:
    effects = [f"x{e:g}" for e in EFFECTS]
    head = "| design | judge | good rollouts paused [Wilson 95 %] | status says | " + " | ".join(
        TIMES + e[1:] + " paused (median step)" for e in effects
    )
    lines = [head + " |", "|---" * (4 + len(effects)) + "|"]
    for r in results:
        low, high = r.wilson
        over = " **over**" if r.within is False else ""
        cells = []
        for e in effects:
            share, median = r.detection[e]
            cells.append(f"{share:.1%} ({median:g})" if median is not None else f"{share:.1%}")
        lines.append(
            f"| {r.design} | {r.judge} | {r.false_pause:.1%} [{low:.1%}, {high:.1%}]{over} "
            f"({r.rollouts}) | {r.guarantee or ''} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def _result(raw: dict[str, Any]) -> Result:
    raw = {**raw, "wilson": tuple(raw["wilson"])}
    raw["detection"] = {k: tuple(v) for k, v in raw["detection"].items()}
    return Result(**raw)


def _done(path: str | None) -> set[str]:
    """Return the designs a file written by ``--out`` already has: a rerun skips them."""
    if not path:
        return set()
    try:
        with open(path) as lines:
            return {json.loads(line)["design"] for line in lines if line.strip()}
    except FileNotFoundError:
        return set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=1000, help="good rollouts per design")
    parser.add_argument("--detected", type=int, default=300, help="bad rollouts per effect")
    parser.add_argument("--compared", type=int, default=100, help="rollouts judged by compare")
    parser.add_argument("--seed", type=int, default=7001)
    parser.add_argument("--rows", default="", help="only the designs whose name contains this")
    parser.add_argument(
        "--shard", default="0/1", help="i/n: only the designs whose row modulo n is i"
    )
    parser.add_argument(
        "--out", help="append each design's results as JSON lines to this file; skip those in it"
    )
    parser.add_argument("--table", help="print the table of a file written by --out, and exit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    if args.table:
        try:
            with open(args.table) as lines:
                results = [_result(json.loads(line)) for line in lines if line.strip()]
        except (OSError, ValueError, TypeError) as exc:
            print(f"--table {args.table}: {exc}", file=sys.stderr)
            return 2
        # In the grid's order, whichever shard finished a design first.
        order = {design.name: i for i, design in enumerate(ROWS)}
        results.sort(key=lambda r: (order.get(r.design, len(ROWS)), JUDGES.index(r.judge)))
        print(table(results))
        return 1 if any(r.within is False for r in results) else 0
    if min(args.rollouts, args.detected) < 1 or args.compared < 0:
        print("--rollouts and --detected at least 1, --compared at least 0", file=sys.stderr)
        return 2
    try:
        part, parts = (int(x) for x in args.shard.split("/"))
        if not 0 <= part < parts:
            raise ValueError
    except ValueError:
        print(f"--shard {args.shard!r}: i/n with 0 <= i < n", file=sys.stderr)
        return 2
    chosen = [(i, d) for i, d in enumerate(ROWS) if args.rows in d.name and i % parts == part]
    if not chosen:
        print(f"--rows {args.rows!r}: no design's name contains it", file=sys.stderr)
        return 2
    done = _done(args.out)
    chosen = [(i, d) for i, d in chosen if d.name not in done]
    started = time.monotonic()
    results: list[Result] = []
    for row, design in chosen:
        began = time.monotonic()
        found = calibrate(design, row, args.rollouts, args.detected, args.compared, args.seed)
        results += found
        if args.out:
            # One write of the design's lines: shards may append to the same file.
            with open(args.out, "a") as out:
                out.write("".join(json.dumps(asdict(r)) + "\n" for r in found))
        print(f"{design.name}: {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    print(table(results))
    print(
        f"\n{args.rollouts} good and {args.detected} bad rollouts per effect and design "
        f"({min(args.compared, args.rollouts)} judged by compare), alpha {ALPHA:g}, "
        f"seed {args.seed}; {time.monotonic() - started:.0f} s"
    )
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    return 1 if any(r.within is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
