"""The spec beyond a fixed threshold: ``maxIncrease``, ``baseline``, ``minSamples``.

Their meaning is in docs/resource.md.

``sentinel_core.spec`` calls ``parse_thresholds`` (through the kind's surface) for each metric and
re-exports the dataclasses.
Every rule here is also in the CRD (schema or CEL ``x-kubernetes-validations``) under the same
field path, so the REST API, the admin and ``kubectl apply`` refuse the same specs alike; the
messages of the CEL rules are copied word for word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sentinel_core.metric_kinds._fields import AddError, Allowance, unknown
from sentinel_core.values import number

MAX_QUERY_LENGTH = 4096
_BASELINE_FIELDS = frozenset({"offset", "beforeRollout"})
_MIN_SAMPLES_FIELDS = frozenset({"query", "min"})
_MAX_OFFSET_LENGTH = 64
# The CRD's CEL rule on offset: a duration with no non-zero digit is 0s. It leaves a string that
# does not even start like a duration to the pattern, so "soon" gets one error, not two.
_LOOKS_NUMERIC = re.compile(r"[0-9.]+[a-zµ]")
_NON_ZERO_DIGIT = re.compile(r"[1-9]")


@dataclass(frozen=True)
class Increase(Allowance):
    """``maxIncrease``: how far above its baseline a metric may go."""

    def limit(self, baseline: float) -> float:
        """Return the highest value allowed against ``baseline``."""
        if self.percent is not None:
            return baseline * (1 + self.percent / 100)
        return baseline + (self.absolute or 0.0)

    def describe(self) -> str:
        """Return the allowance as the messages show it: ``+20 %`` or ``+0.05``."""
        if self.percent is not None:
            return f"+{_short(self.percent)} %"
        return f"+{_short(self.absolute or 0.0)}"


@dataclass(frozen=True)
class Baseline:
    """``baseline``: the earlier instant a metric is compared with (docs/resource.md).

    Either ``offset`` (a duration as written, ``1h``; ``offset_seconds`` parsed) or
    ``before_rollout`` (the instant the target's current rollout began).
    """

    offset: str | None = None
    offset_seconds: float | None = None
    before_rollout: bool = False

    def to_dict(self) -> dict[str, object]:
        if self.offset is not None:
            return {"offset": self.offset}
        return {"beforeRollout": self.before_rollout}

    def describe(self) -> str:
        """Return which baseline it is, as the messages show it."""
        return f"{self.offset} ago" if self.offset is not None else "before the rollout"


@dataclass(frozen=True)
class MinSamples:
    """``minSamples``: a guard query that must return at least ``min`` for a decisive verdict."""

    query: str
    min: float

    def to_dict(self) -> dict[str, object]:
        return {"query": self.query, "min": self.min}


@dataclass(frozen=True)
class Thresholds:
    """What ``parse_thresholds`` read of one metric; None where absent or invalid."""

    max_increase: Increase | None = None
    baseline: Baseline | None = None
    min_samples: MinSamples | None = None


def parse_thresholds(
    item: Mapping[str, object],
    path: str,
    *,
    strict: bool,
    parse_duration: Callable[[str], float],
    add: AddError,
) -> Thresholds:
    """Return the ``maxIncrease``, ``baseline`` and ``minSamples`` of one metric item.

    Report each broken rule through ``add`` under the CRD's field path; the caller checks
    ``maxValue`` itself (the registry's ``bounded`` tells it when the CRD's CEL rule requires it).
    """
    increase = Increase.parse(item.get("maxIncrease"), f"{path}.maxIncrease", strict, add)
    baseline = _parse_baseline(
        item.get("baseline"), f"{path}.baseline", strict, parse_duration, add
    )
    if "maxIncrease" in item and "baseline" not in item:
        add(f"{path}.baseline", "is required with maxIncrease")
    if "baseline" in item and "maxIncrease" not in item:
        add(f"{path}.baseline", "is only used with maxIncrease")
    guard = _parse_min_samples(item.get("minSamples"), f"{path}.minSamples", strict, add)
    return Thresholds(max_increase=increase, baseline=baseline, min_samples=guard)


def _parse_baseline(
    raw: object,
    path: str,
    strict: bool,
    parse_duration: Callable[[str], float],
    add: AddError,
) -> Baseline | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        add(path, "must be an object with offset or beforeRollout")
        return None
    unknown(raw, _BASELINE_FIELDS, path, strict, add)
    ok = True
    offset = raw.get("offset")
    seconds: float | None = None
    if offset is not None:
        if not isinstance(offset, str) or len(offset) > _MAX_OFFSET_LENGTH:
            add(f"{path}.offset", "must be a duration string such as 1h")
            ok = False
        else:
            try:
                seconds = parse_duration(offset)
            except ValueError as exc:
                add(f"{path}.offset", str(exc))
                ok = False
            # The CEL rule, checked apart from the pattern as the API server does.
            if _LOOKS_NUMERIC.match(offset) and not _NON_ZERO_DIGIT.search(offset):
                add(f"{path}.offset", "must be longer than 0s")
                ok = False
    before = raw.get("beforeRollout")
    if before is not None and not isinstance(before, bool):
        add(f"{path}.beforeRollout", "must be true or false")
        ok = False
    if not ok and before is not None and not isinstance(before, bool):
        # The API server checks no CEL rule after a wrong type; neither does this one.
        return None
    if ("offset" in raw) == (before is True) or ("offset" in raw and "beforeRollout" in raw):
        add(path, "must set exactly one of offset and beforeRollout: true")
        ok = False
    if not ok:
        return None
    if offset is not None:
        return Baseline(offset=offset, offset_seconds=seconds)
    return Baseline(before_rollout=True)


def _parse_min_samples(raw: object, path: str, strict: bool, add: AddError) -> MinSamples | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        add(path, "must be an object with query and min")
        return None
    unknown(raw, _MIN_SAMPLES_FIELDS, path, strict, add)
    ok = True
    query = raw.get("query")
    if query is None or query == "":
        add(f"{path}.query", "is required")
        ok = False
    elif not isinstance(query, str) or not query.strip():
        add(f"{path}.query", "must be a non-empty PromQL string")
        ok = False
    elif len(query) > MAX_QUERY_LENGTH:
        add(f"{path}.query", f"may not be more than {MAX_QUERY_LENGTH} characters")
        ok = False
    minimum = number(raw.get("min"))
    if raw.get("min") is None:
        add(f"{path}.min", "is required")
        ok = False
    elif minimum is None:
        add(f"{path}.min", "must be a finite number")
        ok = False
    elif minimum < 0:
        add(f"{path}.min", "must be 0 or more")
        ok = False
    if not ok:
        return None
    assert isinstance(query, str) and minimum is not None
    return MinSamples(query=query, min=minimum)


def _short(value: float) -> str:
    return f"{value:g}"
