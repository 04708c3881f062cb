"""New pods against old pods (docs/analysis.md): the statistical judgment of ``compare``.

The kind's ``judge`` calls ``judge_comparison`` with the samples the operator fetched (``Sides``,
``_read``: one ``query_range`` over ``lookback``, split by the ``by`` label into the newest
ReplicaSet's hash and the old ones'). Pure: no I/O, no clock.

The test is SciPy's one-sided Mann-Whitney U (``scipy.stats.mannwhitneyu``): it asks whether the
new pods' samples tend to be larger (``worse: increase``) or smaller (``decrease``) than the old
pods', without assuming a distribution, which latencies and error rates never follow. A metric
fails only when that is significant (p < 1 - confidence) *and* the medians differ by more than
``maxEffect``: significance alone would fail a 0.1 % shift seen over many samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from statistics import median
from typing import Any

from sentinel_core.conditions import Reason, Verdict
from sentinel_core.kinds import DEPLOYMENT, no_new_side, no_old_side
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import threshold
from sentinel_core.metric_kinds._kind import Context, Judgement, inconclusive
from sentinel_core.metric_kinds.compare._read import Reading, Sides
from sentinel_core.metric_kinds.compare._spec import Compare
from sentinel_core.values import integer, number


@dataclass(frozen=True)
class Comparison:
    """``metricResults[].comparison``: the figures the verdict was taken from."""

    new_median: float
    old_median: float
    # new_median - old_median in the metric's unit (positive: the new pods are higher).
    effect: float
    p_value: float
    new_samples: int
    old_samples: int
    new_hash: str
    old_hashes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "newMedian": self.new_median,
            "oldMedian": self.old_median,
            "effect": self.effect,
            "pValue": self.p_value,
            "newSamples": self.new_samples,
            "oldSamples": self.old_samples,
            "newHash": self.new_hash,
            "oldHashes": list(self.old_hashes),
        }

    @classmethod
    def from_dict(cls, raw: object) -> Comparison | None:
        """Return the comparison in ``raw``; None when any field is missing or malformed."""
        if not isinstance(raw, Mapping):
            return None
        floats = [number(raw.get(k)) for k in ("newMedian", "oldMedian", "effect", "pValue")]
        counts = [integer(raw.get(k)) for k in ("newSamples", "oldSamples")]
        new_hash, old = raw.get("newHash"), raw.get("oldHashes")
        if any(f is None for f in floats) or any(c is None for c in counts):
            return None
        if not isinstance(new_hash, str) or not isinstance(old, list):
            return None
        new_median, old_median, effect, p_value = (float(f or 0.0) for f in floats)
        return cls(
            new_median=new_median,
            old_median=old_median,
            effect=effect,
            p_value=p_value,
            new_samples=counts[0] or 0,
            old_samples=counts[1] or 0,
            new_hash=new_hash,
            old_hashes=tuple(h for h in old if isinstance(h, str)),
        )


@dataclass(frozen=True)
class Outcome:
    """``judge_comparison``'s answer: failed or not, or why there is nothing to compare."""

    failed: bool
    message: str
    comparison: Comparison | None = None
    # Set when there is no comparison (Inconclusive, reason NoComparison): says which side.
    missing: str = ""


def judge_comparison(compare: Compare, sides: Sides, *, kind: str = DEPLOYMENT) -> Outcome:
    """Return whether the new pods are worse than the old ones beyond ``maxEffect``.

    Fail only when the one-sided Mann-Whitney U test gives p < 1 - confidence and the medians
    differ by more than ``maxEffect`` in the worse direction. ``kind``, the target's, words a
    missing side.
    """
    missing = _missing(compare, sides, kind)
    if missing:
        return Outcome(failed=False, message=missing, missing=missing)
    assert sides.new_hash is not None
    new, old = sides.new_values, sides.old_values
    alternative = "greater" if compare.worse == "increase" else "less"
    # Imported on the first comparison, not with the module: scipy.stats is a large share of
    # an operator replica's private memory (docs/operations.md, "Memory"), and only
    # analyses that use ``compare`` need it.
    from scipy.stats import mannwhitneyu

    p_value = float(mannwhitneyu(new, old, alternative=alternative).pvalue)
    # Every sample tied: the test has no evidence either way.
    p_value = 1.0 if math.isnan(p_value) else p_value
    new_median, old_median = float(median(new)), float(median(old))
    effect = new_median - old_median
    worse_by = effect if compare.worse == "increase" else -effect
    allowed = compare.max_effect.allowed(old_median) if compare.max_effect else 0.0
    significant = p_value < 1 - compare.confidence
    failed = significant and worse_by > allowed
    comparison = Comparison(
        new_median=_round(new_median),
        old_median=_round(old_median),
        effect=_round(effect),
        p_value=_round(p_value),
        new_samples=len(new),
        old_samples=len(old),
        new_hash=sides.new_hash,
        old_hashes=sides.old_hashes,
    )
    return Outcome(failed=failed, message=sentence(compare, comparison), comparison=comparison)


