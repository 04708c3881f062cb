"""The sequential calibration grid runs end to end on a tiny design and reports its rows.

The figures themselves come from the full run (``python -m bench.sequential_calibration``) in
docs/analysis.md; this only keeps the script working and its JSON's shape stable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import sequential_calibration


def test_the_grid_covers_every_level_of_every_factor() -> None:
    rows = sequential_calibration.ROWS
    assert {(d.old, d.new) for d in rows} >= {(1, 1), (2, 1), (3, 2), (4, 2), (10, 10)}
    assert {d.margin for d in rows} >= {0.0, 10.0, 25.0}
    assert {d.wander for d in rows} >= {0.0, 0.3, 0.6}
    assert {d.persistent for d in rows} >= {0.0, 0.3, 0.6}
    assert {d.steps for d in rows} >= {10, 30, 120}
    assert {d.requests for d in rows} >= {200.0, 2000.0, 20000.0}
    assert {d.metrics for d in rows} >= {1, 3}
    assert {d.per_pod for d in rows} == {True, False}
    assert {d.increase for d in rows} == {True, False}
    assert len({d.name for d in rows}) == len(rows)


def test_the_benchmark_runs_a_tiny_design_and_prints_its_rows_as_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "grid.jsonl"
    code = sequential_calibration.main(
        [
            "--rollouts",
            "12",
            "--detected",
            "4",
            "--compared",
            "3",
            "--json",
            "--rows",
            "1/1 pods, wander 0.6",
            "--out",
            str(out_file),
        ]
    )
    out = capsys.readouterr().out
    rows = json.loads(out[out.index("\n[") :])
    assert {row["judge"] for row in rows} == set(sequential_calibration.JUDGES)
    for row in rows:
        assert row["design"] == "1/1 pods, wander 0.6"
        assert row["rollouts"] == (3 if row["judge"].startswith("compare") else 12)
        assert 0 <= row["false_pause"] <= 1
        low, high = row["wilson"]
        assert low <= row["false_pause"] <= high
        assert set(row["detection"]) == {"x1.5", "x2", "x3"}
        for share, median in row["detection"].values():
            assert 0 <= share <= 1
            assert median is None or 1 <= median <= 30
    # One old pod: the status says Conditional, so no row is held to the bound.
    sequential = next(row for row in rows if row["judge"] == "sequential")
    assert sequential["guarantee"] == "Conditional"
    assert all(row["within"] is None for row in rows)
    assert code == 0
    assert "| design | judge | good rollouts paused [Wilson 95 %] |" in out
    # The lines --out appended render the same table.
    assert sequential_calibration.main(["--table", str(out_file)]) == 0
    assert "| 1/1 pods, wander 0.6 | sequential |" in capsys.readouterr().out


def test_bad_arguments_get_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert sequential_calibration.main(["--rollouts", "0"]) == 2
    assert "--rollouts and --detected at least 1" in capsys.readouterr().err
    assert sequential_calibration.main(["--rows", "no such design"]) == 2
    assert "no design's name contains it" in capsys.readouterr().err
    assert sequential_calibration.main(["--shard", "2/2"]) == 2
    assert "--shard '2/2'" in capsys.readouterr().err
