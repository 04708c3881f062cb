"""Benchmark: live evaluations' dispatch lag with and without a 10-rollout backtest running.

``python -m bench.backtest_lag [--analyses 200] [--interval 10] [--window 60] [--workers 2]``

docs/backtest.md promises that a backtest cannot starve live evaluations: it runs on a thread
of the leader's process, never on a django-q2 worker, and sends at most 20 queries a second to a
provider. This measures it on the real control
plane (docs/realcluster.md) with ``bench.operator_throughput``'s stack: N analyses x 2 metrics
at the interval, one ``runoperator``; a Deployment ``history`` with 11 templates (10 past
rollouts and the current one, 5.5 s apart) and an analysis of it. Two steady-state windows,
accounted as ``bench.operator_throughput`` accounts them (every due time from the history rows):

1. no backtest;
2. a backtest of ``history``'s last 10 rollouts, a draft of its analysis evaluated every 5 s
   (the shortest interval; the templates are 5.5 s apart, so each past rollout is evaluated),
   queued through the operator's own job path (a ``BacktestJob`` row, as the REST API writes
   it) and queued again as soon as it finishes, so one runs throughout the window.

Prints one line per window: due times, on time, late, missed, p50/p99/max dispatch lag, and for
the second the backtests finished and the queries they sent. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import threading
import time
from datetime import UTC, datetime

from bench import harness, operator_throughput
from bench.bench_db import BenchDb
from bench.cpu import CpuMeter
from bench.throughput_options import parse_options
from bench.throughput_report import Window
from testkit.manifests import analysis_manifest, deployment_manifest

NAMESPACE = operator_throughput.NAMESPACE
HISTORY = "history"
ROLLOUTS = 10
# The draft's interval, the shortest an analysis may have.
DRAFT_INTERVAL = 5
_say = operator_throughput._say


def _make_history(stack: harness.Stack, api: harness.ApiSession, app: str, interval: int) -> None:
    """Deployment ``history`` with ROLLOUTS + 1 templates, and its analysis."""
    body = deployment_manifest(HISTORY, NAMESPACE, "shop/history:0", replicas=0)
    body["spec"]["revisionHistoryLimit"] = ROLLOUTS + 1
    api.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", body)
    for version in range(1, ROLLOUTS + 1):
        # A little longer than the draft's interval: each past rollout gets an evaluation.
        time.sleep(DRAFT_INTERVAL + 0.5)
        stack.cluster.kubectl(
            "-n", NAMESPACE, "set", "image", f"deployment/{HISTORY}", f"app=shop/history:{version}"
        )
    metrics = harness.two_metrics(app)
    analysis = analysis_manifest(
        HISTORY, NAMESPACE, target=HISTORY, metrics=metrics, interval=f"{interval}s"
    )
    api.request(
        "POST",
        f"/apis/sentinel.example.com/v1alpha1/namespaces/{NAMESPACE}/rolloutanalyses",
        analysis,
    )


def _queue(db: BenchDb, draft: str) -> None:
    now = datetime.now(UTC)
    db.rows(
        "INSERT INTO analyses_backtestjob (namespace, name, requested_by, draft, rollouts,"
        " max_duration_seconds, state, done, total, error, cancel_requested, created_at,"
        " next_attempt_at) VALUES (?, ?, 'bench', ?, ?, 3600, 'queued', 0, 0, '', ?, ?, ?)",
        (NAMESPACE, HISTORY, draft, ROLLOUTS, False, now, now),
    )


def _keep_one_running(url: str, draft: str, stop: threading.Event) -> None:
    """Queue a backtest of ``draft`` whenever none is queued or running, until ``stop``."""
    # A connection of its own: SQLite's may not cross threads.
    db = BenchDb(url)
    while not stop.wait(0.2):
        (active,) = db.rows(
            "SELECT COUNT(*) FROM analyses_backtestjob WHERE state IN ('queued', 'running')"
        )[0]
        if not active:
            _queue(db, draft)
    db.close()


def _draft(app: str) -> str:
    """The history's analysis as a draft evaluated every ``DRAFT_INTERVAL`` seconds."""
    metrics = harness.two_metrics(app)
    spec = analysis_manifest(
        HISTORY, NAMESPACE, target=HISTORY, metrics=metrics, interval=f"{DRAFT_INTERVAL}s"
    )["spec"]
    return json.dumps(spec)


