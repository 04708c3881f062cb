"""``python -m bench.sequential_replay``: anyone's per-pod counts through the operator's judge.

The replay must say what the operator would have said: the same evidence after every step and
the same first failing evaluation as the decision core judging the same counts through the
status (tests/core/test_sequential_read.py's ``Story``). Settings are the spec's, checked by
the product's parser; a malformed line is one error naming the line and the field, and the
other lines are still judged.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest

from bench.sequential_replay import Malformed, parse_line, replay, run
from sentinel_core.conditions import Verdict
from sentinel_core.metric_kinds.sequential import Side, Step, instant
from tests.core.test_sequential_read import ERRORS, T0, Story


def _rollout(seed: int, steps: int, new_factor: float) -> list[dict[str, Any]]:
    """Per-pod counts of a rollout: 3 old pods and 2 new, the new ones' rate times a factor."""
    draw = random.Random(seed)
    out = []
    for _ in range(steps):
        old = [[draw.randint(0, 12), draw.randint(900, 1100)] for _ in range(3)]
        new = [[round(draw.randint(0, 12) * new_factor, 1), draw.randint(900, 1100)]]
        new.append([draw.randint(0, 12), draw.randint(900, 1100) + 0.5])
        out.append({"new": new, "old": old})
    return out


@pytest.mark.parametrize(("seed", "factor"), [(1, 1.0), (2, 2.5), (3, 1.6)])
def test_the_replay_gives_the_operators_evidence_and_pause_step_for_step(
    seed: int, factor: float
) -> None:
    steps = _rollout(seed, 25, factor)
    line = {"settings": {"maxIncrease": {"percent": 10}}, "steps": steps}
    got = replay(parse_line(json.dumps(line)))

    story = Story(ERRORS, failureLimit=1)
    paused_at = None
    evidence = 1.0
    for index, step in enumerate(steps, start=1):
        end = instant(T0 + timedelta(seconds=30 * index))
        sides = [
            Side(sum(b for b, _ in pods), sum(t for _, t in pods), tuple(map(tuple, pods)))
            for pods in (step["new"], step["old"])
        ]
        decision = story.evaluate([Step(sides[0], sides[1], end)])
        evidence = story.result().sequential.evidence
        if decision.status.last_verdict == Verdict.FAIL:
            paused_at = index
            break
    assert got["pausedAt"] == paused_at
    assert got["evidence"] == float(f"{evidence:.6g}")
    assert got["needed"] == 20.0
    assert got["guarantee"] == story.result().sequential.guarantee[0] == "Conditional"
    if factor == 2.5:
        assert paused_at is not None  # the comparison is not vacuous: one rollout pauses


def test_per_pod_false_sums_each_side_as_a_query_without_a_pod_label_reads() -> None:
    steps = _rollout(4, 10, 1.5)
    summed = [
        {side: [[sum(b for b, _ in pods), sum(t for _, t in pods)]] for side, pods in s.items()}
        for s in steps
    ]
    sides = replay(parse_line(json.dumps({"steps": steps, "perPod": False})))
    one_pod_each = replay(parse_line(json.dumps({"steps": summed})))
    per_pod = replay(parse_line(json.dumps({"steps": steps})))
    judged = ("pausedAt", "evidence", "steps")
    assert [sides[k] for k in judged] == [one_pod_each[k] for k in judged]
    assert sides["evidence"] != per_pod["evidence"]  # per pod, the old pods' spread tempers
    assert sides["guaranteeReason"].startswith("the series have no pod label")
    assert one_pod_each["guaranteeReason"].startswith("only 1 old pod")
    assert per_pod["guaranteeReason"].startswith("only 3 old pods")


def test_the_budget_is_shared_by_the_metrics_as_the_spec_says() -> None:
    line = {"settings": {"falsePauseRate": 0.01, "metrics": 3}, "steps": []}
    assert replay(parse_line(json.dumps(line))) == {
        "pausedAt": None,
        "evidence": 1.0,
        "needed": 300.0,
        "steps": 0,
        "ratioLower": None,
        "ratioUpper": None,
        "widening": 1.0,
        "guarantee": "Conditional",
        "guaranteeReason": "no step with events on both sides yet",
    }


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("{", "not JSON"),
        ("[]", "a line is one JSON object"),
        ('{"step": []}', "unknown field 'step'"),
        ('{"steps": {}}', "steps: a list"),
        ('{"steps": [{"new": [[1, 2, 3]], "old": []}]}', "steps[0].new[0]: [bad, total]"),
        ('{"steps": [{"new": [], "old": [[5, 4]]}]}', "steps[0].old[0]: bad 5 is more than"),
        ('{"steps": [{"new": [[-1, 4]], "old": []}]}', "not negative"),
        ('{"steps": [{"new": [[true, 4]], "old": []}]}', "two numbers"),
        ('{"before": [{"new": []}], "steps": []}', "before[0]: unknown field 'new'"),
        ('{"steps": [], "perPod": 1}', "perPod: true or false"),
        ('{"settings": {"falsePauseRate": 0.3}, "steps": []}', "settings.falsePauseRate: must"),
        ('{"settings": {"maxIncrease": {"percent": -1}}, "steps": []}', "maxIncrease.percent"),
        ('{"settings": {"metrics": 0}, "steps": []}', "settings.metrics"),
        ('{"settings": {"interval": "soon"}, "steps": []}', "settings.interval"),
    ],
)
def test_a_malformed_line_is_named_by_its_field(line: str, error: str) -> None:
    with pytest.raises(Malformed) as malformed:
        parse_line(line)
    assert error in str(malformed.value)


def test_a_malformed_line_is_one_error_on_stderr_and_the_others_are_judged() -> None:
    good = json.dumps({"steps": _rollout(5, 3, 1.0)})
    lines = "\n".join([good, '{"steps": [{"new": [[3, 2]], "old": []}]}', "", good]) + "\n"
    done = subprocess.run(
        [sys.executable, "-m", "bench.sequential_replay"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "line 2: steps[0].new[0]: bad 3 is more than total 2\n"
    out = [json.loads(row) for row in done.stdout.splitlines()]
    assert [row["line"] for row in out] == [1, 4] and out[0] == out[1] | {"line": 1}
    # All lines good: status 0.
    buffer, errors = io.StringIO(), io.StringIO()
    assert run([good], buffer, errors) == 0 and errors.getvalue() == ""
