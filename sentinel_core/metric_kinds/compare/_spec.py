"""The ``compare`` field of a metric (docs/analysis.md): its parsing and its defaults.

``spec.parse_spec`` calls ``parse_compare`` (through the kind's surface) for each metric: the
rules are the CRD's, under the same field paths, the CEL messages word for word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sentinel_core.metric_kinds._fields import (
    LABEL_NAME,
    MAX_LABEL_NAME,
    AddError,
    Allowance,
    object_at,
)
from sentinel_core.values import integer, number

DEFAULT_BY = "pod_template_hash"
DEFAULT_WORSE = "increase"
DEFAULT_CONFIDENCE = 0.95
DEFAULT_LOOKBACK = "5m"
DEFAULT_MIN_SAMPLES = 10
# The least samples per side a rank test can say anything with at usual confidences.
LEAST_MIN_SAMPLES = 3
# A sample per interval step over lookback: Prometheus refuses more than 11,000 points per
# series, and a status must not be built from that many either.
MAX_POINTS = 11_000
_WORSE = ("increase", "decrease")
_FIELDS = frozenset({"by", "worse", "maxEffect", "confidence", "lookback", "minSamples"})
_MAX_LOOKBACK_LENGTH = 64
# The CRD's CEL message for a metric with compare and a fixed or relative bound too.
EXCLUSIVE_MESSAGE = "excludes maxValue and maxIncrease on the same metric"


@dataclass(frozen=True)
class Effect(Allowance):
    """``maxEffect``: how much worse the new pods' median may be."""

    def allowed(self, old_median: float) -> float:
        """Return how far (in the metric's unit) the new median may be worse than the old."""
        if self.percent is not None:
            return abs(old_median) * self.percent / 100
        return self.absolute or 0.0

    def describe(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g} %"
        return f"{self.absolute or 0.0:g}"


@dataclass(frozen=True)
class Compare:
    """``compare`` of one metric, defaults applied."""

    by: str = DEFAULT_BY
    worse: str = DEFAULT_WORSE
    max_effect: Effect | None = None
    confidence: float = DEFAULT_CONFIDENCE
    lookback: str = DEFAULT_LOOKBACK
    lookback_seconds: float = 300.0
    min_samples: int = DEFAULT_MIN_SAMPLES

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"by": self.by, "worse": self.worse}
        if self.max_effect is not None:
            out["maxEffect"] = self.max_effect.to_dict()
        out |= {
            "confidence": self.confidence,
            "lookback": self.lookback,
            "minSamples": self.min_samples,
        }
        return out


def parse_compare(
    raw: object,
    path: str,
    *,
    strict: bool,
    parse_duration: Callable[[str], float],
    add: AddError,
) -> Compare | None:
    """Return the ``compare`` of one metric item (``raw``), reporting each broken rule."""
    raw = object_at(raw, path, _FIELDS, strict=strict, add=add)
    if raw is None:
        return None
    ok = True
    by = raw.get("by", DEFAULT_BY)
    if not isinstance(by, str) or len(by) > MAX_LABEL_NAME or not LABEL_NAME.fullmatch(by):
        add(f"{path}.by", "must be a Prometheus label name such as pod_template_hash")
        ok = False
    worse = raw.get("worse", DEFAULT_WORSE)
    if worse not in _WORSE:
        add(f"{path}.worse", "must be one of increase, decrease")
        ok = False
    effect = Effect.parse(raw.get("maxEffect"), f"{path}.maxEffect", strict, add)
    if "maxEffect" in raw and effect is None:
        ok = False
    confidence = number(raw.get("confidence", DEFAULT_CONFIDENCE))
    if confidence is None or not 0.5 < confidence < 1:
        add(f"{path}.confidence", "must be greater than 0.5 and less than 1")
        ok = False
    lookback = raw.get("lookback", DEFAULT_LOOKBACK)
    seconds = 0.0
    if not isinstance(lookback, str) or len(lookback) > _MAX_LOOKBACK_LENGTH:
        add(f"{path}.lookback", "must be a duration string such as 5m")
        ok = False
    else:
        try:
            seconds = parse_duration(lookback)
        except ValueError as exc:
            add(f"{path}.lookback", str(exc))
            ok = False
        else:
            if seconds == 0:
                # The CRD's CEL rule (a duration with no non-zero digit), as on baseline.offset.
                add(f"{path}.lookback", "must be longer than 0s")
                ok = False
    minimum = integer(raw.get("minSamples", DEFAULT_MIN_SAMPLES))
    if minimum is None or not LEAST_MIN_SAMPLES <= minimum <= MAX_POINTS:
        add(f"{path}.minSamples", f"must be an integer from {LEAST_MIN_SAMPLES} to {MAX_POINTS}")
        ok = False
    if not ok:
        return None
    assert isinstance(by, str) and isinstance(lookback, str) and isinstance(worse, str)
    assert confidence is not None and minimum is not None
    return Compare(by, worse, effect, confidence, lookback, seconds, minimum)


def check_exclusive(item: Mapping[str, object], path: str, add: AddError) -> None:
    """Report a metric with ``compare`` and ``maxValue`` or ``maxIncrease`` (the CRD's CEL)."""
    if "compare" in item and ("maxValue" in item or "maxIncrease" in item):
        add(f"{path}.compare", EXCLUSIVE_MESSAGE)
