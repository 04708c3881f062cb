"""Thread CPU of the dispatcher's read and claim of one pass and of the watch's check of one event.

Issue 28's cuts 7 and 8 (docs/performance.md, "Cuts 7 and 8"): ``sentinel_db.claims.claim`` of a
200-row pass (the dispatcher's batch) and ``analyses.mirror.watch_can_skip`` of one event, both
against a migrated SQLite file with the shipped settings (WAL, a persistent connection). The
event is a status write the worker has already mirrored (the same ``resourceVersion``, the
common case) and one it has not (a newer ``lastEvaluationTime``: the read, then the time
compared). Cut 9 (docs/performance.md, "Cut 9"): a dispatcher pass that finds nothing due
(``Dispatcher.dispatch_due``, ten a second on an idle operator) and one whose rows fall due
just after the next poll (16 read, none claimed: the read alone). The entry points have the
same signature before and after the cuts, so the script runs unchanged on either code:
``cd <checkout> && <venv>/bin/python -m bench.claim_cost``. CPU is the calling thread's
(``time.thread_time``); no server is started.

    .venv/bin/python -m bench.claim_cost [--passes 50] [--checks 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from testkit.manifests import analysis_manifest, as_served
from testkit.site_env import with_defaults

_ROWS = 200
_NAMESPACE = "bench-claim"


def _setup_django(database: Path) -> None:
    os.environ.update(with_defaults({"DATABASE_URL": f"sqlite:///{database}"}))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sentinel_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _served(version: str, evaluated: str) -> dict[str, Any]:
    """Return the watched analysis as the API server serves it after a status write."""
    metric = {"name": "errors", "query": "sum(rate(errors[1m]))", "maxValue": 0.01}
    manifest = analysis_manifest("watched", "bench-watch", metrics=[metric])
    status = {"observedGeneration": 1, "lastVerdict": "Pass", "lastEvaluationTime": evaluated}
    return as_served(
        manifest,
        uid="uid-watched",
        resource_version=version,
        created="2026-11-29T10:00:00Z",
        status=status,
    )


def _per_call(call: Callable[[], Any], count: int) -> float:
    """Return the thread's CPU milliseconds per call of ``call``."""
    started = time.thread_time()
    for _ in range(count):
        call()
    return (time.thread_time() - started) * 1000 / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=50, help="claims of 200 rows per round")
    parser.add_argument("--checks", type=int, default=2000, help="watch checks per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="claim-cost-") as workdir:
        _setup_django(Path(workdir) / "claim.sqlite3")
        from analyses import mirror
        from analyses.models import Analysis

        try:
            from sentinel_db import claims
        except ImportError:  # older code, for a before/after: claims lived in analyses
            from analyses import claims  # type: ignore[attr-defined,no-redef]

        start = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
        Analysis.objects.bulk_create(
            Analysis(namespace=_NAMESPACE, name=f"a{i}", uid=f"claim-{i}", created_at=start)
            for i in range(_ROWS)
        )
        rows = Analysis.objects.filter(namespace=_NAMESPACE)
        moments = iter(start + timedelta(seconds=second) for second in range(10**7))

        def one_pass() -> None:
            # Due again (not measured), then read as the dispatcher reads; only the claim timed.
            due = next(moments)
            rows.update(next_due_at=due - timedelta(microseconds=250))
            found = list(rows.values_list("pk", "next_due_at"))
            live = Analysis.objects.filter(deleted_at__isnull=True)
            started = time.thread_time()
            claimed = claims.claim(live, "next_due_at", found, due + timedelta(minutes=2))
            spent.append(time.thread_time() - started)
            assert len(claimed) == _ROWS, "a pass claimed less than every row"

        from sentinel_operator.dispatcher import Dispatcher

        clock = [start]
        dispatcher = Dispatcher(
            now=lambda: clock[0], is_leader=lambda: True, enqueue=lambda *_: None
        )
        soon = Analysis.objects.filter(pk__in=list(rows.values_list("pk", flat=True)[:16]))

        def idle_pass() -> None:
            # Nothing due within the look-ahead (every row is due in a minute).
            clock[0] = next(moments)
            rows.update(next_due_at=clock[0] + timedelta(minutes=1))
            _timed(lambda: dispatcher.dispatch_due() == 0, idle_spent)

        def read_pass() -> None:
            # 16 rows due in 0.3 s: read (within the look-ahead), not claimed (after the poll).
            clock[0] = next(moments)
            rows.update(next_due_at=clock[0] + timedelta(minutes=1))
            soon.update(next_due_at=clock[0] + timedelta(seconds=0.3))
            _timed(lambda: dispatcher.dispatch_due() == 0, read_spent)

        def _timed(call: Callable[[], bool], into: list[float]) -> None:
            started = time.thread_time()
            ok = call()
            into.append(time.thread_time() - started)
            assert ok, "a pass queued something it should not have"

        idle_spent: list[float] = []
        read_spent: list[float] = []
        mirrored = _served("100", "2026-11-29T10:05:00Z")
        mirror.upsert_from_resource(mirrored)
        newer = _served("101", "2026-11-29T10:05:01Z")
        assert mirror.watch_can_skip(mirrored) and mirror.watch_can_skip(newer)

        spent: list[float] = []
        for _ in range(5):  # warm the connection and the SQL texts
            one_pass()
            idle_pass()
            read_pass()
        _per_call(lambda: mirror.watch_can_skip(newer), 200)
        results = []
        for round_ in range(1, args.rounds + 1):
            spent.clear()
            idle_spent.clear()
            read_spent.clear()
            for _ in range(args.passes):
                one_pass()
                idle_pass()
                read_pass()
            row = {
                "round": round_,
                "claim_200_ms": round(sum(spent) * 1000 / len(spent), 3),
                "dispatch_idle_pass_ms": round(sum(idle_spent) * 1000 / len(idle_spent), 4),
                "dispatch_read_16_ms": round(sum(read_spent) * 1000 / len(read_spent), 4),
                "watch_same_version_ms": round(
                    _per_call(lambda: mirror.watch_can_skip(mirrored), args.checks), 4
                ),
                "watch_newer_evaluation_ms": round(
                    _per_call(lambda: mirror.watch_can_skip(newer), args.checks), 4
                ),
            }
            results.append(row)
            print(json.dumps(row), flush=True)
        print(json.dumps({"rounds": results, "load_avg": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