def _finished(db: BenchDb, since: datetime) -> tuple[int, int, list[str]]:
    """Backtests finished since ``since``: how many succeeded, their queries, the errors."""
    rows = db.rows(
        "SELECT state, result, error FROM analyses_backtestjob WHERE finished_at >= ?", (since,)
    )
    queries, succeeded, errors = 0, 0, []
    for state, result, error in rows:
        if state == "succeeded":
            succeeded += 1
            loaded = json.loads(result) if isinstance(result, str) else result
            queries += int(loaded["summary"]["queries"])
        else:
            errors.append(f"{state}: {error}")
    return succeeded, queries, errors


def _line(label: str, window: Window) -> str:
    s = window.stats
    return (
        f"{label}: {s.due} due, {s.on_time} on time, {s.late} late, {s.missed} missed; "
        f"dispatch lag p50 {s.lag_p50:.3f} s, p99 {s.lag_p99:.3f} s, max {s.lag_max:.3f} s; "
        f"load {window.load[0]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--analyses", type=int, default=200)
    parser.add_argument("--interval", type=int, default=10, help="seconds (default 10)")
    parser.add_argument("--window", type=int, default=60, help="seconds per window")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    options = parse_options(
        [
            "--cluster",
            "real",
            "--analyses",
            str(args.analyses),
            "--interval",
            str(args.interval),
            "--window",
            str(args.window),
            "--workers",
            str(args.workers),
        ],
        description="",
    )
    rng = random.Random(1)
    apps = [f"bench-{index}" for index in range(options.apps)]
    names = [f"a{index:05d}" for index in range(options.analyses)]
    stop_feed = threading.Event()
    with contextlib.ExitStack() as exits:
        _say("starting the real control plane, Prometheus and the metrics app")
        stack = exits.enter_context(harness.stack(options.workdir, options.cluster))
        threading.Thread(
            target=harness.feed, args=(stack.app, apps, stop_feed, rng), daemon=True
        ).start()
        exits.callback(stop_feed.set)
        api = harness.ApiSession(stack.cluster)
        operator_throughput._prepare(options, api, names)
        _say(f"making {HISTORY}'s {ROLLOUTS} past rollouts")
        _make_history(stack, api, apps[0], options.interval)
        stack.prometheus.wait_for(harness.two_metrics(apps[-1])[0]["query"], timeout=30)
        database, broker, extra = harness.backends("", "", stack, exits)
        operators = harness.start_operators(
            1,
            options.workers,
            stack=stack,
            namespace=NAMESPACE,
            database=database,
            broker=broker,
            exits=exits,
            say=_say,
        )
        db = BenchDb(operators[0].database_url)
        exits.callback(db.close)
        # The history's own analysis was evaluated too.
        operator_throughput.create_analyses(options, api, db, names, apps, already=1)
        time.sleep(options.interval)
        meter = CpuMeter({"operator": operators[0].pid, **extra})
        _say(f"window without a backtest, {options.window} s")
        quiet = operator_throughput._steady_state(operators, db, options, meter, api)
        _say(f"window with a backtest running throughout, {options.window} s")
        stop = threading.Event()
        keeper = threading.Thread(
            target=_keep_one_running, args=(db.url, _draft(apps[0]), stop), daemon=True
        )
        since = datetime.now(UTC)
        keeper.start()
        busy = operator_throughput._steady_state(operators, db, options, meter, api)
        stop.set()
        keeper.join()
        succeeded, queries, errors = _finished(db, since)
    print(
        f"{options.analyses} analyses x 2 metrics every {options.interval} s, "
        f"{options.workers} workers, real control plane, SQLite"
    )
    print(_line("no backtest          ", quiet))
    print(_line("backtest running     ", busy))
    print(
        f"backtests of {ROLLOUTS} rollouts finished in the second window: {succeeded}, "
        f"{queries} queries; failed: {errors or 'none'}"
    )
    return 0 if succeeded and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
