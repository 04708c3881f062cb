"""Benchmark: N analyses x 2 metrics at interval I against devcluster and the real Prometheus.

``python -m bench.operator_throughput [--analyses 1000] [--interval 30] [--workers 4]``

Phases, all in one run (SPEC §13, first target):

1. Start devcluster (CRD applied), the metrics app (one latency histogram and one gauge per
   ``--apps`` app, fed every second) and Prometheus scraping it; create one Deployment per
   analysis.
2. Start ``manage.py runoperator`` (``SENTINEL_Q_WORKERS=--workers``) and create the analyses
   spread evenly over one interval, as a long-running installation would have them.
3. Warm up until every analysis has been evaluated, plus one interval.
4. **Steady state** for ``--window`` seconds: every due time in the window is accounted for
   from the history rows (on time within 1 s, late, missed), and the operator's own
   ``sentinel_dispatch_lag_seconds`` histogram is read before and after.
5. **Capacity**: make every analysis due at once (one UPDATE of ``next_due_at``) and measure how
   many evaluations per second the operator completes while saturated.
6. Stop the operator; the **bare loop** (``bench.bare_loop``) makes the same HTTP calls for
   every analysis with as many processes as the operator has workers. Ratio = 5 / 6.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench import bare_loop, harness
from bench.cpu import CpuMeter, CpuUse
from bench.schedule_stats import (
    DispatchStats,
    EvaluationRow,
    bucket_counts,
    dispatch_stats,
    histogram_quantile,
    share_within,
)
from testkit.databases import RedisServer
from testkit.manifests import API_VERSION, analysis_manifest, deployment_manifest
from testkit.metrics_app import MetricsApp

NAMESPACE = "bench"
LAG = "sentinel_dispatch_lag_seconds_bucket"


@dataclass(frozen=True)
class Options:
    analyses: int
    interval: int
    workers: int
    window: float
    apps: int
    workdir: Path | None
    # py-spy binary and output file: profile the operator while it is saturated.
    py_spy: str
    profile: Path | None
    # Use a throwaway redis-server as django-q2's broker (the ha overlay) instead of the ORM.
    redis: bool
    # Scrape the operator's /metrics this often during the window (0: never), as Prometheus would.
    scrape_interval: float


@dataclass(frozen=True)
class Capacity:
    evaluations: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else float("nan")


def _parse(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--analyses", type=int, default=1000)
    parser.add_argument("--interval", type=int, default=30, help="seconds (default 30)")
    parser.add_argument("--workers", type=int, default=4, help="SENTINEL_Q_WORKERS (default 4)")
    parser.add_argument(
        "--window", type=float, default=0.0, help="steady-state seconds (default 3 intervals)"
    )
    parser.add_argument("--apps", type=int, default=50, help="distinct series sets (default 50)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs and databases here")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write py-spy's collapsed stacks of the capacity phase here",
    )
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy binary for --profile")
    parser.add_argument(
        "--redis", action="store_true", help="broker: a throwaway redis-server, not the ORM"
    )
    parser.add_argument(
        "--scrape-interval",
        type=float,
        default=0.0,
        help="scrape the operator's /metrics every this many seconds in the window (default never)",
    )
    args = parser.parse_args(argv)
    return Options(
        analyses=args.analyses,
        interval=args.interval,
        workers=args.workers,
        window=args.window or 3.0 * args.interval,
        apps=args.apps,
        workdir=args.workdir,
        py_spy=args.py_spy,
        profile=args.profile,
        redis=args.redis,
        scrape_interval=args.scrape_interval,
    )


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def _db_time(moment: datetime) -> str:
    # Django stores aware datetimes in SQLite as naive UTC text in this form.
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def _parse_db_time(raw: str) -> datetime:
    return datetime.fromisoformat(raw).replace(tzinfo=UTC)


def _feed(app: MetricsApp, apps: list[str], stop: threading.Event, rng: random.Random) -> None:
    """Keep every app's histogram rising (rate() needs it) at a healthy latency."""
    for name in apps:
        app.set(name, 0.01)
        app.observe(name, 0.05, n=0)
    while not stop.wait(1.0):
        for name in apps:
            for _ in range(5):
                app.observe(name, rng.uniform(0.01, 0.1))


