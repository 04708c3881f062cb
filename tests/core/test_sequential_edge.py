"""``bench.sequential_edge``: good rollouts at the edge for the replay, and its summary.

docs/analysis.md ("Where the bound is stated") shows the full rows; this keeps the generator's
lines valid replay input, good at exactly the margin, and the summary's arithmetic right.
"""

from __future__ import annotations

import io

import numpy as np

from bench import sequential_edge
from bench.sequential_replay import parse_line, run


def test_the_lines_are_replay_input_with_the_new_pods_at_the_margins_edge() -> None:
    out = io.StringIO()
    sequential_edge.generate(
        2, 1, rollouts=200, seed=7, requests=30_000, steps=5, wander=0.0, persistent=0.0, out=out
    )
    lines = out.getvalue().splitlines()
    assert len(lines) == 200
    rollouts = [parse_line(line) for line in lines]
    assert rollouts[0].settings.needed == 40 and rollouts[0].settings.max_increase == 0.2
    new = np.array([[s.new.bad, s.new.total] for r in rollouts for s in r.steps]).sum(axis=0)
    old = np.array([[s.old.bad, s.old.total] for r in rollouts for s in r.steps]).sum(axis=0)
    ratio = (new[0] / new[1]) / (old[0] / old[1])
    assert abs(ratio - 1.2) < 0.03  # 1.2 exactly in expectation: about 30,000 bad events
    judged, errors = io.StringIO(), io.StringIO()
    assert run(lines, judged, errors) == 0 and errors.getvalue() == ""
    assert len(judged.getvalue().splitlines()) == 200


def test_the_summary_counts_the_pauses_with_their_wilson_interval() -> None:
    rows = ['{"pausedAt": 3, "guarantee": "Stated"}'] + [
        '{"pausedAt": null, "guarantee": "Stated"}'
    ] * 19
    assert sequential_edge.summarize(rows) == (
        "paused 1 of 20: 5.0 % [0.9, 23.6], median step 3; guarantee: Stated 20"
    )
    low, high = sequential_edge.wilson(0, 1000)
    assert low == 0.0 and 0.0038 < high < 0.0039
