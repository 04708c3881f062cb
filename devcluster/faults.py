"""Injected faults for tests: forced error codes and latency on matching requests.

server.py consults ``Faults.match`` before handling each request (except the fault
endpoints and /version) and manages the list through POST/DELETE /devcluster/faults.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devcluster.status import ApiError, bad_request


@dataclass
class Fault:
    """One rule; ``remaining`` None means until cleared."""

    path_regex: re.Pattern[str]
    methods: frozenset[str]
    status: int | None
    latency: float
    remaining: int | None


@dataclass(frozen=True)
class Outcome:
    """What to do to a request: sleep ``latency`` seconds, then fail with ``error`` if set."""

    latency: float
    error: ApiError | None


def error_for(status: int, path: str) -> ApiError:
    """Return the Status error a real server would send for ``status``."""
    if status == 409:
        return ApiError(
            409,
            "Operation cannot be fulfilled: the object has been modified; please apply your "
            "changes to the latest version and try again (injected fault)",
        )
    if status == 503:
        return ApiError(503, f"the server is currently unable to handle the request ({path})")
    if status == 504:
        return ApiError(504, "the server was unable to return a response in the time allotted")
    if status == 429:
        return ApiError(429, "too many requests", details={"retryAfterSeconds": 1})
    return ApiError(status, f"injected fault on {path}")


class Faults:
    """Thread-safe list of fault rules."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def add(self, body: Any) -> None:
        """Add a rule from the JSON body of POST /devcluster/faults."""
        if not isinstance(body, Mapping):
            raise bad_request("fault must be a JSON object")
        try:
            pattern = re.compile(str(body.get("pathRegex") or ".*"))
        except re.error as exc:
            raise bad_request(f"invalid pathRegex: {exc}") from exc
        status = body.get("status")
        times = body.get("times")
        rule = Fault(
            path_regex=pattern,
            methods=frozenset(str(m).upper() for m in body.get("methods") or ()),
            status=int(status) if status is not None else None,
            latency=float(body.get("latencySeconds") or 0.0),
            remaining=int(times) if times is not None else None,
        )
        with self._lock:
            self._rules.append(rule)

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules.clear()

    def match(self, method: str, path: str) -> Outcome | None:
        """Return the outcome for a request, consuming one use of the first matching rule."""
        with self._lock:
            for rule in self._rules:
                if rule.methods and method.upper() not in rule.methods:
                    continue
                if not rule.path_regex.search(path):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                error = error_for(rule.status, path) if rule.status is not None else None
                return Outcome(rule.latency, error)
        return None
