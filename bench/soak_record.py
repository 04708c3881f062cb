"""The history of a soak run: what was served, what was broken, what the operator and cluster did.

``bench.soak`` fills a ``History`` while it runs (truth changes, fault intervals, cluster samples,
RSS samples, process exits) and, at the end, reads the operator's own records from the database
(``read_database``): the mirror rows, every evaluation attempt with its metric rows, and any
notification delivery table that exists (``notifications`` is built separately; invariant 5 will
read it). ``bench.soak_invariants`` judges the finished ``History``. Times are epoch seconds.
"""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from testkit.processes import descendants


@dataclass(frozen=True)
class TruthChange:
    """At ``at`` the metrics app started serving ``value`` for ``analysis`` (None: absent)."""

    at: float
    analysis: str
    value: float | None


@dataclass
class FaultRecord:
    """One injected fault as it really happened."""

    kind: str
    started: float
    ended: float = 0.0
    # Until when it may delay a due evaluation (e.g. a killed worker's claim runs 120 s).
    blocks_until: float = 0.0
    analysis: str = ""
    detail: str = ""
    # The fault could not be carried out (e.g. no worker was mid-query); it is not counted.
    skipped: bool = False


@dataclass(frozen=True)
class ClusterSample:
    """The analyses' statuses and the Deployments' paused state, read at ``at``."""

    at: float
    # name -> (uid, status)
    analyses: dict[str, tuple[str, dict[str, Any]]]
    # name -> (uid, spec.paused, paused-by annotation)
    deployments: dict[str, tuple[str, bool, str]]