def _create_all(api: harness.ApiSession, objects: list[dict[str, object]], spread: float) -> None:
    """POST ``objects`` evenly over ``spread`` seconds (at once when 0)."""
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = []
        for index, obj in enumerate(objects):
            delay = start + spread * index / len(objects) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            kind = "rolloutanalyses" if obj["kind"] == "RolloutAnalysis" else "deployments"
            group = API_VERSION if kind == "rolloutanalyses" else "apps/v1"
            path = f"/apis/{group}/namespaces/{NAMESPACE}/{kind}"
            futures.append(pool.submit(api.request, "POST", path, obj))
        for future in futures:
            future.result()


def _evaluated_analyses(db: sqlite3.Connection, since: str = "") -> int:
    row = db.execute(
        "SELECT COUNT(DISTINCT analysis_id) FROM analyses_evaluation WHERE started_at >= ?",
        (since,),
    ).fetchone()
    return int(row[0])


def _rows(db: sqlite3.Connection, since: datetime) -> list[EvaluationRow]:
    found = db.execute(
        "SELECT analysis_id, started_at, finished_at, outcome FROM analyses_evaluation "
        "WHERE started_at >= ?",
        (_db_time(since),),
    )
    return [
        EvaluationRow(pk, _parse_db_time(started), _parse_db_time(finished), outcome)
        for pk, started, finished, outcome in found
    ]


def _scrape_until(operator: harness.BenchOperator, interval: float, done: threading.Event) -> None:
    while not done.wait(interval):
        operator.metrics_text()


def _scrape_seconds(operator: harness.BenchOperator) -> float:
    """Return the median time of three scrapes of the operator's /metrics."""
    times = []
    for _ in range(3):
        started = time.monotonic()
        operator.metrics_text()
        times.append(time.monotonic() - started)
    return sorted(times)[1]


def _steady_state(
    operator: harness.BenchOperator, db: sqlite3.Connection, options: Options
) -> tuple[DispatchStats, dict[float, float], dict[float, float], datetime, datetime]:
    before = bucket_counts(operator.file_samples(LAG))
    window_start = datetime.now(UTC)
    done = threading.Event()
    if options.scrape_interval > 0:
        # As Prometheus would scrape the operator (its /metrics shares a process with dispatch).
        scraper = threading.Thread(
            target=_scrape_until, args=(operator, options.scrape_interval, done), daemon=True
        )
        scraper.start()
    time.sleep(options.window)
    done.set()
    window_end = datetime.now(UTC)
    after = bucket_counts(operator.file_samples(LAG))
    grace = timedelta(seconds=5)
    # Let the last due times of the window be dispatched before judging them missed.
    time.sleep(grace.total_seconds() + 1)
    intervals = dict(db.execute("SELECT id, interval_seconds FROM analyses_analysis"))
    rows = _rows(db, window_start - timedelta(seconds=options.interval + 30))
    stats = dispatch_stats(
        rows, intervals, window_start=window_start, window_end=window_end, grace=grace
    )
    return stats, before, after, window_start, window_end


def _capacity(db: sqlite3.Connection, options: Options) -> Capacity:
    """Make every analysis due now and measure the saturated evaluation rate."""
    burst = datetime.now(UTC)
    since = _db_time(burst)
    with db:
        db.execute(
            "UPDATE analyses_analysis SET next_due_at = ? WHERE deleted_at IS NULL", (since,)
        )
    # A reconcile in flight during the UPDATE reschedules its row past the burst: wait for
    # nearly all, and stop when progress stalls.
    deadline = time.monotonic() + max(120.0, options.analyses / 2.0)
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        done = _evaluated_analyses(db, since)
        if done >= options.analyses * 0.99:
            break
        if done != last:
            last, last_change = done, time.monotonic()
        elif time.monotonic() - last_change > 20:
            break
        time.sleep(0.5)
    count, finished = db.execute(
        "SELECT COUNT(*), MAX(finished_at) FROM analyses_evaluation WHERE started_at >= ?",
        (since,),
    ).fetchone()
    if not count:
        return Capacity(0, 0.0)
    return Capacity(int(count), (_parse_db_time(finished) - burst).total_seconds())


