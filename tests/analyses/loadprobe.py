"""Concurrent database writers for tests/site/test_sqlite_under_load.py.

Runs in its own process with the default settings (``python -m tests.analyses.loadprobe``):
``seed`` mirrors a few analyses; ``drive`` enqueues django-q2 tasks running ``record_probe``
(imported by the real ``qcluster``) while ORM threads write beside them, waits for the
workers to finish and prints a JSON report. ``record_probe`` writes what a reconcile does: one
evaluation with its metric results and the analysis's schedule, in one transaction.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import django

MARKER = "loadprobe"
# By dotted path: run as ``python -m`` this module is ``__main__``, which the workers cannot import.
_PROBE = "tests.analyses.loadprobe.record_probe"


def record_probe(analysis_id: int, index: int) -> str:
    """Record one evaluation the way the reconcile task does; django-q2 runs this."""
    from django.db import transaction
    from django.utils import timezone

    from analyses.models import Analysis, Evaluation, MetricResult

    now = timezone.now()
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            analysis_id=analysis_id,
            started_at=now,
            finished_at=now,
            outcome="Pass",
            error_message=f"{MARKER} task {index}",
        )
        MetricResult.objects.bulk_create(
            MetricResult(
                evaluation=evaluation, name=f"m{n}", value=0.1, value_text="0.1", max_value=1.0
            )
            for n in range(2)
        )
        Analysis.objects.filter(pk=analysis_id).update(
            next_due_at=now + timedelta(seconds=30), backoff_attempt=0, failures=0
        )
    return f"recorded {index}"


def _resource(index: int, version: int) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "load",
            "name": f"probe-{index}",
            "uid": f"probe-uid-{index}",
            "resourceVersion": str(version),
            "generation": 1,
            "creationTimestamp": "2026-11-29T10:00:00Z",
        },
        "spec": {
            "target": {"kind": "Deployment", "name": f"probe-{index}"},
            "metrics": [
                {"name": "m0", "query": "up", "maxValue": 1.0},
                {"name": "m1", "query": "up", "maxValue": 1.0},
            ],
            "interval": "5s",
        },
        "status": {"failures": version % 3},
    }


def _seed(analyses: int) -> dict[str, Any]:
    from analyses.mirror import upsert_from_resource

    ids = [upsert_from_resource(_resource(i, 1))[0].pk for i in range(analyses)]
    return {"analysis_ids": ids}


def _writer(index: int, stop: threading.Event, errors: list[str], counts: list[int]) -> None:
    """Mirror status updates for one analysis until told to stop, as the watch does."""
    from django.db import connection

    from analyses.mirror import upsert_from_resource

    version = 1
    try:
        while not stop.is_set():
            version += 1
            upsert_from_resource(_resource(index, version))
            counts[index] += 1
            time.sleep(0.01)
    except Exception as exc:  # reported, and the test fails on any
        errors.append(f"writer {index}: {exc!r}")
    finally:
        connection.close()


def _drive(tasks: int, writers: int, deadline_seconds: float) -> dict[str, Any]:
    from django_q.models import OrmQ, Task
    from django_q.tasks import async_task

    from analyses.models import Analysis, Evaluation

    started = time.monotonic()
    ids = list(Analysis.objects.filter(namespace="load").values_list("pk", flat=True))
    stop = threading.Event()
    errors: list[str] = []
    counts = [0] * writers
    threads = [
        threading.Thread(target=_writer, args=(i, stop, errors, counts)) for i in range(writers)
    ]
    for thread in threads:
        thread.start()
    enqueue_errors: list[str] = []
    for index in range(tasks):
        try:
            async_task(_PROBE, ids[index % len(ids)], index, group=MARKER)
        except Exception as exc:
            enqueue_errors.append(f"task {index}: {exc!r}")
    enqueued_after = time.monotonic() - started

    done = Evaluation.objects.filter(error_message__startswith=f"{MARKER} task")
    while time.monotonic() - started < deadline_seconds:
        if done.count() >= tasks and not OrmQ.objects.exists():
            break
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    failed = Task.objects.filter(success=False)
    return {
        "tasks": tasks,
        "enqueue_seconds": round(enqueued_after, 2),
        "seconds": round(time.monotonic() - started, 2),
        "recorded": done.count(),
        "queued_left": OrmQ.objects.count(),
        "failed_results": [str(task.result) for task in failed],
        "saved_results": list(Task.objects.values_list("result", flat=True)),
        "orm_writes": sum(counts),
        "errors": errors + enqueue_errors,
    }


def main(argv: list[str]) -> int:
    """Run ``seed`` or ``drive`` and print the JSON report on stdout."""
    parser = argparse.ArgumentParser(prog="python -m tests.analyses.loadprobe")
    parser.add_argument("command", choices=["seed", "drive"])
    parser.add_argument("--analyses", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--deadline", type=float, default=40.0)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sentinel_site.settings")
    django.setup()
    if args.command == "seed":
        report = _seed(args.analyses)
    else:
        report = _drive(args.tasks, min(args.writers, args.analyses), args.deadline)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