@dataclass(frozen=True)
class RssSample:
    at: float
    # component -> MB (the process and its descendants): resident, and proportional
    mb: dict[str, float]
    pss: dict[str, float] = field(default_factory=dict)
    # component -> the root process id (a restarted process is a new incarnation)
    pids: dict[str, int | None] = field(default_factory=dict)
    # component -> each process of its tree on its own (the operators'): which one grows
    processes: dict[str, tuple[ProcessMemory, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcessMemory:
    """One process of a tree: its place in it and its memory in MB (private: its own pages)."""

    pid: int
    depth: int
    rss: float
    pss: float
    private: float


@dataclass(frozen=True)
class Attempt:
    """One ``analyses_evaluation`` row with its metric values."""

    id: int
    analysis_id: int
    started: float
    finished: float
    generation: int
    outcome: str
    failures_after: int
    error_reason: str
    paused: bool
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class MirrorRow:
    id: int
    namespace: str
    name: str
    uid: str
    interval: float
    failure_limit: int
    dry_run: bool
    created: float
    deleted: float | None


@dataclass
class History:
    """Everything recorded during one run; threads append under ``lock``."""

    namespace: str
    started: float = 0.0
    ended: float = 0.0
    truths: list[TruthChange] = field(default_factory=list)
    faults: list[FaultRecord] = field(default_factory=list)
    # kubectl actions that are not faults but change what is expected: (at, action, analysis)
    actions: list[tuple[float, str, str]] = field(default_factory=list)
    samples: list[ClusterSample] = field(default_factory=list)
    rss: list[RssSample] = field(default_factory=list)
    # (at, component, exit code): a process that exited without being told to.
    unexpected_exits: list[tuple[float, str, int | None]] = field(default_factory=list)
    # Filled at the end.
    mirror: list[MirrorRow] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    final_statuses: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    # table name -> rows, for every notification delivery table the database has.
    notifications: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # What the notification receiver got, every POST: (at, HTTP status it answered or 0 when
    # it held the request past the client's timeout, title, message).
    received: list[tuple[float, int, str, str]] = field(default_factory=list)
    # analysis name -> its plan's facts: kind, interval, failure limit, dry run, regress_at.
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_truth(self, change: TruthChange) -> None:
        with self.lock:
            self.truths.append(change)

    def add_fault(self, fault: FaultRecord) -> None:
        with self.lock:
            self.faults.append(fault)

    def add_action(self, at: float, action: str, analysis: str) -> None:
        with self.lock:
            self.actions.append((at, action, analysis))

    def save(self, path: Path) -> None:
        """Write the history to ``path`` (pickle), to judge it again with ``--judge``."""
        state = {k: v for k, v in self.__dict__.items() if k != "lock"}
        path.write_bytes(pickle.dumps(state))

    @classmethod
    def load(cls, path: Path) -> History:
        """Read a history written by ``save`` (only ever one this tool wrote)."""
        state = pickle.loads(path.read_bytes())
        history = cls(state.pop("namespace"))
        history.__dict__.update(state)
        return history


def memory_mb(root: int | None) -> tuple[float, float]:
    """Return RSS and PSS (MB) of ``root`` and every process below it ((0, 0) if gone).

    RSS counts the pages forked workers share with their parent once per process; PSS splits
    each shared page among its sharers, so a process tree's PSS is what it really holds.
    """
    if root is None:
        return 0.0, 0.0
    rss = pss = 0
    for pid in {root, *descendants(root)}:
        rss += _status_kb(Path(f"/proc/{pid}/status"), "VmRSS:")
        pss += _status_kb(Path(f"/proc/{pid}/smaps_rollup"), "Pss:")
    return rss / 1024.0, pss / 1024.0


def process_memory(root: int | None) -> tuple[ProcessMemory, ...]:
    """Return the memory of ``root`` and of every process below it, each on its own.

    ``depth`` is 0 for ``root``, 1 for its children (an operator's django-q2 sentinel), 2 for
    theirs (the workers, monitor and pusher).
    """
    if root is None:
        return ()
    depth = {root: 0}
    for pid in sorted(descendants(root)):
        depth[pid] = 1 if _parent(pid) == root else 2
    found = []
    for pid, level in sorted(depth.items()):
        rollup = Path(f"/proc/{pid}/smaps_rollup")
        private = _status_kb(rollup, "Private_Clean:") + _status_kb(rollup, "Private_Dirty:")
        found.append(
            ProcessMemory(
                pid,
                level,
                _status_kb(Path(f"/proc/{pid}/status"), "VmRSS:") / 1024.0,
                _status_kb(rollup, "Pss:") / 1024.0,
                private / 1024.0,
            )
        )
    return tuple(found)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _status_kb(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def read_database(execute: Any, history: History) -> None:
    """Read the mirror, the evaluation history and notification deliveries into ``history``.

    ``execute(sql, params)`` runs one statement on the operator's database and returns rows.
    """
    for row in execute(
        "SELECT id, namespace, name, uid, interval_seconds, failure_limit, dry_run, created_at,"
        " deleted_at FROM analyses_analysis WHERE namespace = %s ORDER BY id",
        (history.namespace,),
    ):
        pk, ns, name, uid, interval, limit, dry, created, deleted = row
        history.mirror.append(
            MirrorRow(
                pk,
                ns,
                name,
                uid,
                float(interval),
                int(limit),
                bool(dry),
                float(_epoch(created) or 0.0),
                _epoch(deleted),
            )
        )
    values: dict[int, list[float | None]] = {}
    for evaluation_id, value in execute(
        "SELECT m.evaluation_id, m.value FROM analyses_metricresult m"
        " JOIN analyses_evaluation e ON e.id = m.evaluation_id"
        " JOIN analyses_analysis a ON a.id = e.analysis_id WHERE a.namespace = %s ORDER BY m.id",
        (history.namespace,),
    ):
        values.setdefault(int(evaluation_id), []).append(value)
    for row in execute(
        "SELECT e.id, e.analysis_id, e.started_at, e.finished_at, e.generation, e.outcome,"
        " e.failures_after, e.error_reason, e.paused FROM analyses_evaluation e"
        " JOIN analyses_analysis a ON a.id = e.analysis_id WHERE a.namespace = %s"
        " ORDER BY e.analysis_id, e.started_at, e.id",
        (history.namespace,),
    ):
        pk, analysis, started, finished, generation, outcome, failures, reason, paused = row
        history.attempts.append(
            Attempt(
                pk,
                analysis,
                started.timestamp(),
                finished.timestamp(),
                int(generation),
                str(outcome),
                int(failures),
                str(reason),
                bool(paused),
                tuple(values.get(pk, ())),
            )
        )
    # The notification deliveries (docs/notifications.md), once the table exists: read
    # generically, so the invariant that checks "one message per transition" needs no change
    # here.
    for (table,) in execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        " AND table_name LIKE %s ORDER BY table_name",
        ("%notification%",),
    ):
        rows = execute(f'SELECT * FROM "{table}"', (), with_columns=True)
        history.notifications[str(table)] = rows
