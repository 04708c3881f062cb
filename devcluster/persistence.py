"""Crash-safe persistence for ``--data-dir``: a JSON snapshot plus an append-only change log.

Every change is appended to ``changes.log`` (one JSON line, fsynced); every
``compact_every`` changes, and at start-up, the whole state is written to
``objects.json`` through a temporary file and ``os.replace`` and the log is emptied.
A torn last log line (a crash mid-append) is ignored. Used by store.Store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

SNAPSHOT_NAME = "objects.json"
LOG_NAME = "changes.log"

Objects = dict[str, dict[tuple[str, str], dict[str, Any]]]


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj["metadata"]
    return metadata.get("namespace", ""), metadata["name"]


class Journal:
    """Snapshot + log in one directory."""

    def __init__(self, directory: Path, compact_every: int = 500) -> None:
        self._snapshot = directory / SNAPSHOT_NAME
        self._log_path = directory / LOG_NAME
        # Changes appended since the last snapshot; compaction bounds replay time.
        self._compact_every = compact_every
        self._pending = 0
        self._log: TextIO | None = None

    def load(self) -> tuple[int, Objects]:
        """Return (resourceVersion, objects) from the snapshot and the log."""
        rv, objects = 0, {}
        if self._snapshot.exists():
            payload = json.loads(self._snapshot.read_text())
            rv = int(payload.get("resourceVersion", 0))
            for key, items in payload.get("objects", {}).items():
                objects[key] = {_key(obj): obj for obj in items}
        snapshot_rv = rv
        if self._log_path.exists():
            for line in self._log_path.read_text().splitlines():
                try:
                    change = json.loads(line)
                except ValueError:
                    break  # a torn final line: the change was never acknowledged
                if int(change["rv"]) <= snapshot_rv:
                    continue  # already in the snapshot (a crash between the two writes)
                bucket = objects.setdefault(change["key"], {})
                if change["type"] == "DELETED":
                    bucket.pop(_key(change["obj"]), None)
                else:
                    bucket[_key(change["obj"])] = change["obj"]
                rv = max(rv, int(change["rv"]))
        return rv, objects

    def append(self, rv: int, storage_key: str, event_type: str, obj: dict[str, Any]) -> bool:
        """Log one change durably; return True when it is time to compact."""
        if self._log is None:
            self._log = self._log_path.open("a")
        line = json.dumps(
            {"rv": rv, "key": storage_key, "type": event_type, "obj": obj}, separators=(",", ":")
        )
        self._log.write(line + "\n")
        self._log.flush()
        os.fsync(self._log.fileno())
        self._pending += 1
        return self._pending >= self._compact_every

    def compact(self, rv: int, objects: Objects) -> None:
        """Write a full snapshot atomically, then empty the log."""
        payload = {
            "resourceVersion": rv,
            "objects": {key: list(bucket.values()) for key, bucket in objects.items() if bucket},
        }
        temporary = self._snapshot.with_suffix(".tmp")
        with temporary.open("w") as handle:
            json.dump(payload, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self._snapshot)
        if self._log is not None:
            self._log.close()
            self._log = None
        empty = self._log_path.with_suffix(".tmp")
        empty.write_text("")
        os.replace(empty, self._log_path)
        self._pending = 0

    def close(self) -> None:
        """Close the log file."""
        if self._log is not None:
            self._log.close()
            self._log = None
