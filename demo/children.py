"""The demo's subprocesses: started in their own session, logged to a file, stopped for sure.

``demo.runner`` starts the operator, the web server and the one-shot ``manage.py`` and
``kubectl`` commands through ``Child``, the kit's ``ChildProcess`` (``testkit.processes``) in a
session of its own: a terminal's Ctrl-C reaches only the demo, which stops the children in
order, and ``stop`` sweeps any grandchild (django-q2's workers) by the group id. The kernel also
sends SIGTERM to a child whose demo process died without cleaning up (PR_SET_PDEATHSIG).

A Ctrl-C must be prompt: ``stop_by`` gives a child until a deadline shared with the others (they
were all sent SIGTERM at once), then SIGKILLs its whole session. The operator's stop can take as
long as the task a worker is running (the demo's Paused notification renders a picture, which
took 8 s on a loaded machine); its notifications are at least once, and the demo's data is thrown
away, so a task cut short costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from demo.settings import DemoError
from testkit.processes import ChildProcess


class Child(ChildProcess):
    """One subprocess of the demo, its output in ``log``."""

    def __init__(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path
    ) -> None:
        super().__init__(argv, log=log, env=env, cwd=cwd, name=name, new_session=True)

    def stop_by(self, deadline: float) -> None:
        """Wait for the exit until ``deadline`` (``time.monotonic``), then SIGKILL the session."""
        process = self.process
        if process is None:
            return
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            # The whole session at once: the operator, its sentinel and workers (own group).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        self.stop()

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
                f"{self.name} did not finish within {timeout:.0f} s:\n{self.tail()}"
            ) from None
        if self.process.returncode != 0:
            raise DemoError(
                f"{self.name} failed with exit code {self.process.returncode}:\n{self.tail()}"
            )
