"""Field shapes more than one metric kind parses: an allowance, a sub-object, a label name.

``{percent: x}`` or ``{absolute: x}`` is ``maxIncrease`` (threshold) and ``compare.maxEffect``;
a Prometheus label name is ``compare.by`` and ``sequential.by``. The rules are the CRD's, under
the same field paths (docs/resource.md). Private to ``sentinel_core.metric_kinds``: each kind
imports what it parses with from here, nothing outside the kinds does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Self

from sentinel_core.values import number

# Reports one error: (field path, message).
AddError = Callable[[str, str], None]

_ALLOWANCE_FIELDS = frozenset({"percent", "absolute"})
# Prometheus's label name syntax (the CRD's pattern).
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
MAX_LABEL_NAME = 63


@dataclass(frozen=True)
class Allowance:
    """``{percent: x}`` or ``{absolute: x}``: how far a metric may go; exactly one field is set.

    ``maxIncrease`` (``threshold.Increase``) and ``compare.maxEffect`` (``compare.Effect``) share
    the shape, the parsing and the serialized form; each subclass adds how it applies and reads.
    """

    percent: float | None = None
    absolute: float | None = None

    @classmethod
    def parse(cls, raw: object, path: str, strict: bool, add: AddError) -> Self | None:
        """Return the allowance ``raw`` gives; None when absent or wrong (reported)."""
        values = parse_allowance(raw, path, strict, add)
        if values is None:
            return None
        return cls(percent=values.get("percent"), absolute=values.get("absolute"))

    def to_dict(self) -> dict[str, float]:
        if self.percent is not None:
            return {"percent": self.percent}
        return {"absolute": self.absolute if self.absolute is not None else 0.0}


def parse_allowance(raw: object, path: str, strict: bool, add: AddError) -> dict[str, float] | None:
    """Parse ``{percent: x}`` or ``{absolute: x}`` (``maxIncrease``, ``compare.maxEffect``).

    Exactly one of the two, a finite number 0 or more; None when absent or wrong (reported).
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        add(path, "must be an object with percent or absolute")
        return None
    unknown(raw, _ALLOWANCE_FIELDS, path, strict, add)
    values: dict[str, float] = {}
    for key in ("percent", "absolute"):
        if key not in raw:
            continue
        value = number(raw[key])
        if value is None:
            add(f"{path}.{key}", "must be a finite number")
        elif value < 0:
            add(f"{path}.{key}", "must be 0 or more")
        else:
            values[key] = value
    if ("percent" in raw) == ("absolute" in raw):
        add(path, "must set exactly one of percent and absolute")
        return None
    return values if len(values) == 1 else None


def object_at(
    raw: object, path: str, known: frozenset[str], *, strict: bool, add: AddError
) -> Mapping[str, object] | None:
    """Return the optional object ``raw`` (``compare``, ``sequential``); None when absent.

    Not an object is reported; with ``strict`` so is each key not in ``known``.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        add(path, "must be an object")
        return None
    unknown(raw, known, path, strict, add)
    return raw


def unknown(
    raw: Mapping[object, object], known: frozenset[str], path: str, strict: bool, add: AddError
) -> None:
    """With ``strict``, report each key of ``raw`` not in ``known``."""
    if strict:
        for key in raw:
            if key not in known:
                add(f"{path}.{key}", "unknown field")
