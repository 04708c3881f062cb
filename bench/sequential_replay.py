"""Replay rollouts' per-pod counts through the operator's own sequential judge.

Reads JSON Lines on standard input, one rollout per line, and writes one JSON line per rollout
judged (docs/analysis.md, "Replaying your own rollouts"):

```
in:  {"settings": {"falsePauseRate": 0.05, "metrics": 2, "maxIncrease": {"percent": 20},
                   "minEvents": 100, "interval": "30s"},
      "before": [{"old": [[bad, total], ...]}, ...],
      "steps":  [{"new": [[bad, total], ...], "old": [[bad, total], ...]}, ...],
      "perPod": true}
out: {"line": 1, "pausedAt": 7 | null, "evidence": 12.3, "needed": 40, "steps": 30,
      "ratioLower": 0.8 | null, "ratioUpper": 1.6 | null, "widening": 1.1,
      "guarantee": "Stated" | "Conditional", "guaranteeReason": ""}
```

``settings`` are the analysis's fields, checked by the product's ``parse_spec`` exactly as the
CRD and the operator check them (``metrics`` is how many sequential metrics share the budget;
all optional, the product's defaults apply). Each step is one evaluation (one step of
``interval``, failureLimit 1): the operator's ``advance`` counts it and ``judge_sequential``
judges the evidence, as the kind's judge does; ``pausedAt`` is the first step whose evaluation
fails (1-based), ``evidence`` the evidence then (or after the last step), ``needed`` the
evidence a metric needs, ``guarantee`` and its reason what the status would say of the bound.
``perPod: false`` sums each side's pods first, as a query without a
``pod`` label reads; with per-pod counts a pod's place in a step's ``old`` list is its identity
across steps (its persistent spread is followed by it). ``ratioLower``/``ratioUpper`` and
``widening`` are the status's bounds of the ratio and the margin's widening for pods' spread.
``before`` (steps before the rollout, all pods old) is checked; the judgment
does not use it today. Numbers may be fractional. A malformed line gets one error on standard
error naming the line and the field; the other lines are still judged, and the exit status is
1 when any line was malformed.

Run: ``.venv/bin/python -m bench.sequential_replay < rollouts.jsonl``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from sentinel_core.conditions import Verdict
from sentinel_core.metric_kinds.sequential import (
    Settings,
    Side,
    Step,
    advance,
    fresh,
    instant,
    judge_sequential,
    settings_of,
)
from sentinel_core.spec import InvalidSpecError, parse_spec

# Where a replayed rollout's steps start: their instants only order them.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
KEYS = frozenset({"settings", "before", "steps", "perPod"})
SETTINGS = frozenset({"falsePauseRate", "metrics", "maxIncrease", "minEvents", "interval"})


class Malformed(ValueError):
    """A line that cannot be judged; the message names the field."""


@dataclass(frozen=True)
class Rollout:
    """One line: the settings the judge uses, the steps and the interval between them."""

    settings: Settings
    interval: float
    steps: tuple[Step, ...]


def parse_line(text: str) -> Rollout:
    """Return the rollout of one JSON line, or raise ``Malformed`` naming the field."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"not JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise Malformed("a line is one JSON object")
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise Malformed(f"unknown field {unknown[0]!r}; the fields are {', '.join(sorted(KEYS))}")
    settings, interval = _settings(raw.get("settings", {}))
    per_pod = raw.get("perPod", True)
    if not isinstance(per_pod, bool):
        raise Malformed("perPod: true or false")
    for i, step in enumerate(_list(raw.get("before", []), "before")):
        _sides(step, f"before[{i}]", ("old",))
    steps = tuple(
        _step(step, f"steps[{i}]", per_pod, EPOCH + timedelta(seconds=interval * (i + 1)))
        for i, step in enumerate(_list(raw.get("steps"), "steps"))
    )
    return Rollout(settings=settings, interval=interval, steps=steps)


