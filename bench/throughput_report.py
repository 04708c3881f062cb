"""What ``bench.operator_throughput`` prints: the readable report, or one JSON object.

The JSON object (``--json``) holds the fields issue 11 asks for. With ``--runs N`` the
top-level lag figures are the worst of the N steady-state windows (highest p99, most late and
missed), and ``runs`` lists every window with its own load average, for the 10-run table of
docs/performance.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from bench import bare_loop
from bench.cpu import CpuUse
from bench.schedule_stats import DispatchStats, histogram_quantile, share_within


@dataclass(frozen=True)
class Capacity:
    evaluations: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class Window:
    """One steady-state window."""

    stats: DispatchStats
    lag_before: dict[float, float]
    lag_after: dict[float, float]
    cpu: CpuUse
    # 1, 5 and 15 minute load averages at the end of the window.
    load: tuple[float, float, float]
    # Summed over every operator process tree: resident and proportional set sizes.
    rss_mb: float
    pss_mb: float
    # Requests the API server served in the window (its apiserver_request_total, every
    # client), by "VERB resource[/subresource]"; empty on devcluster, which exports none.
    requests: dict[str, float]


@dataclass(frozen=True)
class Setup:
    # "devcluster" or "realcluster" (docs/realcluster.md): the API server the run measured.
    cluster: str
    analyses: int
    metrics_per_analysis: int
    interval: int
    window: float
    workers: int
    operators: int
    database: str
    broker: str


@dataclass(frozen=True)
class Results:
    windows: list[Window]
    # Mean reconcile duration (s) and how many reconciles it averages.
    duration: tuple[float, float]
    capacity: Capacity
    capacity_cpu: CpuUse
    bare: bare_loop.BareLoopResult | None
    bare_cpu: CpuUse | None
    load_before: float
    scrape_seconds: float


def operator_ms(cpu: CpuUse, work: float) -> float:
    """CPU milliseconds of every operator process tree per unit of ``work``."""
    used = sum(seconds for name, seconds in cpu.by_component.items() if name.startswith("operator"))
    return 1000 * used / work if work > 0 else float("nan")


def _round(value: float, digits: int = 3) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def per_process_ms(cpu: CpuUse, work: float) -> dict[str, float | None]:
    """CPU milliseconds of each measured process (tree) per unit of ``work``."""
    return {name: _round(1000 * used / max(work, 1), 2) for name, used in cpu.by_component.items()}


def requests_per_eval(window: Window) -> dict[str, float | None]:
    """The API server's requests of each kind per evaluation in ``window``, most first."""
    evaluations = max(window.stats.evaluations_in_window, 1)
    ordered = sorted(window.requests.items(), key=lambda item: (-item[1], item[0]))
    return {key: _round(count / evaluations, 3) for key, count in ordered}


def _window_json(setup: Setup, window: Window) -> dict[str, Any]:
    stats = window.stats
    return {
        "lag_p50_s": _round(stats.lag_p50),
        "lag_p99_s": _round(stats.lag_p99),
        "lag_max_s": _round(stats.lag_max),
        "own_histogram_lag_p99_s": _round(
            histogram_quantile(0.99, window.lag_before, window.lag_after)
        ),
        "due": stats.due,
        "missed": stats.missed,
        "late_over_1s": stats.late,
        "skipped_slots": stats.skipped_slots,
        "errors": stats.errors,
        "evaluations": stats.evaluations_in_window,
        "operator_cpu_ms_per_eval": _round(operator_ms(window.cpu, stats.evaluations_in_window), 2),
        "cpu_ms_per_eval": per_process_ms(window.cpu, stats.evaluations_in_window),
        # Every measured process together, in cores: near 2 means the machine is the limit.
        "cores_busy": _round(sum(window.cpu.by_component.values()) / window.cpu.seconds, 2),
        "kube_requests_per_eval": requests_per_eval(window),
        "kube_requests_per_eval_total": _round(
            sum(window.requests.values()) / max(stats.evaluations_in_window, 1), 3
        )
        if window.requests
        else None,
        "operator_rss_mb": round(window.rss_mb, 1),
        "operator_pss_mb": round(window.pss_mb, 1),
        "load_avg": [round(value, 2) for value in window.load],
    }