@dataclass(frozen=True)
class Results:
    stats: DispatchStats
    lag_before: dict[float, float]
    lag_after: dict[float, float]
    # Mean reconcile duration (s) and how many reconciles it averages.
    duration: tuple[float, float]
    steady_cpu: CpuUse
    capacity: Capacity
    capacity_cpu: CpuUse
    bare: bare_loop.BareLoopResult
    bare_cpu: CpuUse
    load_before: float
    # Median wall time of one scrape of the operator's /metrics after the window.
    scrape_seconds: float


def _print_report(options: Options, r: Results) -> None:
    stats, before, after, capacity, bare = (
        r.stats,
        r.lag_before,
        r.lag_after,
        r.capacity,
        r.bare,
    )
    ratio = capacity.per_second / bare.per_second
    offered = options.analyses / options.interval
    bare_cpu = CpuUse(
        r.bare_cpu.seconds, {**r.bare_cpu.by_component, "loop clients": bare.client_cpu}
    )
    lines = [
        "",
        f"operator throughput: {options.analyses} analyses x 2 metrics every "
        f"{options.interval} s, SENTINEL_Q_WORKERS={options.workers}, broker "
        f"{'redis' if options.redis else 'ORM (SQLite)'}; machine load average "
        f"before the run {r.load_before:.2f} (2 cores, shared)",
        f"steady state ({options.window:.0f} s window, offered {offered:.1f} evaluations/s):",
        f"  evaluations started in window  {stats.evaluations_in_window} "
        f"({stats.evaluations_in_window / options.window:.1f}/s) over {stats.analyses_seen} "
        f"analyses, {stats.min_per_analysis}..{stats.max_per_analysis} each",
        f"  due times in window            {stats.due}: {stats.on_time} within 1 s, "
        f"{stats.late} late, {stats.missed} missed (not started within 5 s of the window end)",
        f"  skipped slots (lag > interval) {stats.skipped_slots};  Error outcomes {stats.errors}",
        f"  dispatch lag from history      p50 {stats.lag_p50:.3f} s  p99 {stats.lag_p99:.3f} s"
        f"  max {stats.lag_max:.3f} s",
        f"  dispatch lag, own histogram    p50 {histogram_quantile(0.5, before, after):.3f} s  "
        f"p99 {histogram_quantile(0.99, before, after):.3f} s  "
        f"(<= 1 s: {100 * share_within(1.0, before, after):.1f} %)",
        f"  reconcile duration (mean)      {r.duration[0] * 1000:.0f} ms over "
        f"{r.duration[1]:.0f} reconciles",
        "  " + r.steady_cpu.line(stats.evaluations_in_window, "evaluation"),
        f"  one scrape of /metrics         {r.scrape_seconds:.2f} s"
        + (
            f" (scraped every {options.scrape_interval:.0f} s in the window)"
            if options.scrape_interval
            else " (not scraped in the window)"
        ),
        "capacity:",
        f"  operator, saturated            {capacity.per_second:.1f} evaluations/s "
        f"({capacity.evaluations} in {capacity.seconds:.1f} s)",
        "  " + r.capacity_cpu.line(capacity.evaluations, "evaluation"),
        f"  bare requests loop             {bare.per_second:.1f} cycles/s "
        f"({bare.cycles} in {bare.seconds:.1f} s, {bare.processes} processes)",
        "  " + bare_cpu.line(bare.cycles, "cycle"),
        f"  ratio operator / bare loop     {ratio:.2f}  (target >= 0.5)",
        f"targets: p99 lag <= 1 s: {'met' if stats.lag_p99 <= 1.0 else 'MISSED'}; "
        f"no missed evaluation: "
        f"{'met' if stats.missed == 0 and stats.skipped_slots == 0 else 'MISSED'}; "
        f"ratio >= 0.5: {'met' if ratio >= 0.5 else 'MISSED'}",
    ]
    print("\n".join(lines), flush=True)


def _prepare(options: Options, api: harness.ApiSession, names: list[str]) -> None:
    harness.create_namespace(api, NAMESPACE)
    _say(f"creating {options.analyses} Deployments")
    _create_all(api, [deployment_manifest(name, NAMESPACE) for name in names], 0)