def replay(rollout: Rollout) -> dict[str, Any]:
    """Return the verdict line of one rollout: each step one evaluation of the kind's judge."""
    settings = rollout.settings
    state = fresh("replay", instant(EPOCH))
    paused_at: int | None = None
    for index, step in enumerate(rollout.steps, start=1):
        state = advance(state, [step], settings)
        outcome = judge_sequential(settings, state, rollout=True, old_side=True)
        if outcome.verdict == Verdict.FAIL:
            paused_at = index
            break
    guarantee, reason = state.guarantee
    low, high = state.bounds(settings.needed)
    return {
        "pausedAt": paused_at,
        "evidence": float(f"{state.evidence:.6g}"),
        "needed": settings.needed,
        "steps": state.steps,
        "ratioLower": None if low is None else float(f"{low:.4g}"),
        "ratioUpper": None if high is None else float(f"{high:.4g}"),
        "widening": float(f"{state.widening:.4g}"),
        "guarantee": guarantee,
        "guaranteeReason": reason,
    }


def run(lines: Iterable[str], out: IO[str], err: IO[str]) -> int:
    """Judge every line of ``lines``; return 1 if any was malformed, else 0."""
    status = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            rollout = parse_line(text)
        except Malformed as exc:
            err.write(f"line {number}: {exc}\n")
            status = 1
            continue
        out.write(json.dumps({"line": number, **replay(rollout)}) + "\n")
    return status


def _settings(raw: object) -> tuple[Settings, float]:
    if not isinstance(raw, Mapping):
        raise Malformed("settings: an object")
    unknown = sorted(set(raw) - SETTINGS)
    if unknown:
        known = ", ".join(sorted(SETTINGS))
        raise Malformed(f"settings: unknown field {unknown[0]!r}; the fields are {known}")
    count = raw.get("metrics", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise Malformed("settings.metrics: a whole number of sequential metrics, at least 1")
    sequential: dict[str, Any] = {"bad": "replay_bad_total", "total": "replay_total"}
    for field in ("maxIncrease", "minEvents"):
        if field in raw:
            sequential[field] = raw[field]
    fields = {k: raw[k] for k in ("falsePauseRate", "interval") if k in raw}
    metrics = [{"name": f"m{i}", "sequential": sequential} for i in range(count)]
    try:
        spec = parse_spec({"target": {"name": "replay"}, "metrics": metrics, **fields}, strict=True)
    except InvalidSpecError as exc:
        # The product's own messages, named by the replay's fields instead of the spec's paths.
        path, messages = next(iter(exc.by_field().items()))
        field = re.sub(r"^(spec\.)?(metrics\[\d+\]\.sequential\.)?", "", path)
        raise Malformed(f"settings.{field}: {messages[0]}") from None
    return settings_of(spec.metrics[0], spec), spec.interval_seconds


def _list(raw: object, path: str) -> Sequence[Any]:
    if not isinstance(raw, list):
        raise Malformed(f"{path}: a list")
    return raw


def _step(raw: object, path: str, per_pod: bool, end: datetime) -> Step:
    new, old = _sides(raw, path, ("new", "old"))
    return Step(new=_side(new, per_pod), old=_side(old, per_pod), end=instant(end))


def _sides(raw: object, path: str, sides: tuple[str, ...]) -> list[list[tuple[float, float]]]:
    if not isinstance(raw, Mapping):
        raise Malformed(f"{path}: an object with {' and '.join(sides)}")
    unknown = sorted(set(raw) - set(sides))
    if unknown:
        raise Malformed(f"{path}: unknown field {unknown[0]!r}")
    return [_pods(raw.get(side), f"{path}.{side}") for side in sides]


def _pods(raw: object, path: str) -> list[tuple[float, float]]:
    pods = []
    for i, pod in enumerate(_list(raw, path)):
        where = f"{path}[{i}]"
        if not isinstance(pod, list) or len(pod) != 2:
            raise Malformed(f"{where}: [bad, total], two numbers")
        bad, total = (_count(value, where) for value in pod)
        if bad > total:
            raise Malformed(f"{where}: bad {bad:g} is more than total {total:g}")
        pods.append((bad, total))
    return pods


def _count(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{where}: [bad, total], two numbers")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise Malformed(f"{where}: counts are finite and not negative, got {value!r}")
    return number


def _side(pods: list[tuple[float, float]], per_pod: bool) -> Side:
    bad = sum(b for b, _ in pods)
    total = sum(t for _, t in pods)
    return Side(bad=bad, total=total, pods=tuple(pods) if per_pod else ())


def main() -> int:
    return run(sys.stdin, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