def sentence(compare: Compare, c: Comparison) -> str:
    """Return the one-sentence message of a comparison, e.g. for the metric card."""
    if c.old_median != 0:
        percent = abs(c.effect) / abs(c.old_median) * 100
        direction = "above" if c.effect > 0 else "below"
        how = f"{percent:.0f} % {direction}" if c.effect != 0 else "equal to"
    else:
        how = f"{_short(abs(c.effect))} {'above' if c.effect > 0 else 'below'}"
        how = how if c.effect != 0 else "equal to"
    limit = f"maxEffect {compare.max_effect.describe()}" if compare.max_effect else "no maxEffect"
    return (
        f"new pods' median {_short(c.new_median)} is {how} old pods' {_short(c.old_median)} "
        f"(p = {_p(c.p_value)}, {c.new_samples} vs {c.old_samples} samples; worse is "
        f"{compare.worse}, {limit}, confidence {compare.confidence:g})"
    )


def _missing(compare: Compare, sides: Sides, kind: str) -> str:
    if sides.new_hash is None:
        return no_new_side(kind)
    if not sides.old_hashes:
        return no_old_side(kind)
    by = compare.by
    if not sides.new_values:
        return f"no comparison: no series with {by}={sides.new_hash} (the new pods)"
    if not sides.old_values:
        return f"no comparison: no series with {by} in {', '.join(sides.old_hashes)} (the old pods)"
    few = [
        f"{n} {side}-pod samples"
        for side, n in (("new", len(sides.new_values)), ("old", len(sides.old_values)))
        if n < compare.min_samples
    ]
    if few:
        return (
            f"no comparison: only {' and '.join(few)} over {compare.lookback}, under "
            f"minSamples {compare.min_samples} per side"
        )
    return ""


def _round(value: float) -> float:
    # Six significant digits: enough to read, and stable through the status's JSON.
    return float(f"{value:.6g}")


def _short(value: float) -> str:
    return f"{value:.3g}"


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def judge(metric: Any, m: Measurement, base: Any, context: Context) -> Judgement:
    """Judge the new pods against the old ones (docs/analysis.md) from the samples fetched.

    The guard applies as to a threshold; the instant value is only shown. Which side is missing
    says more than "no data" (no ReplicaSet, no old pods, too few samples).
    """
    base = threshold.shown(metric, m, base)
    stopped = threshold.guard(metric, m, base)
    if stopped is not None:
        return stopped
    # The worst series of the instant query says nothing about which side is worse.
    base = replace(threshold.with_value(base, m), series=())
    sides = m.reading.sides if isinstance(m.reading, Reading) else None
    if sides is None:
        why = "no comparison: the samples of the two sides were not fetched"
        return inconclusive(base, Reason.NO_COMPARISON, why)
    outcome = judge_comparison(metric.compare, sides, kind=context.target_kind)
    if outcome.comparison is None:
        return inconclusive(base, Reason.NO_COMPARISON, outcome.message)
    judged = replace(
        base,
        verdict=Verdict.FAIL if outcome.failed else Verdict.PASS,
        message=outcome.message,
        comparison=outcome.comparison,
    )
    return Judgement(judged, why=f"{metric.name}: {outcome.message}" if outcome.failed else "")
