"""The ``sequential`` field of a metric and ``spec.falsePauseRate`` (docs/analysis.md).

``spec.parse_spec`` calls ``parse_sequential`` for each metric and ``parse_false_pause_rate``
once (through the kind's surface): the rules are the CRD's, under the same field paths, the CEL
messages word for word. The kind's ``_read`` builds its samples queries from a ``Sequential``
(``samples_queries``); its ``_evidence`` judges what was read. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sentinel_core.metric_kinds._fields import LABEL_NAME, MAX_LABEL_NAME, AddError, object_at
from sentinel_core.values import integer, number

DEFAULT_BY = "pod_template_hash"
DEFAULT_MIN_EVENTS = 100
DEFAULT_FALSE_PAUSE_RATE = 0.05
MAX_FALSE_PAUSE_RATE = 0.2
# A tolerated increase beyond ten times the old rate judges nothing worth judging.
MAX_INCREASE_PERCENT = 1000.0
MAX_SELECTOR_LENGTH = 1024
MAX_MIN_EVENTS = 2**31 - 1
# A PromQL series selector: a metric name and optionally its label matchers (the CRD's pattern).
SELECTOR = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]*\})?$")
# The label that tells pods apart within a side, for the old pods' dispersion (docs/analysis.md).
POD_LABEL = "pod"
_FIELDS = frozenset({"bad", "total", "histogram", "slowerThan", "maxIncrease", "minEvents", "by"})
_INCREASE_FIELDS = frozenset({"percent"})
# The CRD's CEL messages, word for word.
FORMS_MESSAGE = "must set either bad and total, or histogram and slowerThan"
QUERY_REQUIRED_MESSAGE = "is required unless sequential is given"
EXCLUSIVE_MESSAGE = (
    "excludes query, maxValue, maxIncrease, baseline, minSamples and compare on the same metric"
)
_EXCLUDED = ("query", "maxValue", "maxIncrease", "baseline", "minSamples", "compare")


@dataclass(frozen=True)
class Sequential:
    """``sequential`` of one metric, defaults applied: counters, or a histogram and a boundary."""

    bad: str | None = None
    total: str | None = None
    histogram: str | None = None
    slower_than: float | None = None
    # maxIncrease.percent as written; None when absent (no increase tolerated).
    percent: float | None = None
    min_events: int = DEFAULT_MIN_EVENTS
    by: str = DEFAULT_BY

    @property
    def max_increase(self) -> float:
        """Return the tolerated increase of the bad-event rate as a fraction (0.1 for 10 %)."""
        return (self.percent or 0.0) / 100

    def to_dict(self) -> dict[str, object]:
        """Return the field in the custom resource's shape, defaults written out."""
        out: dict[str, object] = {}
        if self.histogram is not None:
            out |= {"histogram": self.histogram, "slowerThan": self.slower_than}
        else:
            out |= {"bad": self.bad, "total": self.total}
        if self.percent is not None:
            out["maxIncrease"] = {"percent": self.percent}
        out |= {"minEvents": self.min_events, "by": self.by}
        return out


def parse_sequential(raw: object, path: str, *, strict: bool, add: AddError) -> Sequential | None:
    """Return the ``sequential`` of one metric item (``raw``), reporting each broken rule."""
    raw = object_at(raw, path, _FIELDS, strict=strict, add=add)
    if raw is None:
        return None
    ok = True
    selectors: dict[str, str | None] = {}
    for key in ("bad", "total", "histogram"):
        value = raw.get(key)
        selectors[key] = None
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            add(f"{path}.{key}", "must be a non-empty PromQL series selector")
            ok = False
        elif len(value) > MAX_SELECTOR_LENGTH:
            add(f"{path}.{key}", f"may not be more than {MAX_SELECTOR_LENGTH} characters")
            ok = False
        elif not SELECTOR.fullmatch(value):
            add(
                f"{path}.{key}",
                'must be a series selector: a metric name and optionally {label="value", ...}',
            )
            ok = False
        else:
            selectors[key] = value
    slower = raw.get("slowerThan")
    slower_than = number(slower)
    if slower is not None and slower_than is None:
        add(f"{path}.slowerThan", "must be a finite number")
        ok = False
    given = {key for key in ("bad", "total", "histogram", "slowerThan") if raw.get(key) is not None}
    histogram = given == {"histogram", "slowerThan"}
    if given != {"bad", "total"} and not histogram:
        add(path, FORMS_MESSAGE)
        ok = False
    percent = _parse_increase(raw.get("maxIncrease"), f"{path}.maxIncrease", strict, add)
    if "maxIncrease" in raw and percent is None:
        ok = False
    min_events = integer(raw.get("minEvents", DEFAULT_MIN_EVENTS))
    if min_events is None or not 1 <= min_events <= MAX_MIN_EVENTS:
        add(f"{path}.minEvents", f"must be an integer from 1 to {MAX_MIN_EVENTS}")
        ok = False
    by = raw.get("by", DEFAULT_BY)
    if not isinstance(by, str) or len(by) > MAX_LABEL_NAME or not LABEL_NAME.fullmatch(by):
        add(f"{path}.by", "must be a Prometheus label name such as pod_template_hash")
        ok = False
    if not ok:
        return None
    assert min_events is not None and isinstance(by, str)
    return Sequential(
        bad=selectors["bad"],
        total=selectors["total"],
        histogram=selectors["histogram"],
        slower_than=slower_than if histogram else None,
        percent=percent,
        min_events=min_events,
        by=by,
    )


def _parse_increase(raw: object, path: str, strict: bool, add: AddError) -> float | None:
    raw = object_at(raw, path, _INCREASE_FIELDS, strict=strict, add=add)
    if raw is None:
        return None
    if "percent" not in raw:
        add(f"{path}.percent", "is required")
        return None
    percent = number(raw["percent"])
    if percent is None or not 0 <= percent <= MAX_INCREASE_PERCENT:
        add(f"{path}.percent", f"must be a number from 0 to {MAX_INCREASE_PERCENT:g}")
        return None
    return percent


def check_sequential_exclusive(item: Mapping[str, object], path: str, add: AddError) -> None:
    """Report a metric with both or neither of ``query`` and ``sequential`` (the CRD's CEL)."""
    # null is absent, as the API server prunes it.
    if item.get("sequential") is None:
        if item.get("query") is None:
            add(f"{path}.query", QUERY_REQUIRED_MESSAGE)
        return
    if any(item.get(key) is not None for key in _EXCLUDED):
        add(f"{path}.sequential", EXCLUSIVE_MESSAGE)


def parse_false_pause_rate(raw: object, path: str, add: AddError) -> float | None:
    """Return ``spec.falsePauseRate`` as written; None when absent (the default applies)."""
    if raw is None:
        return None
    rate = number(raw)
    if rate is None or not 0 < rate <= MAX_FALSE_PAUSE_RATE:
        add(path, f"must be greater than 0 and at most {MAX_FALSE_PAUSE_RATE:g}")
        return None
    return rate
