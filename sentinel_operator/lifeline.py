"""Tie the processes ``runoperator`` forks to its life: a pipe only it writes, and PDEATHSIG.

Outside a container nothing kills the children of a killed process, and django-q2's workers
are its grandchildren (the operator forks the sentinel, the sentinel forks the workers), so
``runtime`` uses two kernel mechanisms, set up here:

- ``open_pipe`` (in the operator, before it forks) opens a pipe whose write end only the
  operator keeps: the sentinel drops its copy at once (``drop_write_end``), before it forks
  anything. However the operator dies, SIGKILL included, the kernel then closes the last write
  end, and the read end every forked process inherited reads end-of-file. ``operator_gone``
  asks that without blocking; the reconcile task asks before every evaluation it starts. In a
  process no operator forked (``manage.py qcluster``, a test) it is always False.
- ``die_with_parent`` (``prctl(PR_SET_PDEATHSIG)``) has the kernel signal a process when the
  thread that forked it ends; ``children_die_with_this_process`` sets it, with SIGKILL, in every
  child forked from then on, in the child itself right after the fork.
- ``no_task_once_gone`` has every django-q2 worker forked from then on ask ``operator_gone``
  before each task it starts, whatever the task (a reconcile, a notification, a backtest, a
  periodic job), and exit instead of running it: after a SIGKILL the sentinel stops as on a
  normal stop, and its workers would otherwise run the tasks already in their queue (the soak
  saw a notification sent by an orphan). What they leave is claimed, and the next operator
  queues it again when the claim runs out. A task that gives its work back itself once the
  operator is gone (``hands_back``: the reconcile batch, whose members are then due at once)
  is let through to do so.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import select
import signal
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1

# The pipe's ends in this process; None where no operator opened one.
_read_end: int | None = None
_write_end: int | None = None
# The tasks (module.qualname) that ask ``operator_gone`` themselves and give their work back.
_hands_back: set[str] = set()
_Task = TypeVar("_Task", bound=Callable[..., Any])
# The pid of the process that forked last, read in the child (see children_die_with_...).
_forked_by = 0


def open_pipe() -> None:
    """Open the pipe; call it in the operator, before it forks."""
    global _read_end, _write_end
    # Not inherited across exec (os.pipe's default): a program the operator runs never
    # holds the write end.
    _read_end, _write_end = os.pipe()


def drop_write_end() -> None:
    """Close this process's copy of the write end; call it in a forked child, first thing."""
    global _write_end
    if _write_end is not None:
        os.close(_write_end)
        _write_end = None


def operator_gone() -> bool:
    """Return whether the operator that opened the pipe has died (end-of-file on the pipe)."""
    if _read_end is None or _write_end is not None:
        # No operator forked this process, or this process is the operator.
        return False
    poller = select.poll()
    poller.register(_read_end, select.POLLIN | select.POLLHUP)
    # Nobody ever writes: readable means the last write end is closed.
    return bool(poller.poll(0))


def hands_back(task: _Task) -> _Task:
    """Mark ``task`` as one that gives its work back itself once the operator is gone."""
    _hands_back.add(_name(task))
    return task


def _name(task: Callable[..., Any]) -> str:
    return f"{getattr(task, '__module__', '')}.{getattr(task, '__qualname__', '')}"


def no_task_once_gone() -> None:
    """Have each django-q2 worker exit, not run its next task, once the operator is gone."""
    from django_q.signals import pre_execute

    # Sent by the worker right before it calls the task, outside the task's own try.
    pre_execute.connect(_refuse_once_gone, weak=False, dispatch_uid="lifeline")


def _refuse_once_gone(
    sender: object, func: Callable[..., Any] | None, task: dict[str, Any], **kwargs: Any
) -> None:
    if func is not None and _name(func) in _hands_back:
        return
    if operator_gone():
        log.warning(
            "worker %d: the operator is gone; task %s left to its claim for the next operator",
            os.getpid(),
            task.get("name", "?"),
        )
        # Not an exception, which django-q2 would log as a crash of the worker: the worker
        # ends here, and the sentinel, stopping, does not start another.
        os._exit(0)


def die_with_parent(signum: int) -> None:
    """Have the kernel send ``signum`` to this process when the thread that forked it ends."""
    if _libc().prctl(_PR_SET_PDEATHSIG, signum) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def children_die_with_this_process() -> None:
    """SIGKILL every process forked from now on when its forking thread (here) ends.

    Set in each child right after the fork, so no child runs a line without it; a child
    whose parent died before the setting took effect exits at once.
    """
    _libc()  # loaded here: a child of a process with threads must not load a library
    os.register_at_fork(before=_note_forker, after_in_child=_die_with_forker)


def _note_forker() -> None:
    global _forked_by
    _forked_by = os.getpid()


def _die_with_forker() -> None:
    die_with_parent(signal.SIGKILL)
    if os.getppid() != _forked_by:
        os._exit(1)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL("libc.so.6", use_errno=True)
