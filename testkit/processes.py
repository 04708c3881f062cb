"""Child processes started for sure and stopped for sure: the one implementation of the kit.

Every server the kit launches (devcluster, Prometheus, ``runoperator``, Redis), the demo's
children and the benchmarks' gunicorn run as a ``ChildProcess``: output appended to a log file,
the kernel asked to SIGTERM the child when its parent dies (``die_with_parent``), and ``stop``
that signals, waits, kills on a timeout and, for a child in its own session, sweeps whatever its
process group left behind. ``alive`` and ``descendants`` read ``/proc`` so tests can check that
nothing outlived a stop; ``holding_sockets`` finds which of them is mid-request (a worker to
kill).

``check_may_start`` is the suite's tier guard (``tests/support/tiers.py``): while a test runs, the
environment says what it may not start (any server, or the real control plane), and every
``ChildProcess`` and ``PostgresServer`` asks before it starts, so a test in the wrong tier fails
at once instead of making ``make check`` slow or ``-m "not realcluster"`` start a realcluster.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1

# What the running test may not start, set by the suite's tier plugin: "<kinds>;<test id>" with
# kinds "servers" (a test not marked ``server``) and/or "realcluster" (not marked
# ``realcluster``). An environment variable, so that the test's own children (the demo) obey it.
FORBID_ENV = "SENTINEL_TEST_FORBIDS"
SERVERS = "servers"
REALCLUSTER = "realcluster"


class ProcessError(RuntimeError):
    """A child process could not be started or signalled."""


class TierViolation(ProcessError):
    """A test started a server its tier markers say it never starts."""


def check_may_start(argv: Sequence[str], name: str) -> None:
    """Raise ``TierViolation`` if the running test may not start this child (see FORBID_ENV)."""
    forbids = os.environ.get(FORBID_ENV, "")
    if not forbids:
        return
    kinds, _, test = forbids.partition(";")
    forbidden = set(kinds.split(","))
    if SERVERS in forbidden:
        raise TierViolation(
            f"{test} started {name} ({' '.join(argv[:3])}) but is not marked `server`: "
            "mark it (or use a server fixture) so that `make check` leaves it out"
        )
    if REALCLUSTER in forbidden and _starts_realcluster(argv):
        raise TierViolation(
            f"{test} started the real control plane but is not marked `realcluster`: "
            "mark it so that `pytest -m 'not realcluster'` leaves it out"
        )


def _starts_realcluster(argv: Sequence[str]) -> bool:
    words = list(argv)
    return any(words[i : i + 2] == ["-m", "realcluster"] for i in range(len(words) - 1)) or any(
        Path(word).name in ("kube-apiserver", "etcd") for word in words[:1]
    )


def die_with_parent() -> None:
    """Ask the kernel to SIGTERM this (forked, not yet exec'd) child when its parent dies."""
    # Linux PR_SET_PDEATHSIG: a server outliving a killed pytest would hold its port and a core
    # of a shared machine.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path: Path, lines: int = 15) -> str:
    """Return the last ``lines`` lines of a log file (empty if there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class ChildProcess:
    """One subprocess, its stdout and stderr appended to ``log``; start() and stop() it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        name: str = "",
        new_session: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.log = Path(log)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.name = name or Path(self.argv[0]).name
        # Its own session (and process group): a terminal's Ctrl-C reaches only the parent, and
        # stop() can sweep grandchildren (django-q2's workers) by the group id.
        self.new_session = new_session
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    @property
    def pid(self) -> int:
        if self.process is None:
            raise ProcessError(f"{self.name} was never started")
        return self.process.pid

    def start(self, *, stdin: int | None = subprocess.DEVNULL) -> None:
        """Start the process, appending its output to the log."""
        if self.running:
            raise ProcessError(f"{self.name} is already running")
        check_may_start(self.argv, self.name)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        # PR_SET_PDEATHSIG fires when the forking *thread* ends, not the process: a child
        # started from a short-lived thread would die with it, so only the main thread asks.
        on_main_thread = threading.current_thread() is threading.main_thread()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=stdin,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=self.new_session,
                preexec_fn=die_with_parent if on_main_thread else None,
            )

    def terminate(self) -> None:
        """Send SIGTERM without waiting (``stop`` waits), so several children stop at once."""
        if self.running:
            assert self.process is not None
            _signal(self.process.pid, signal.SIGTERM, group=False)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        """Send ``sig``, wait ``timeout`` s, then SIGKILL; return the exit code (None: not run).

        A child in its own session also has its process group cleared of anything left.
        """
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            _signal(process.pid, sig, group=False)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal(process.pid, signal.SIGKILL, group=False)
                process.wait(timeout=10)
        if self.new_session:
            _sweep_group(process.pid)
        return process.returncode

    def kill(self) -> int | None:
        """SIGKILL the process and return its exit code."""
        return self.stop(signal.SIGKILL)

    def tail(self, lines: int = 15) -> str:
        """Return the last lines of the log."""
        return tail(self.log, lines)


def alive(pid: int) -> bool:
    """Return whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The command name may hold spaces and parentheses: split after its last ")".
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def descendants(root: int) -> set[int]:
    """Return the pids of every live process below ``root`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        children = {pid for pid, ppid in parents.items() if ppid in frontier}
        frontier = children - found
        found |= children
    return found


def holding_sockets(pids: set[int], ports: set[int]) -> list[int]:
    """Return those of ``pids`` holding a local TCP socket on one of ``ports``, sorted.

    With a server's view of its clients' ports (``FaultProxy.in_flight``) this names the
    process that is mid-request: the django-q2 worker waiting for a held Prometheus answer.
    """
    inodes = _socket_inodes(ports)
    return sorted(pid for pid in pids if inodes and _owns_socket(pid, inodes))


def _socket_inodes(ports: set[int]) -> set[str]:
    """Return the inodes of local TCP sockets whose local port is one of ``ports``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port in ports:
                found.add(fields[9])
    return found


def _owns_socket(pid: int, inodes: set[str]) -> bool:
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    except OSError:
        return False
    return False


def _sweep_group(pgid: int) -> None:
    # The group id is the child's pid (new session); grandchildren left behind keep it.
    if not _group_alive(pgid):
        return
    _signal(pgid, signal.SIGTERM, group=True)
    deadline = time.monotonic() + 3.0
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(pgid):
        _signal(pgid, signal.SIGKILL, group=True)


def _signal(pid: int, signum: int, *, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError as exc:  # only if the pid was reused by another user
        raise ProcessError(f"cannot signal process {pid}: {exc}") from exc


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