@contextlib.contextmanager
def _profiling(options: Options, pid: int) -> Iterator[None]:
    """Sample the operator and its workers with py-spy while the block runs (if asked)."""
    if options.profile is None:
        yield
        return
    command = [options.py_spy, "record", "--pid", str(pid), "--subprocesses", "--rate", "50"]
    command += ["--format", "raw", "--output", str(options.profile), "--nonblocking"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        yield
    finally:
        # SIGINT makes py-spy write its output and exit.
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


def _measure(
    options: Options,
    stack: harness.Stack,
    operator: harness.BenchOperator,
    db: sqlite3.Connection,
    names: list[str],
    load_before: float,
) -> Results:
    meter = CpuMeter({**harness.server_pids(stack), "operator": operator.pid})
    _say(f"steady-state window of {options.window:.0f} s")
    start = meter.snapshot()
    stats, before, after, _, _ = _steady_state(operator, db, options)
    steady_cpu = CpuMeter.between(start, meter.snapshot())
    total = operator.file_samples("sentinel_evaluation_duration_seconds_sum").get("", 0.0)
    count = operator.file_samples("sentinel_evaluation_duration_seconds_count").get("", 0.0)
    scrape = _scrape_seconds(operator)
    _say("capacity: every analysis due at once")
    with _profiling(options, operator.pid):
        start = meter.snapshot()
        capacity = _capacity(db, options)
        capacity_cpu = CpuMeter.between(start, meter.snapshot())
    operator.stop()
    del meter.pids["operator"]
    _say("bare loop: the same HTTP calls with requests")
    target = bare_loop.Target(
        api_url=stack.cluster.url,
        ca_file=str(stack.cluster.ca_file),
        token=stack.cluster.admin_token,
        prometheus_url=stack.prometheus.url,
    )
    start = meter.snapshot()
    bare = bare_loop.run(target, NAMESPACE, names, options.workers)
    bare_cpu = CpuMeter.between(start, meter.snapshot())
    return Results(
        stats=stats,
        lag_before=before,
        lag_after=after,
        duration=(total / max(count, 1.0), count),
        steady_cpu=steady_cpu,
        capacity=capacity,
        capacity_cpu=capacity_cpu,
        bare=bare,
        bare_cpu=bare_cpu,
        load_before=load_before,
        scrape_seconds=scrape,
    )


def run(options: Options) -> int:
    rng = random.Random(1)
    apps = [f"bench-{index}" for index in range(options.apps)]
    names = [f"a{index:05d}" for index in range(options.analyses)]
    stop_feed = threading.Event()
    load_before = os.getloadavg()[0]
    with contextlib.ExitStack() as exits:
        _say("starting devcluster, Prometheus and the metrics app")
        stack = exits.enter_context(harness.stack(options.workdir))
        feeder = threading.Thread(target=_feed, args=(stack.app, apps, stop_feed, rng), daemon=True)
        feeder.start()
        exits.callback(stop_feed.set)
        api = harness.ApiSession(stack.cluster)
        _prepare(options, api, names)
        probe = harness.two_metrics(apps[-1])[0]["query"]
        stack.prometheus.wait_for(probe, timeout=30)

        extra_env = {}
        if options.redis:
            redis = exits.enter_context(RedisServer(stack.workdir / "redis"))
            extra_env["SENTINEL_BROKER_URL"] = redis.url
        operator = harness.BenchOperator(
            stack.workdir / "operator",
            stack=stack,
            namespaces=[NAMESPACE],
            workers=options.workers,
            extra_env=extra_env,
        )
        _say(f"starting runoperator with {options.workers} workers")
        operator.start()
        exits.callback(operator.stop)
        db = exits.enter_context(contextlib.closing(operator.connect()))
        _say(f"creating {options.analyses} analyses over {options.interval} s")
        _create_all(
            api,
            [
                analysis_manifest(
                    name,
                    NAMESPACE,
                    target=name,
                    metrics=harness.two_metrics(apps[index % len(apps)]),
                    interval=f"{options.interval}s",
                )
                for index, name in enumerate(names)
            ],
            options.interval,
        )
        harness.wait_until(
            lambda: _evaluated_analyses(db) >= options.analyses,
            timeout=max(120.0, options.analyses / 5.0),
            what="every analysis evaluated once",
            interval=1.0,
        )
        _say(f"all evaluated once; warming up one more interval ({options.interval} s)")
        time.sleep(options.interval)
        results = _measure(options, stack, operator, db, names, load_before)
    _print_report(options, results)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(_parse(argv))


if __name__ == "__main__":
    raise SystemExit(main())
