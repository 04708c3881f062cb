"""Chaos soak: N minutes of seeded faults against the whole stack, then the invariants (issue 12).

``python -m bench.soak [--minutes 30] [--seed 1] [--cluster realcluster|devcluster]
[--analyses 200] [--json]``

The stack (``bench.soak_stack``): the cluster with the CRD, the real Prometheus behind the kit's
fault proxy scraping a metrics app, PostgreSQL and Redis, two ``runoperator`` replicas sharing
a Lease, and the web app under gunicorn. Every analysis has one metric whose value follows a
scripted truth (``bench.soak_plan``); the seed draws the truths and a fault schedule on two
concurrent lanes (``bench.soak_faults``). While it runs, the history (``bench.soak_record``)
collects what was served, the faults as they happened, the cluster's statuses and Deployments
every 5 s and every process's RSS every 10 s; at the end the operators are stopped, their
history rows read from PostgreSQL, and every invariant (``bench.soak_invariants``) is checked.
Exit status 1 on any violation. ``docs/reliability.md`` defines the invariants and holds the
figures of the runs made.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from bench.soak_deliveries import notification_figures
from bench.soak_faults import FaultRunner, analysis_object
from bench.soak_invariants import Finding, check_all
from bench.soak_plan import (
    CLUSTER_LANE,
    COMPACT,
    NORMAL,
    PERSON_LANE,
    PROMETHEUS_LANE,
    RECEIVER_LANE,
    SAMPLES_MIN,
    AnalysisPlan,
    Plan,
    draw_plan,
    samples_case,
)
from bench.soak_processes import rss_slopes
from bench.soak_record import (
    ClusterSample,
    FaultRecord,
    History,
    RssSample,
    TruthChange,
    _status_kb,
    memory_mb,
    process_memory,
    read_database,
)
from bench.soak_stack import ClusterApi, Stack, soak_stack
from testkit.manifests import deployment_manifest, namespace_manifest, to_yaml

NAMESPACE = "soak"
# Runs shorter than this draw shorter faults closer together (``soak_plan.COMPACT``).
COMPACT_BELOW_MINUTES = 6.0


@dataclass(frozen=True)
class Options:
    minutes: float
    seed: int
    cluster: str
    analyses: int
    json: bool
    workers: int
    intervals: tuple[int, ...]
    workdir: Path | None
    judge: Path | None = None

    @property
    def seconds(self) -> float:
        return self.minutes * 60.0

    @property
    def settle(self) -> float:
        """Quiet time at the end: every blocked evaluation catches up (invariant 1's bound)."""
        return max(max(self.intervals), 60.0) + 10.0


def parse(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cluster", choices=("realcluster", "devcluster"), default="realcluster")
    parser.add_argument("--analyses", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.add_argument("--workers", type=int, default=2, help="SENTINEL_Q_WORKERS per replica")
    parser.add_argument(
        "--intervals", default="10,15,20,30", help="analysis intervals to draw from, seconds"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs here")
    parser.add_argument(
        "--judge",
        type=Path,
        default=None,
        help="check the invariants on a saved WORKDIR/history.pickle instead of running",
    )
    args = parser.parse_args(argv)
    return Options(
        minutes=args.minutes,
        seed=args.seed,
        cluster=args.cluster,
        analyses=args.analyses,
        json=args.json,
        workers=args.workers,
        intervals=tuple(int(part) for part in args.intervals.split(",")),
        workdir=args.workdir,
        judge=args.judge,
    )


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


# -- what runs beside the faults ------------------------------------------------------------


def _feed(stack: Stack, plan: Plan, history: History, t0: float, stop: threading.Event) -> None:
    """Serve every analysis' scripted value, recording each change when it is made."""
    current: dict[str, Any] = {}
    while True:
        now = time.time()
        served = [(a.name, a.truth.value_at(now - t0)) for a in plan.analyses]
        served += [
            (samples_case(a.name), a.truth.samples_at(now - t0))
            for a in plan.analyses
            if a.truth.guarded
        ]
        for name, value in served:
            before = current.get(name, "unset")
            same = before == value or (
                isinstance(before, float)
                and math.isnan(before)
                and value is not None
                and math.isnan(value)
            )
            if same:
                continue
            if value is None:
                stack.app.clear(name)
            else:
                stack.app.set(name, value)
            current[name] = value
            history.add_truth(TruthChange(time.time(), name, value))
        if stop.wait(0.5):
            return


class Sampler:
    """Cluster state every 5 s, RSS every 10 s, process liveness and the web app every 2 s."""

    def __init__(self, stack: Stack, history: History, stop: threading.Event) -> None:
        self.stack, self.history, self.stop = stack, history, stop
        self.api = ClusterApi(stack.cluster)
        self.web_answers: Counter[str] = Counter()

    def run(self) -> None:
        ticks = 0
        while not self.stop.wait(1.0):
            ticks += 1
            if ticks % 2 == 0:
                self._liveness()
            if ticks % 5 == 0:
                self._cluster()
            if ticks % 10 == 0:
                self._rss()
                self._web()

    def _cluster(self) -> None:
        analyses = self.api.analyses(NAMESPACE)
        deployments = self.api.deployments(NAMESPACE)
        if analyses is None or deployments is None:
            return
        sample = ClusterSample(time.time(), analyses, deployments)
        with self.history.lock:
            self.history.samples.append(sample)

    def memory_now(
        self,
    ) -> tuple[dict[str, float], dict[str, float], dict[str, int | None]]:
        """Return RSS and PSS (MB) of every component's process tree, and its root pid."""
        stack = self.stack
        roots = {
            "cluster": stack.cluster.pid,
            "prometheus": stack.prometheus.pid if stack.prometheus.running else None,
            "postgres": stack.postgres_pid(),
            "redis": stack.redis.pid,
            "web": stack.web.pid if stack.web.running else None,
        }
        for replica in stack.replicas:
            roots[replica.name] = replica.process.pid if replica.process.running else None
        rss, pss = {}, {}
        for component, root in roots.items():
            rss[component], pss[component] = memory_mb(root)
        # The soak process itself, without its children (counted above).
        rss["soak"] = _status_kb(Path("/proc/self/status"), "VmRSS:") / 1024.0
        pss["soak"] = _status_kb(Path("/proc/self/smaps_rollup"), "Pss:") / 1024.0
        roots["soak"] = os.getpid()
        return rss, pss, roots

    def _rss(self) -> None:
        rss, pss, pids = self.memory_now()
        processes = {
            component: process_memory(pid)
            for component, pid in pids.items()
            if component.startswith("operator")
        }
        sample = RssSample(time.time(), rss, pss, pids, processes)
        with self.history.lock:
            self.history.rss.append(sample)

    def _liveness(self) -> None:
        for replica in self.stack.replicas:
            if not replica.lock.acquire(blocking=False):
                continue
            try:
                if replica.expected and replica.process.exited:
                    # stop() of an exited process only collects its exit code.
                    code = replica.process.stop()
                    with self.history.lock:
                        self.history.unexpected_exits.append((time.time(), replica.name, code))
                    replica.process.start(wait=True, timeout=120)
            finally:
                replica.lock.release()
        if not self.stack.web.running:
            with self.history.lock:
                self.history.unexpected_exits.append(
                    (time.time(), "web", self.stack.web.returncode)
                )

    def _web(self) -> None:
        """Read the analyses through the REST API, as the UI would, and count the answers."""
        try:
            response = requests.get(
                f"{self.stack.web_url}/api/v1/analyses/",
                params={"namespace": NAMESPACE},
                headers={"Authorization": f"Token {self.stack.token}"},
                timeout=10,
            )
            self.web_answers[str(response.status_code)] += 1
        except requests.RequestException as exc:
            self.web_answers[type(exc).__name__] += 1


# -- the run --------------------------------------------------------------------------------


def _create_objects(stack: Stack, plan: Plan) -> None:
    objects: list[Any] = [namespace_manifest(NAMESPACE)]
    objects += [deployment_manifest(a.name, NAMESPACE) for a in plan.analyses]
    objects += [analysis_object(a, NAMESPACE) for a in plan.analyses]
    stack.cluster.kubectl("apply", "-f", "-", input=to_yaml(*objects), timeout=300)


def _plan_facts(analysis: AnalysisPlan) -> dict[str, Any]:
    return {
        "kind": analysis.truth.kind.value,
        "interval": analysis.interval,
        "failure_limit": analysis.failure_limit,
        "regress_at": None if math.isinf(analysis.truth.regress_at) else analysis.truth.regress_at,
        "failure_window": analysis.truth.window,
        "min_samples": SAMPLES_MIN if analysis.truth.guarded else None,
    }


def _finish(stack: Stack, history: History) -> None:
    """Stop the operators, then read the cluster's final statuses, events, logs and history."""
    for replica in stack.replicas:
        replica.stop(signal.SIGTERM)
    history.ended = time.time()
    api = ClusterApi(stack.cluster)
    final = None
    for _ in range(30):
        final = api.analyses(NAMESPACE)
        if final is not None:
            break
        time.sleep(1)
    history.final_statuses = final or {}
    history.events = api.events(NAMESPACE)
    for replica in stack.replicas:
        history.logs[replica.name] = replica.process.log_path.read_text(errors="replace")
    history.logs["web"] = (stack.workdir / "web.log").read_text(errors="replace")
    read_database(stack.db, history)
    if stack.receiver is not None:
        # Received.at is monotonic; the history's times are the wall clock.
        offset = time.time() - time.monotonic()
        history.received = [
            (r.at + offset, r.status, r.title, r.message) for r in list(stack.receiver.received)
        ]


def run(options: Options) -> tuple[list[Finding], dict[str, Any]]:
    """Run the soak; return the findings and the figures."""
    plan = draw_plan(
        options.seed,
        analyses=options.analyses,
        seconds=options.seconds,
        settle=options.settle,
        intervals=options.intervals,
        pace=COMPACT if options.minutes < COMPACT_BELOW_MINUTES else NORMAL,
    )
    history = History(NAMESPACE)
    history.plans = {a.name: _plan_facts(a) for a in plan.analyses}
    wall_start = time.monotonic()
    with contextlib.ExitStack() as exits:
        workdir = options.workdir
        if workdir is None:
            workdir = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        workdir.mkdir(parents=True, exist_ok=True)
        _say(f"starting {options.cluster}, Prometheus, fault proxy, PostgreSQL, Redis, web app")
        stack = exits.enter_context(
            soak_stack(options.cluster, workdir, NAMESPACE, workers=options.workers)
        )
        stop = threading.Event()
        exits.callback(stop.set)
        t0 = time.time()
        feeder = threading.Thread(target=_feed, args=(stack, plan, history, t0, stop), daemon=True)
        feeder.start()
        _say(f"creating {options.analyses} Deployments and analyses")
        _create_objects(stack, plan)
        for replica in stack.replicas:
            replica.start()
        history.started = t0
        origin = time.time()
        # Nothing could be evaluated before the operators ran: invariant 1 counts from here.
        history.add_fault(FaultRecord("setup", t0, origin, origin))
        _say(f"two operator replicas up; {len(plan.faults)} faults over {options.minutes} min")
        sampler = Sampler(stack, history, stop)
        threading.Thread(target=sampler.run, daemon=True).start()
        runner = FaultRunner(
            stack, history, {a.name: a for a in plan.analyses}, NAMESPACE, options.seed, stop
        )
        lanes = [
            [f for f in plan.faults if f.kind in PROMETHEUS_LANE],
            [f for f in plan.faults if f.kind in CLUSTER_LANE],
            [f for f in plan.faults if f.kind in RECEIVER_LANE],
            [f for f in plan.faults if f.kind in PERSON_LANE],
        ]
        threads = [
            threading.Thread(target=runner.run_lane, args=(lane, origin), daemon=True)
            for lane in lanes
        ]
        for thread in threads:
            thread.start()
        end = origin + options.seconds
        while time.time() < end:
            time.sleep(min(30.0, max(0.0, end - time.time())))
            done = len(history.faults) - 1
            _say(f"{time.time() - t0:.0f} s: {done} faults done, {len(history.samples)} samples")
        for thread in threads:
            # A fault still running past the end (a slow API server restart) is waited for.
            thread.join(timeout=300)
        stop.set()
        _say("stopping the operators and reading the history")
        _finish(stack, history)
        history.save(workdir / "history.pickle")
        figures = _figures(options, history, sampler, time.monotonic() - wall_start)
    return check_all(history), figures


def _figures(options: Options, history: History, sampler: Sampler, wall: float) -> dict[str, Any]:
    done = [f for f in history.faults if not f.skipped and f.kind != "setup"]
    return {
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
        "faults_by_kind": dict(sorted(Counter(f.kind for f in done).items())),
        "faults_skipped": dict(Counter(f.kind for f in history.faults if f.skipped)),
        "faults_failed": [f"{f.kind}: {f.detail}" for f in history.faults if "failed:" in f.detail],
        "faults": [
            {
                "kind": f.kind,
                "at": round(f.started - history.started, 1),
                "seconds": round(f.ended - f.started, 1),
                "analysis": f.analysis,
                "detail": f.detail,
            }
            for f in sorted(history.faults, key=lambda f: f.started)
            if f.kind != "setup"
        ],
        "near_boundary": sum(1 for f in done if "due time" in f.detail and "before" in f.detail),
        "attempts": len(history.attempts),
        "attempts_by_outcome": dict(Counter(a.outcome for a in history.attempts)),
        "pauses": sum(1 for a in history.attempts if a.paused),
        "truth_changes": len(history.truths),
        "cluster_samples": len(history.samples),
        "rss_samples": len(history.rss),
        "rss_last_mb": {
            k: round(v, 1) for k, v in (history.rss[-1].mb if history.rss else {}).items()
        },
        "pss_last_mb": {
            k: round(v, 1) for k, v in (history.rss[-1].pss if history.rss else {}).items()
        },
        "operators_pss_max_mb": round(
            max(
                (sum(v for k, v in r.pss.items() if k.startswith("operator")) for r in history.rss),
                default=0.0,
            ),
            1,
        ),
        "rss_slope_mb_per_min": {k: round(v, 2) for k, v in rss_slopes(history).items()},
        "web_answers": dict(sampler.web_answers),
        "notification_tables": sorted(history.notifications),
        "notifications": notification_figures(history),
        "wall_seconds": round(wall, 1),
    }


def report(findings: list[Finding], figures: dict[str, Any], as_json: bool) -> int:
    violations = sum(len(f.violations) for f in findings)
    if as_json:
        print(
            json.dumps(
                {
                    "invariants": [
                        {
                            "number": f.number,
                            "title": f.title,
                            "checked": f.checked,
                            "violations": f.violations,
                            "notes": f.notes,
                        }
                        for f in findings
                    ],
                    "violations": violations,
                    **figures,
                }
            ),
            flush=True,
        )
        return 1 if violations else 0
    lines = ["", f"soak: {json.dumps(figures['options'])}"]
    lines.append(f"faults injected by kind: {json.dumps(figures['faults_by_kind'])}")
    for fault in figures["faults"]:
        lines.append(
            f"    {fault['at']:7.1f} s  {fault['kind']:<24} {fault['seconds']:5.1f} s  "
            f"{fault['analysis']} {fault['detail']}".rstrip()
        )
    if figures["faults_skipped"] or figures["faults_failed"]:
        lines.append(
            f"faults skipped: {figures['faults_skipped']}; failed: {figures['faults_failed']}"
        )
    lines.append(
        f"attempts {figures['attempts']} {json.dumps(figures['attempts_by_outcome'])}, "
        f"pauses {figures['pauses']}, cluster samples {figures['cluster_samples']}, "
        f"web answers {figures['web_answers']}, operators' PSS at most "
        f"{figures['operators_pss_max_mb']} MB"
    )
    for finding in findings:
        mark = "ok" if not finding.violations else "VIOLATED"
        lines.append(
            f"invariant {finding.number} [{mark}] {finding.title}: checked {finding.checked}, "
            f"violations {len(finding.violations)}"
        )
        lines += [f"    - {v}" for v in finding.violations[:20]]
        if len(finding.violations) > 20:
            lines.append(f"    ... {len(finding.violations) - 20} more")
        lines += [f"    . {note}" for note in finding.notes]
    lines.append(f"violations: {violations}; wall time {figures['wall_seconds']} s")
    print("\n".join(lines), flush=True)
    return 1 if violations else 0


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    if options.judge is not None:
        findings = check_all(History.load(options.judge))
        for finding in findings:
            print(f"invariant {finding.number}: checked {finding.checked}")
            print("\n".join(f"    - {v}" for v in finding.violations + finding.notes))
        return 1 if any(f.violations for f in findings) else 0
    findings, figures = run(options)
    return report(findings, figures, options.json)


if __name__ == "__main__":
    raise SystemExit(main())
