"""The demo's subprocesses: started in their own session, logged to a file, stopped for sure.

``demo.runner`` starts devcluster, the operator, the web server and the one-shot ``manage.py``
and ``kubectl`` commands through ``Child``. Each child gets a session (and so a process group)
of its own: a terminal's Ctrl-C reaches only the demo, which stops the children in order, and
``stop`` can sweep any grandchild (django-q2's workers) by the group id. The kernel also sends
SIGTERM to a child whose demo process died without cleaning up (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from demo.prometheus import die_with_parent
from demo.settings import DemoError


def port_is_free(port: int) -> bool:
    """Return whether 127.0.0.1:``port`` can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def tail(path: Path, lines: int = 15) -> str:
    """Return the last ``lines`` lines of a log file (empty if there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Child:
    """One subprocess of the demo, its output in ``log``."""

    def __init__(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def start(self, stdin: int | None = subprocess.DEVNULL) -> None:
        """Start the process in a new session, appending its stdout and stderr to the log."""
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=stdin,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def run(self, timeout: float, input_text: str | None = None) -> None:
        """Start, feed ``input_text``, wait for the exit; raise DemoError if it fails."""
        self.start(stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL)
        assert self.process is not None
        try:
            self.process.communicate(
                input_text.encode() if input_text is not None else None, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            self.stop()
            raise DemoError(
                f"{self.name} did not finish within {timeout:.0f} s:\n{tail(self.log)}"
            ) from None
        if self.process.returncode != 0:
            raise DemoError(
                f"{self.name} failed with exit code {self.process.returncode}:\n{tail(self.log)}"
            )

    def terminate(self) -> None:
        """Send SIGTERM without waiting (``stop`` waits), so several children stop at once."""
        if self.running:
            assert self.process is not None
            _signal(self.process.pid, signal.SIGTERM, group=False)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process, wait, then clear its process group of anything left."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            _signal(process.pid, signal.SIGTERM, group=False)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal(process.pid, signal.SIGKILL, group=False)
                process.wait(timeout=5)
        # The group id is the child's pid (new session); grandchildren left behind keep it.
        if _group_alive(process.pid):
            _signal(process.pid, signal.SIGTERM, group=True)
            deadline = time.monotonic() + 3.0
            while _group_alive(process.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _group_alive(process.pid):
                _signal(process.pid, signal.SIGKILL, group=True)


def _signal(pid: int, signum: int, *, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError as exc:  # only if the pid was reused by another user
        raise DemoError(f"cannot signal process {pid}: {exc}") from exc


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
