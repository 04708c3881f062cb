"""Child processes of the launcher: spawned tied to it, stopped in order, never left behind.

``realcluster.__main__`` starts etcd, kube-apiserver and kube-controller-manager through
:func:`spawn`. Each child gets ``PR_SET_PDEATHSIG=SIGKILL``, so the kernel kills it when the
launcher dies in any way (a SIGKILLed test run would otherwise leave a 270 MB kube-apiserver
and etcd holding their ports), and its own process group, so a Ctrl-C in a terminal reaches
only the launcher, which then stops the children in order.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1
# Loaded before any fork: the child between fork and exec may only call what is already there.
_libc = ctypes.CDLL(None, use_errno=True)


def _tie_to(parent: int) -> Callable[[], None]:
    def preexec() -> None:
        if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(127)
        # The launcher may have died between fork and prctl: then nobody would ever kill us.
        if os.getppid() != parent:
            os._exit(127)

    return preexec


@dataclass
class Child:
    """One running binary and the file its output goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    def exited(self) -> int | None:
        """The exit code if the child has ended, else None."""
        return self.process.poll()

    def stop(self, timeout: float) -> None:
        """SIGTERM (the binaries' graceful shutdown), then SIGKILL after ``timeout`` seconds."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
                return
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()

    def tail(self, lines: int = 15) -> str:
        """The last lines of the child's output, for a start-up failure message."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def spawn(name: str, argv: Sequence[str], log: Path) -> Child:
    """Start ``argv`` with its output appended to ``log``, tied to this process's life."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=_tie_to(os.getpid()),
            process_group=0,
            close_fds=True,
        )
    return Child(name, process, log)


def free_port() -> int:
    """A loopback port that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held together while choosing, so no repeats)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether binding ``host:port`` fails because something holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same option Go's listeners set, so a port in TIME_WAIT after a restart counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def alive(pid: int) -> bool:
    """Whether a process with this id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
