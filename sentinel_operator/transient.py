"""One log line, without a traceback, for an error that is a dependency gone for a while.

The operator logs what a dispatcher pass, a pump pass, a watch or a reconcile could not do with
``log.exception``: a traceback is what a bug needs. But when PostgreSQL restarts, Redis goes away
or the API server is down, every loop says so at once, and the soak counted 25-70 tracebacks
per restart (docs/reliability.md) for what is an expected transient that the operator recovers
from by design (claims, relists, retries). A user is never shown a traceback.
``TransientErrors``, installed on the log handlers by ``runoperator``, turns such a record into
its message plus one line saying what was unavailable and why; every other error keeps its
traceback.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import urllib3.exceptions
from django.db import utils as db_utils

from sentinel_cluster import kube

# (exception classes, what was unavailable), the first match along the exception's chain wins.
# psycopg's and Redis's classes are named, not imported: only a module that is loaded can have
# raised, and importing both cost a quarter of a second at every start of an operator that uses
# neither (SQLite and the ORM broker, the default; measured with ``python -X importtime``).
_KINDS: tuple[tuple[tuple[type[BaseException] | str, ...], str], ...] = (
    # First: it wraps the urllib3 error below it, and says which server was gone.
    ((kube.Unavailable,), "the Kubernetes API server is unavailable"),
    (
        (
            db_utils.OperationalError,
            db_utils.InterfaceError,
            "psycopg:OperationalError",
            "psycopg:InterfaceError",
        ),
        "the database is unavailable",
    ),
    (("redis.exceptions:ConnectionError", "redis.exceptions:TimeoutError"), "Redis is unavailable"),
    (
        (
            urllib3.exceptions.MaxRetryError,
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.NewConnectionError,
            ConnectionError,
            TimeoutError,
        ),
        "a connection failed",
    ),
)
_MAX_REASON = 300
# django-q2 logs a failed task's traceback as text inside the message ("Failed '<task>' (<name>)
# - <error> : <traceback>", django_q.worker), not as exc_info.
_TEXT_TRACEBACK = " : Traceback (most recent call last):"


def _unavailable(cls: type[BaseException]) -> str | None:
    for classes, what in _KINDS:
        if issubclass(cls, tuple(_loaded(classes))):
            return what
    return None


def _loaded(classes: tuple[type[BaseException] | str, ...]) -> Iterator[type[BaseException]]:
    """The classes, those named ``"module:Class"`` only if their module is loaded."""
    for entry in classes:
        if not isinstance(entry, str):
            yield entry
        elif (module := sys.modules.get(entry.partition(":")[0])) is not None:
            yield getattr(module, entry.partition(":")[2])


def transient_reason(exc: BaseException) -> str | None:
    """Return "what was unavailable (why)" when ``exc`` is a dependency gone, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        what = _unavailable(type(current))
        if what is not None:
            why = (str(current).strip().splitlines() or [""])[0][:_MAX_REASON]
            return f"{what} ({type(current).__name__}: {why})"
        current = current.__cause__ or current.__context__
    return None


def _text_reason(traceback_text: str) -> str | None:
    """Return the reason of a traceback printed as text whose last exception is transient."""
    ending = [line for line in traceback_text.splitlines() if line and not line[0].isspace()]
    if not ending:
        return None
    path, _, why = ending[-1].partition(": ")
    module, _, name = path.rpartition(".")
    # Only classes already imported: a name in a log line never imports anything.
    cls = getattr(sys.modules.get(module), name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return None
    what = _unavailable(cls)
    return None if what is None else f"{what} ({name}: {why.strip()[:_MAX_REASON]})"


class TransientErrors(logging.Filter):
    """Replace the traceback of a transient dependency error by one line (see the module)."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if not info and record.levelno >= logging.ERROR:
            message = record.getMessage()
            head, found, text = message.partition(_TEXT_TRACEBACK)
            reason = _text_reason(text) if found else None
            if reason is not None:
                # The error's own continuation lines ("Is the server running…") go too.
                first = (head.splitlines() or [""])[0]
                record.msg, record.args = f"{first}: {reason}", None
        if info and info[1] is not None:
            reason = transient_reason(info[1])
            if reason is not None:
                record.msg = f"{record.getMessage()}: {reason}"
                record.args = None
                record.exc_info = None
                record.exc_text = None
        return True


def install(*loggers: logging.Logger) -> None:
    """Add ``TransientErrors`` to every handler of the root logger and of ``loggers``."""
    for logger in (logging.getLogger(), *loggers):
        for handler in logger.handlers:
            if not any(isinstance(f, TransientErrors) for f in handler.filters):
                handler.addFilter(TransientErrors())
