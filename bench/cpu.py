"""CPU accounting of the benchmark's processes, read from /proc (Linux).

``bench.operator_throughput`` snapshots devcluster, Prometheus, the operator (with its django-q2
worker processes) and itself before and after each phase, and prints CPU milliseconds per
evaluation: that is what says which component limits the throughput on a 2-core machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """Return (parent pid, CPU seconds) of ``pid``, None if it is gone.

    The CPU seconds include reaped children's (cutime, cstime): django-q2 recycles its
    workers, and a recycled worker's time must not vanish from its operator's total.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; the fields after its ")" are fixed.
    fields = raw.rpartition(")")[2].split()
    return int(fields[1]), sum(int(value) for value in fields[11:15]) / _TICKS


def tree_cpu(pid: int) -> float:
    """Return the CPU seconds used so far by ``pid`` and its live descendants."""
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _stat(int(entry.name))) is not None:
            parents[int(entry.name)], seconds[int(entry.name)] = found
    total = 0.0
    for candidate, used in seconds.items():
        ancestor = candidate
        while ancestor > 1 and ancestor != pid:
            ancestor = parents.get(ancestor, 0)
        if ancestor == pid:
            total += used
    return total


def named_descendants(pid: int, names: tuple[str, ...]) -> dict[str, int]:
    """Return the pid of each live descendant of ``pid`` whose program is one of ``names``.

    The program is the base name of ``argv[0]`` (``/proc/PID/comm`` cuts names at 15
    characters: ``kube-controller``). Used for the real control plane's launcher, whose
    components (etcd, kube-apiserver, ...) are its children (docs/realcluster.md).
    """
    found: dict[str, int] = {}
    for member in _descendants(pid):
        try:
            argv0 = Path(f"/proc/{member}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        name = Path(argv0.decode(errors="replace")).name
        if name in names:
            found[name] = member
    return found


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = found[0]
    tree = []
    for candidate in parents:
        ancestor = candidate
        while ancestor > 1 and ancestor != pid:
            ancestor = parents.get(ancestor, 0)
        if ancestor == pid:
            tree.append(candidate)
    return tree


def tree_memory(pid: int) -> tuple[float, float]:
    """Return the RSS and PSS in MB of ``pid`` and its live descendants.

    RSS counts the pages forked workers share with their parent once per process; PSS splits
    them, so PSS is what the tree really costs the machine.
    """
    rss = pss = 0.0
    for member in _descendants(pid):
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                kilobytes = float(rest.split()[0]) / 1024
                if key == "Rss":
                    rss += kilobytes
                else:
                    pss += kilobytes
    return rss, pss


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds each component used during one phase of ``seconds`` wall time."""

    seconds: float
    by_component: dict[str, float]

    def line(self, work: float, unit: str) -> str:
        parts = [
            f"{name} {1000 * used / work:.1f}"
            for name, used in self.by_component.items()
            if work > 0
        ]
        busy = sum(self.by_component.values()) / self.seconds if self.seconds > 0 else 0.0
        return f"CPU ms per {unit}: " + ", ".join(parts) + f"  (in all {busy:.2f} cores busy)"


class CpuMeter:
    """Snapshot the CPU time of the benchmark's processes."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids

    def snapshot(self) -> tuple[float, dict[str, float]]:
        used = {name: tree_cpu(pid) for name, pid in self.pids.items()}
        used["bench process"] = time.process_time()
        return time.monotonic(), used

    @staticmethod
    def between(
        before: tuple[float, dict[str, float]], after: tuple[float, dict[str, float]]
    ) -> CpuUse:
        return CpuUse(
            after[0] - before[0],
            {name: after[1][name] - before[1].get(name, 0.0) for name in after[1]},
        )
