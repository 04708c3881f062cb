"""``sentinel_operator.lifeline`` on real processes: an operator, its sentinel, a worker.

The shape ``runoperator`` has (the operator forks the sentinel, the sentinel forks the
workers), without Django or django-q2: the worker sees the operator gone once it is SIGKILLed,
not before, and dies with the sentinel. docs/architecture.md#processes-and-threads; the whole
operator is tested in ``test_operator_killed.py``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from testkit.paths import REPO_ROOT
from testkit.processes import alive
from testkit.waiting import wait_until

_TREE = """
import os, time
from sentinel_operator import lifeline

def say(*words):  # one write: the three processes share the pipe
    os.write(1, (" ".join(map(str, words)) + "\\n").encode())

lifeline.open_pipe()
say("operator", os.getpid(), lifeline.operator_gone())
if os.fork() == 0:
    lifeline.drop_write_end()
    lifeline.children_die_with_this_process()
    if os.fork() == 0:
        say("worker", os.getpid(), lifeline.operator_gone())
        while not lifeline.operator_gone():
            time.sleep(0.01)
        say("worker: operator gone")
        time.sleep(60)
        os._exit(0)
    say("sentinel", os.getpid(), lifeline.operator_gone())
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


class _Tree:
    """The script above in its own process group, its output read line by line."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _TREE],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.pids: dict[str, int] = {}
        self._buffer = b""

    def line(self, timeout: float = 10.0) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], f"no line in {timeout:g} s"
            self._buffer += os.read(fd, 4096)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode().strip()


@pytest.fixture
def tree() -> Iterator[_Tree]:
    started = _Tree()
    try:
        yield started
    finally:
        # The whole group, whoever is left of it (the sentinel and worker outlive the operator).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started.process.pid, signal.SIGKILL)
        started.process.wait(timeout=10)


def test_a_worker_sees_its_operator_gone_and_dies_with_its_sentinel(tree: _Tree) -> None:
    # While the operator lives, nobody sees it gone (it never does itself).
    started = [tree.line() for _ in range(3)]
    for line in started:
        role, pid, gone = line.split()
        tree.pids[role] = int(pid)
        assert gone == "False", line
    assert set(tree.pids) == {"operator", "sentinel", "worker"}

    os.kill(tree.pids["operator"], signal.SIGKILL)
    killed = time.monotonic()
    assert tree.line(timeout=2) == "worker: operator gone"
    print(f"the worker saw its operator gone {time.monotonic() - killed:.3f} s after SIGKILL")
    assert alive(tree.pids["worker"])  # it decides what to do; here it waits for the sentinel

    os.kill(tree.pids["sentinel"], signal.SIGKILL)
    wait_until(lambda: not alive(tree.pids["worker"]), timeout=2, what="the worker killed")
