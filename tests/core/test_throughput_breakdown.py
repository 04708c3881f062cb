"""``bench.operator_throughput``'s CPU breakdown by process (docs/performance.md, the scale-out
on the real API server): the real control plane's components found by program name, and the
per-process figures of every phase in the JSON report, with the API server's requests per
evaluation."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.bare_loop import BareLoopResult
from bench.cpu import CpuUse, named_descendants
from bench.schedule_stats import DispatchStats
from bench.throughput_report import Capacity, Results, Setup, Window, as_json


@pytest.fixture
def long_named_child(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A ``sleep`` started as ``.../kube-controller-manager`` (longer than /proc's 15-char comm).

    Under a shell of its own, whose pid is the root searched: the test worker's own descendants
    may hold a real control plane started by an earlier test (its etcd, its
    kube-controller-manager), which the search would rightly find too.
    """
    program = tmp_path / "kube-controller-manager"
    program.symlink_to("/bin/sleep")
    shell = subprocess.Popen(
        ["/bin/sh", "-c", f'"{program}" 30 & echo $!; wait'], stdout=subprocess.PIPE, text=True
    )
    assert shell.stdout is not None
    child = int(shell.stdout.readline())
    try:
        yield shell.pid, child
    finally:
        os.kill(child, 9)
        shell.wait()
        shell.stdout.close()


def test_components_are_found_by_their_full_program_name(
    long_named_child: tuple[int, int],
) -> None:
    root, child = long_named_child
    found = named_descendants(root, ("kube-controller-manager", "etcd"))
    assert found == {"kube-controller-manager": child}


def test_the_json_report_breaks_every_phase_down_by_process() -> None:
    # 100 due times, all on time (lag p50 / p99 / max 0.01 / 0.2 / 0.3 s), 100 evaluations of 50.
    stats = DispatchStats(100, 100, 0, 0, 0, 0.01, 0.2, 0.3, 0, 100, 50, 2, 2)
    steady = CpuUse(
        10.0, {"kube-apiserver": 1.0, "etcd": 0.2, "operator-0": 0.5, "operator-1": 0.3}
    )
    # What the API server served in the window: a GET, a GET and a status PUT per evaluation.
    served = {"GET rolloutanalyses": 100.0, "GET deployments": 100.0}
    served["PUT rolloutanalyses/status"] = 100.0
    window = Window(
        stats, {}, {}, steady, (1.0, 1.0, 1.0), rss_mb=900.0, pss_mb=300.0, requests=served
    )
    results = Results(
        windows=[window],
        duration=(0.02, 100.0),
        capacity=Capacity(200, 4.0),
        capacity_cpu=CpuUse(4.0, {"kube-apiserver": 2.0, "operator-0": 1.0, "operator-1": 0.6}),
        bare=BareLoopResult(cycles=400, seconds=4.0, processes=4, client_cpu=1.0),
        bare_cpu=CpuUse(4.0, {"kube-apiserver": 2.8, "etcd": 0.4}),
        load_before=0.5,
        scrape_seconds=0.01,
    )
    setup = Setup("realcluster", 50, 2, 60, 180.0, 2, 2, "postgresql", "redis")
    report = json.loads(as_json(setup, results))
    assert report["cluster"] == "realcluster"
    run = report["runs"][0]
    assert run["cpu_ms_per_eval"] == {
        "kube-apiserver": 10.0,
        "etcd": 2.0,
        "operator-0": 5.0,
        "operator-1": 3.0,
    }
    assert run["operator_cpu_ms_per_eval"] == 8.0
    assert run["cores_busy"] == 0.2
    assert run["operator_pss_mb"] == 300.0
    assert run["kube_requests_per_eval"] == {
        "GET deployments": 1.0,
        "GET rolloutanalyses": 1.0,
        "PUT rolloutanalyses/status": 1.0,
    }
    assert run["kube_requests_per_eval_total"] == 3.0
    assert report["saturated_cpu_ms_per_eval"] == {
        "kube-apiserver": 10.0,
        "operator-0": 5.0,
        "operator-1": 3.0,
    }
    assert report["bare_loop_cpu_ms_per_cycle"] == {"kube-apiserver": 7.0, "etcd": 1.0}
