"""Fill a migrated SQLite database with a large mirror and history, fast (for ``bench.api_pages``).

Rows go in with ``executemany`` in one transaction per table, straight into the tables the
``analyses`` models define (the ORM would spend minutes on a million rows). The shape is what
the operator writes: every analysis has two metrics and a full status with conditions; every
evaluation has one ``MetricResult`` per metric. One "hot" analysis holds a large share of the
history so that a deep cursor page is really deep.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

BATCH = 50_000
NAMESPACES = 20
VERDICTS = ("Pass", "Pass", "Pass", "Pass", "Fail", "Inconclusive")


@dataclass(frozen=True)
class Seeded:
    analyses: int
    evaluations: int
    metric_results: int
    # The analysis holding ``hot_evaluations`` rows, and its oldest evaluation's start.
    hot_namespace: str
    hot_name: str
    hot_evaluations: int
    hot_oldest: datetime
    # An ordinary analysis and its row count.
    cold_namespace: str
    cold_name: str
    cold_evaluations: int
    seconds: float


def _db_time(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def _status(verdict: str, now: str) -> str:
    def condition(type_: str, status: str, reason: str) -> dict[str, object]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": f"{type_} is {status} because {reason}.",
            "lastTransitionTime": now,
            "observedGeneration": 1,
        }

    healthy = "True" if verdict == "Pass" else "False"
    return json.dumps(
        {
            "observedGeneration": 1,
            "lastVerdict": verdict,
            "failures": 0 if verdict == "Pass" else 1,
            "lastEvaluationTime": now,
            "metricResults": [
                {"name": "p99-latency", "value": "0.0975", "maxValue": 0.25, "verdict": verdict},
                {"name": "error-rate", "value": "0.01", "maxValue": 0.05, "verdict": "Pass"},
            ],
            "pausedAt": None,
            "conditions": [
                condition("Ready", "True", "Evaluating"),
                condition("Healthy", healthy, "WithinThresholds"),
                condition("RolloutPaused", "False", "NotPaused"),
            ],
        }
    )


def _spec(name: str) -> tuple[str, list[tuple[str, str, float]]]:
    metrics = [
        (
            "p99-latency",
            "histogram_quantile(0.99, sum by (le) "
            f'(rate(http_request_duration_seconds_bucket{{app="{name}"}}[5m])))',
            0.25,
        ),
        ("error-rate", f'max(sentinel_test_value{{case="{name}"}})', 0.05),
    ]
    spec = {
        "target": {"kind": "Deployment", "name": name},
        "metrics": [{"name": m, "query": q, "maxValue": v} for m, q, v in metrics],
        "interval": "30s",
        "failureLimit": 3,
        "dryRun": False,
    }
    return json.dumps(spec), metrics


def _batches(rows: Iterator[tuple[object, ...]]) -> Iterator[list[tuple[object, ...]]]:
    batch: list[tuple[object, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def seed(path: Path, *, analyses: int, evaluations: int, hot_share: float, now: datetime) -> Seeded:
    """Insert ``analyses`` live analyses and ``evaluations`` evaluations into ``path``."""
    started = datetime.now(UTC)
    stamp = _db_time(now)
    names = [(f"ns-{index % NAMESPACES:02d}", f"a{index:05d}") for index in range(analyses)]
    hot = round(evaluations * hot_share)
    cold_each, extra = divmod(evaluations - hot, max(1, analyses - 1))
    counts = [hot] + [cold_each + (1 if index < extra else 0) for index in range(analyses - 1)]
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA synchronous=OFF")
        with db:
            db.executemany(
                "INSERT INTO analyses_analysis (id, namespace, name, uid, spec, target_name, "
                "interval_seconds, failure_limit, dry_run, status, last_verdict, failures, "
                "paused, ready, ready_reason, last_evaluation_at, resource_version, generation, "
                "observed_generation, created_at, deleted_at, mirrored_at, next_due_at, "
                "backoff_attempt) VALUES (?, ?, ?, ?, ?, ?, 30.0, 3, 0, ?, ?, ?, 0, 1, "
                "'Evaluating', ?, ?, 1, 1, ?, NULL, ?, ?, 0)",
                (
                    (
                        pk,
                        namespace,
                        name,
                        f"uid-{pk:08d}",
                        _spec(name)[0],
                        name,
                        _status(VERDICTS[pk % len(VERDICTS)], stamp),
                        VERDICTS[pk % len(VERDICTS)],
                        0 if VERDICTS[pk % len(VERDICTS)] == "Pass" else 1,
                        stamp,
                        str(1000 + pk),
                        _db_time(now - timedelta(days=40)),
                        stamp,
                        stamp,
                    )
                    for pk, (namespace, name) in enumerate(names, start=1)
                ),
            )
            db.executemany(
                # The columns a plain threshold metric leaves at the model's defaults are named
                # too: a NOT NULL column added later must fail tests/site/test_seed_history.py,
                # not the benchmark.
                "INSERT INTO analyses_analysismetric (analysis_id, position, name, query, "
                "max_value, baseline_before_rollout, baseline_offset, min_samples_query, "
                "compare, sequential) VALUES (?, ?, ?, ?, ?, 0, '', '', '{}', '{}')",
                (
                    (pk, position, metric, query, max_value)
                    for pk, (_, name) in enumerate(names, start=1)
                    for position, (metric, query, max_value) in enumerate(_spec(name)[1])
                ),
            )

        def evaluation_rows() -> Iterator[tuple[object, ...]]:
            pk = 0
            for analysis_pk, count in enumerate(counts, start=1):
                for index in range(count):
                    pk += 1
                    # Newest first going back in 30 s steps, as the operator would write them.
                    at = now - timedelta(seconds=30 * (count - index))
                    outcome = "Fail" if pk % 17 == 0 else "Pass"
                    yield (
                        pk,
                        analysis_pk,
                        _db_time(at),
                        _db_time(at + timedelta(milliseconds=45)),
                        0.045,
                        1,
                        outcome,
                        1 if outcome == "Fail" else 0,
                    )

        for batch in _batches(evaluation_rows()):
            with db:
                db.executemany(
                    "INSERT INTO analyses_evaluation (id, analysis_id, started_at, finished_at, "
                    "duration_seconds, generation, outcome, failures_after, error_reason, "
                    "error_message, paused) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', '', 0)",
                    batch,
                )
        total = sum(counts)

        def result_rows() -> Iterator[tuple[object, ...]]:
            for pk in range(1, total + 1):
                failing = pk % 17 == 0
                yield (
                    pk,
                    "p99-latency",
                    0.4 if failing else 0.0975,
                    "0.4" if failing else "0.0975",
                    0.25,
                    "Fail" if failing else "Pass",
                )
                yield (pk, "error-rate", 0.01, "0.01", 0.05, "Pass")

        for batch in _batches(result_rows()):
            with db:
                db.executemany(
                    "INSERT INTO analyses_metricresult (evaluation_id, name, value, value_text, "
                    "max_value, verdict, message, baseline_text, samples_text, series, "
                    "comparison, counted) VALUES (?, ?, ?, ?, ?, ?, '', '', '', '{}', '{}', '{}')",
                    batch,
                )
        # No ANALYZE: the product never runs it, so the planner sees what production sees.
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Seeded(
        analyses=analyses,
        evaluations=total,
        metric_results=2 * total,
        hot_namespace=names[0][0],
        hot_name=names[0][1],
        hot_evaluations=hot,
        hot_oldest=now - timedelta(seconds=30 * hot),
        cold_namespace=names[1][0],
        cold_name=names[1][1],
        cold_evaluations=counts[1],
        seconds=(datetime.now(UTC) - started).total_seconds(),
    )
