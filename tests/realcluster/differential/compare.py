"""List the differences between two servers' normalized answers, path by path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ABSENT = "<absent>"


@dataclass(frozen=True)
class Difference:
    """One place where the answers differ: ``path`` inside the answer of operation ``op``."""

    op: str
    path: str
    real: Any
    dev: Any

    def __str__(self) -> str:
        return f"{self.op} :: {self.path or '.'}\n    real: {self.real!r}\n    dev:  {self.dev!r}"


def differences(op: str, real: Any, dev: Any, path: str = "") -> Iterator[Difference]:
    """Yield every leaf where ``real`` and ``dev`` disagree.

    Dicts are compared key by key (a missing key is ``<absent>``), lists element by element
    (extra elements on one side are ``<absent>`` on the other), everything else by equality,
    so one wrong field is one difference rather than a whole differing object.
    """
    if isinstance(real, dict) and isinstance(dev, dict):
        for key in sorted(set(real) | set(dev), key=str):
            yield from differences(op, real.get(key, ABSENT), dev.get(key, ABSENT), f"{path}.{key}")
    elif isinstance(real, list) and isinstance(dev, list):
        for index in range(max(len(real), len(dev))):
            yield from differences(
                op,
                real[index] if index < len(real) else ABSENT,
                dev[index] if index < len(dev) else ABSENT,
                f"{path}[{index}]",
            )
    elif real != dev or type(real) is not type(dev):
        yield Difference(op, path, real, dev)


def compare_runs(real: dict[str, Any], dev: dict[str, Any]) -> list[Difference]:
    """Every difference between two runs of the same script, in script order."""
    found: list[Difference] = []
    for op in real:
        found.extend(differences(op, real[op], dev.get(op, ABSENT)))
    for op in dev:
        if op not in real:
            found.append(Difference(op, "", ABSENT, dev[op]))
    return found