def as_json(setup: Setup, r: Results) -> str:
    runs = [_window_json(setup, window) for window in r.windows]
    worst = max(runs, key=lambda run: (run["lag_p99_s"] or 0.0, run["late_over_1s"]))
    bare = r.bare.per_second if r.bare is not None else float("nan")
    saturated = r.capacity.per_second
    steady_evals = sum(window.stats.evaluations_in_window for window in r.windows)
    steady_cpu = sum(
        operator_ms(window.cpu, 1.0) / 1000 for window in r.windows
    )  # operator CPU seconds over every window
    body: dict[str, Any] = {
        "cluster": setup.cluster,
        "analyses": setup.analyses,
        "metrics_per_analysis": setup.metrics_per_analysis,
        "interval_s": setup.interval,
        "window_s": setup.window,
        "workers": setup.workers,
        "operators": setup.operators,
        "database": setup.database,
        "broker": setup.broker,
        "lag_p50_s": worst["lag_p50_s"],
        "lag_p99_s": worst["lag_p99_s"],
        "missed": max(run["missed"] for run in runs),
        "late_over_1s": max(run["late_over_1s"] for run in runs),
        "operator_cpu_ms_per_eval": _round(1000 * steady_cpu / max(steady_evals, 1), 2),
        "operator_saturated_cpu_ms_per_eval": _round(
            operator_ms(r.capacity_cpu, r.capacity.evaluations), 2
        ),
        "saturated_cpu_ms_per_eval": per_process_ms(r.capacity_cpu, r.capacity.evaluations),
        "bare_loop_evals_per_s": _round(bare, 1),
        # What the same HTTP calls cost each server without the operator (the loop's own
        # processes excluded): the floor of the cluster's and Prometheus's share.
        "bare_loop_cpu_ms_per_cycle": (
            per_process_ms(r.bare_cpu, r.bare.cycles)
            if r.bare is not None and r.bare_cpu is not None
            else None
        ),
        "operator_saturated_evals_per_s": _round(saturated, 1),
        "ratio": _round(saturated / bare if bare else float("nan"), 3),
        "operator_rss_mb": max(run["operator_rss_mb"] for run in runs),
        "operator_pss_mb": max(run["operator_pss_mb"] for run in runs),
        "load_avg": worst["load_avg"],
        "load_avg_before": round(r.load_before, 2),
        "reconcile_mean_ms": round(r.duration[0] * 1000, 1),
        "runs": runs,
    }
    return json.dumps(body, sort_keys=False)


def as_text(setup: Setup, r: Results) -> str:
    offered = setup.analyses / setup.interval
    lines = [
        "",
        f"operator throughput on {setup.cluster}: {setup.analyses} analyses x "
        f"{setup.metrics_per_analysis} metrics "
        f"every {setup.interval} s, {setup.operators} operator(s) x SENTINEL_Q_WORKERS="
        f"{setup.workers}, database {setup.database}, broker {setup.broker}; load average "
        f"before the run {r.load_before:.2f} (2 cores, shared)",
        f"steady state ({setup.window:.0f} s windows, offered {offered:.1f} evaluations/s):",
    ]
    for index, window in enumerate(r.windows, 1):
        stats = window.stats
        lines += [
            f" run {index}: load {' '.join(f'{v:.2f}' for v in window.load)}; "
            f"{stats.evaluations_in_window} evaluations over {stats.analyses_seen} analyses",
            f"  due times in window            {stats.due}: {stats.on_time} within 1 s, "
            f"{stats.late} late, {stats.missed} missed; skipped slots {stats.skipped_slots}; "
            f"Error outcomes {stats.errors}",
            f"  dispatch lag from history      p50 {stats.lag_p50:.3f} s  p99 "
            f"{stats.lag_p99:.3f} s  max {stats.lag_max:.3f} s",
            f"  dispatch lag, own histogram    p50 "
            f"{histogram_quantile(0.5, window.lag_before, window.lag_after):.3f} s  p99 "
            f"{histogram_quantile(0.99, window.lag_before, window.lag_after):.3f} s  (<= 1 s: "
            f"{100 * share_within(1.0, window.lag_before, window.lag_after):.1f} %)",
            "  " + window.cpu.line(stats.evaluations_in_window, "evaluation"),
        ]
        if window.requests:
            per_eval = requests_per_eval(window)
            total = sum(window.requests.values()) / max(stats.evaluations_in_window, 1)
            lines.append(
                f"  API server requests per eval.  {total:.2f}: "
                + ", ".join(f"{key} {value:.3f}" for key, value in per_eval.items())
            )
        lines += [
            f"  operator memory                RSS {window.rss_mb:.0f} MB, PSS "
            f"{window.pss_mb:.0f} MB (all operator processes)",
        ]
    lines += [
        f"  reconcile duration (mean)      {r.duration[0] * 1000:.0f} ms over "
        f"{r.duration[1]:.0f} reconciles",
        f"  one scrape of /metrics         {r.scrape_seconds:.2f} s",
        "capacity:",
        f"  operator, saturated            {r.capacity.per_second:.1f} evaluations/s "
        f"({r.capacity.evaluations} in {r.capacity.seconds:.1f} s)",
        "  " + r.capacity_cpu.line(r.capacity.evaluations, "evaluation"),
    ]
    if r.bare is not None and r.bare_cpu is not None:
        bare_cpu = CpuUse(
            r.bare_cpu.seconds, {**r.bare_cpu.by_component, "loop clients": r.bare.client_cpu}
        )
        ratio = r.capacity.per_second / r.bare.per_second
        lines += [
            f"  bare requests loop             {r.bare.per_second:.1f} cycles/s "
            f"({r.bare.cycles} in {r.bare.seconds:.1f} s, {r.bare.processes} processes)",
            "  " + bare_cpu.line(r.bare.cycles, "cycle"),
            f"  ratio operator / bare loop     {ratio:.2f}  (target >= 0.6)",
        ]
    return "\n".join(lines)
