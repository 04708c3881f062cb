"""``bench.seed_history`` fills the tables the current migrations make.

The seed writes straight into the tables with plain SQL (``bench.api_pages`` needs a million
rows in seconds), so a NOT NULL column added to a model later is invisible to it until the
benchmark fails; this test makes that the suite's failure (docs/performance.md, REST API pages).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from bench.seed_history import seed


def test_the_seed_fills_a_migrated_database(tmp_path: Path, migrated_database: Path) -> None:
    database = Path(shutil.copyfile(migrated_database, tmp_path / "seeded.sqlite3"))
    seeded = seed(database, analyses=5, evaluations=41, hot_share=0.5, now=datetime.now(UTC))
    with contextlib.closing(sqlite3.connect(database)) as db:
        counts = {
            table: db.execute(f"SELECT count(*) FROM analyses_{table}").fetchone()[0]
            for table in ("analysis", "analysismetric", "evaluation", "metricresult")
        }
        hot = db.execute(
            "SELECT count(*) FROM analyses_evaluation e JOIN analyses_analysis a "
            "ON a.id = e.analysis_id WHERE a.namespace = ? AND a.name = ?",
            (seeded.hot_namespace, seeded.hot_name),
        ).fetchone()[0]
    assert counts == {"analysis": 5, "analysismetric": 10, "evaluation": 41, "metricresult": 82}
    assert (seeded.evaluations, seeded.metric_results) == (41, 82)
    assert hot == seeded.hot_evaluations == 20
