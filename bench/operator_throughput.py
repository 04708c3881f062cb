"""Benchmark: N analyses x 2 metrics at interval I against a cluster and the real Prometheus.

``python -m bench.operator_throughput [--cluster dev|real] [--analyses 1000] [--interval 30]
[--workers 2] [--json]``

Phases, all in one run (docs/performance.md#summary, first target):

1. Start the cluster (``--cluster dev``: devcluster; ``real``: the real control plane of
   docs/realcluster.md), CRD applied, the metrics app (one latency histogram and one gauge per
   ``--apps`` app, fed every second) and Prometheus scraping it; create one Deployment per
   analysis. On the real control plane the Deployments have no pods (``replicas: 0``) and the
   run waits until the Deployment controller has synced every one.
2. Start ``--operators`` replicas of ``manage.py runoperator`` (``SENTINEL_Q_WORKERS=--workers``
   each; one leads, the others only run workers) and create the analyses spread evenly over one
   interval, as a long-running installation would have them.
3. Warm up until every analysis has been evaluated, plus one interval.
4. **Steady state**, ``--runs`` windows of ``--window`` seconds: every due time in a window is
   accounted for from the history rows (on time within 1 s, late, missed), with the operators'
   CPU from /proc, their memory and the load average.
5. **Capacity**: make every analysis due at once (one UPDATE of ``next_due_at``) and measure how
   many evaluations per second the operator completes while saturated.
6. Stop the operator; the **bare loop** (``bench.bare_loop``) makes the same HTTP calls for
   every analysis with as many processes as the operator has workers. Ratio = 5 / 6.

The scale-out run: ``--database-url postgres --broker-url redis --operators 2`` starts a
throwaway PostgreSQL and redis-server from the test kit (or give real URLs of an empty
database and a Redis). ``--json`` prints one JSON object (``bench.throughput_report``).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from bench import bare_loop, harness
from bench.bench_db import BenchDb
from bench.cpu import CpuMeter, CpuUse, tree_memory
from bench.schedule_stats import EvaluationRow, bucket_counts, dispatch_stats
from bench.throughput_options import Options, parse_options
from bench.throughput_report import Capacity, Results, Setup, Window, as_json, as_text
from testkit.manifests import analysis_manifest, deployment_manifest

NAMESPACE = "bench"
LAG = "sentinel_dispatch_lag_seconds_bucket"


def _say(message: str) -> None:
    # Progress on stderr, so that --json leaves stdout to the one object.
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def _evaluated_analyses(db: BenchDb, since: datetime = _EPOCH) -> int:
    found = db.rows(
        "SELECT COUNT(DISTINCT analysis_id) FROM analyses_evaluation WHERE started_at >= ?",
        (since,),
    )
    return int(found[0][0])


def _rows(db: BenchDb, since: datetime) -> list[EvaluationRow]:
    found = db.rows(
        "SELECT analysis_id, due_at, started_at, finished_at, outcome FROM analyses_evaluation "
        "WHERE started_at >= ?",
        (since,),
    )
    return [EvaluationRow(*row) for row in found]


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


def _lag_buckets(operators: list[harness.BenchOperator]) -> dict[float, float]:
    total: dict[float, float] = {}
    for operator in operators:
        for bound, count in bucket_counts(operator.file_samples(LAG)).items():
            total[bound] = total.get(bound, 0.0) + count
    return total


def _steady_state(
    operators: list[harness.BenchOperator],
    db: BenchDb,
    options: Options,
    meter: CpuMeter,
    api: harness.ApiSession,
) -> Window:
    before = _lag_buckets(operators)
    requests_before = api.request_counts()
    start = meter.snapshot()
    window_start = datetime.now(UTC)
    done = threading.Event()
    if options.scrape_interval > 0:
        # As Prometheus would scrape the operator (its /metrics shares a process with dispatch).
        scraper = threading.Thread(
            target=_scrape_until, args=(operators[0], options.scrape_interval, done), daemon=True
        )
        scraper.start()
    time.sleep(options.window)
    done.set()
    window_end = datetime.now(UTC)
    cpu = CpuMeter.between(start, meter.snapshot())
    requests_after = api.request_counts()
    load = os.getloadavg()
    memory = [tree_memory(operator.pid) for operator in operators]
    after = _lag_buckets(operators)
    grace = timedelta(seconds=5)
    # Let the last due times of the window be dispatched before judging them missed.
    time.sleep(grace.total_seconds() + 1)
    found = db.rows("SELECT id, interval_seconds, uid FROM analyses_analysis")
    intervals = {pk: float(seconds) for pk, seconds, _ in found}
    uids = {pk: str(uid) for pk, _, uid in found}
    # Every row: the due time after an analysis's last one (before the window, too) is the rule's.
    rows = _rows(db, _EPOCH)
    stats = dispatch_stats(
        rows, intervals, uids, window_start=window_start, window_end=window_end, grace=grace
    )
    return Window(
        stats,
        before,
        after,
        cpu,
        load,
        rss_mb=sum(rss for rss, _ in memory),
        pss_mb=sum(pss for _, pss in memory),
        requests={
            key: served
            for key, count in requests_after.items()
            if (served := count - requests_before.get(key, 0.0)) > 0
        },
    )


def _capacity(db: BenchDb, options: Options) -> Capacity:
    """Make every analysis due now and measure the saturated evaluation rate."""
    burst = datetime.now(UTC)
    db.rows("UPDATE analyses_analysis SET next_due_at = ? WHERE deleted_at IS NULL", (burst,))
    # A reconcile in flight during the UPDATE reschedules its row past the burst: wait for
    # nearly all, and stop when progress stalls.
    deadline = time.monotonic() + max(120.0, options.analyses / 2.0)
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        done = _evaluated_analyses(db, burst)
        if done >= options.analyses * 0.99:
            break
        if done != last:
            last, last_change = done, time.monotonic()
        elif time.monotonic() - last_change > 20:
            break
        time.sleep(0.5)
    count, finished = db.rows(
        "SELECT COUNT(*), MAX(finished_at) FROM analyses_evaluation WHERE started_at >= ?",
        (burst,),
    )[0]
    if not count:
        return Capacity(0, 0.0)
    return Capacity(int(count), (finished - burst).total_seconds())


def _synced_deployments(api: harness.ApiSession) -> int:
    """Return how many Deployments of the namespace their controller has synced (paged list)."""
    synced, token = 0, ""
    while True:
        path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments?limit=500"
        page = api.request("GET", path + (f"&continue={token}" if token else ""))
        for item in page["items"]:
            status = item.get("status") or {}
            synced += status.get("observedGeneration") == item["metadata"]["generation"]
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return synced


def _prepare(options: Options, api: harness.ApiSession, names: list[str]) -> None:
    harness.create_namespace(api, NAMESPACE)
    # The operator reads a Deployment's spec and metadata only (paused, annotations, pod
    # template): pods would add nothing it reads. On the real control plane each pod would be
    # scheduled, run by kwok and counted in the measurement, so there the Deployments have
    # none (docs/performance.md, the scale-out on the real API server).
    replicas = 0 if options.cluster == "real" else 1
    _say(f"creating {options.analyses} Deployments (replicas {replicas})")
    deployments = [deployment_manifest(name, NAMESPACE, replicas=replicas) for name in names]
    harness.create_all(api, NAMESPACE, deployments, 0)
    if options.cluster == "real":
        # The Deployment and ReplicaSet controllers write a ReplicaSet and statuses for each:
        # let them finish before the operators start, so their work is not measured as the
        # steady state's.
        _say("waiting for the Deployment controller to sync them")
        harness.wait_until(
            lambda: _synced_deployments(api) >= options.analyses,
            timeout=max(120.0, options.analyses / 5.0),
            what="every Deployment synced by its controller",
            interval=5.0,
        )


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
    operators: list[harness.BenchOperator],
    db: BenchDb,
    names: list[str],
    load_before: float,
    extra_pids: dict[str, int],
    api: harness.ApiSession,
) -> Results:
    pids = {f"operator-{index}": operator.pid for index, operator in enumerate(operators)}
    meter = CpuMeter({**harness.server_pids(stack), **extra_pids, **pids})
    windows = []
    for run in range(options.runs):
        _say(f"steady-state window {run + 1} of {options.runs}, {options.window:.0f} s")
        windows.append(_steady_state(operators, db, options, meter, api))
    total = count = 0.0
    for operator in operators:
        total += operator.file_samples("sentinel_evaluation_duration_seconds_sum").get("", 0.0)
        count += operator.file_samples("sentinel_evaluation_duration_seconds_count").get("", 0.0)
    scrape = _scrape_seconds(operators[0])
    capacity, capacity_cpu = Capacity(0, 0.0), CpuUse(0.0, {})
    if options.capacity:
        _say("capacity: every analysis due at once")
        with _profiling(options, operators[0].pid):
            start = meter.snapshot()
            capacity = _capacity(db, options)
            capacity_cpu = CpuMeter.between(start, meter.snapshot())
    for operator in operators:
        operator.stop()
    for name in pids:
        del meter.pids[name]
    bare = bare_cpu = None
    if options.bare:
        _say("bare loop: the same HTTP calls with requests")
        target = bare_loop.Target(
            api_url=stack.cluster.url,
            ca_file=str(stack.cluster.ca_file),
            token=stack.cluster.admin_token,
            prometheus_url=stack.prometheus.url,
        )
        start = meter.snapshot()
        bare = bare_loop.run(target, NAMESPACE, names, options.workers * options.operators)
        bare_cpu = CpuMeter.between(start, meter.snapshot())
    return Results(
        windows=windows,
        duration=(total / max(count, 1.0), count),
        capacity=capacity,
        capacity_cpu=capacity_cpu,
        bare=bare,
        bare_cpu=bare_cpu,
        load_before=load_before,
        scrape_seconds=scrape,
    )


def create_analyses(
    options: Options,
    api: harness.ApiSession,
    db: BenchDb,
    names: list[str],
    apps: list[str],
    *,
    already: int,
) -> None:
    """Create the analyses (two metrics each, on the apps in turn) spread over one interval,
    and wait until each was evaluated once (``already``: analyses evaluated before)."""
    _say(f"creating {options.analyses} analyses over {options.interval} s")
    harness.create_all(
        api,
        NAMESPACE,
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
        lambda: _evaluated_analyses(db) >= options.analyses + already,
        timeout=max(120.0, options.analyses / 5.0),
        what="every analysis evaluated once",
        interval=1.0,
    )


def run(options: Options) -> int:
    if options.operators > 1 and not options.broker_url:
        # Other replicas' workers take tasks only from a shared broker, not the ORM of SQLite.
        raise SystemExit("--operators > 1 needs --database-url and --broker-url")
    rng = random.Random(1)
    apps = [f"bench-{index}" for index in range(options.apps)]
    names = [f"a{index:05d}" for index in range(options.analyses)]
    stop_feed = threading.Event()
    load_before = os.getloadavg()[0]
    with contextlib.ExitStack() as exits:
        _say(f"starting {options.cluster} cluster, Prometheus and the metrics app")
        stack = exits.enter_context(harness.stack(options.workdir, options.cluster))
        feeder = threading.Thread(
            target=harness.feed, args=(stack.app, apps, stop_feed, rng), daemon=True
        )
        feeder.start()
        exits.callback(stop_feed.set)
        api = harness.ApiSession(stack.cluster)
        _prepare(options, api, names)
        probe = harness.two_metrics(apps[-1])[0]["query"]
        stack.prometheus.wait_for(probe, timeout=30)
        database, broker, extra_pids = harness.backends(
            options.database_url, options.broker_url, stack, exits
        )
        operators = harness.start_operators(
            options.operators,
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
        create_analyses(options, api, db, names, apps, already=0)
        warmup = options.warmup * options.interval
        _say(f"all evaluated once; warming up {options.warmup} more interval(s) ({warmup} s)")
        time.sleep(warmup)
        results = _measure(options, stack, operators, db, names, load_before, extra_pids, api)
    setup = Setup(
        cluster=stack.kind,
        analyses=options.analyses,
        metrics_per_analysis=2,
        interval=options.interval,
        window=options.window,
        workers=options.workers,
        operators=options.operators,
        database="postgresql" if database else "sqlite",
        broker="redis" if broker else "orm",
    )
    print(as_json(setup, results) if options.json else as_text(setup, results), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(parse_options(argv, description=__doc__.splitlines()[0]))


if __name__ == "__main__":
    raise SystemExit(main())
