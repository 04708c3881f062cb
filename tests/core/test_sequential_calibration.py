"""The sequential calibration benchmark runs end to end on a tiny case and reports its rows.

The figures themselves come from the full run (``python -m bench.sequential_calibration``) in
docs/analysis.md; this only keeps the script working and its JSON's shape stable.
"""

from __future__ import annotations

import json

import pytest

from bench import sequential_calibration


def test_the_benchmark_runs_a_tiny_case_and_prints_its_rows_as_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = sequential_calibration.main(
        [
            "--quick",
            "--rollouts",
            "12",
            "--compared",
            "3",
            "--json",
            "--cases",
            "pods, 2,000/step, m=1",
        ]
    )
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("[") :])
    judges = {row["judge"] for row in rows}
    assert judges == {
        "seq/pods",
        "seq/sides",
        "compare fL1",
        "compare fL3",
        "threshold fL1",
        "threshold fL3",
    }
    for row in rows:
        assert row["case"] == "pods, 2,000/step, m=1"
        assert row["rollouts"] == (3 if row["judge"].startswith("compare") else 12)
        assert 0 <= row["false_pause"] <= 1
        assert set(row["detection"]) == {"x1.25", "x1.5", "x2", "x3"}
        for share, median in row["detection"].values():
            assert 0 <= share <= 1
            assert median is None or 1 <= median <= sequential_calibration.MAX_STEPS
    # Only the sequential judge with per-pod counts is held to the bound on this noise.
    held = {row["judge"] for row in rows if row["within_bound"] is not None}
    assert held == {"seq/pods"}
    assert code in (0, 1)
    assert "| case | judge | good rollouts paused |" in out


def test_fewer_than_2000_rollouts_needs_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert sequential_calibration.main(["--rollouts", "10"]) == 2
    assert "at least 2000" in capsys.readouterr().err
