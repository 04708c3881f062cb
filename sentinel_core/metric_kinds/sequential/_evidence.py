"""Sequential judgment of new pods against old pods on counts: an e-process per metric.

The operator reads for a ``sequential`` metric (docs/analysis.md, "Sequential judgment"), per
evaluation, the steps it has not counted yet: per step the bad and total events of the new pods
and of the old pods (optionally per pod). The kind's judge takes the state the evidence continues
from (``_read.begin``: a new rollout, a spec edit or a resume starts afresh), ``advance``s it with
the steps and asks ``judge_sequential`` for the verdict and its sentence; the status keeps
``state.to_dict(needed)``. The benchmark (``bench.sequential_calibration``) calls
``accumulate`` and ``evidence_of`` on whole arrays of simulated rollouts: the same arithmetic.
Pure: no I/O, no clock; times are strings the caller gives.

The test (Lindon & Malek 2022, the time-inhomogeneous Poisson processes): within one step,
given B bad events on both sides, the new side's share X of them is Binomial(B, pi) with
pi = rho s / (rho s + 1 - s), s the new side's share of all events and rho the ratio of the
new pods' bad-event rate to the old pods'. Conditioning on B removes whatever both sides share
(time of day, a dependency's bad minute). H0 is rho <= rho0 = 1 + maxIncrease. The evidence is
the mixture, over a fixed grid of rho > rho0 with equal weights, of the likelihood ratios
against rho0, multiplied step by step: a nonnegative supermartingale under H0 (the ratio
against the boundary grows with X and X is stochastically smaller for any rho <= rho0), so by
Ville's inequality it reaches 1/alpha with probability at most alpha, however often one looks.

Why a grid and not a conjugate prior: the share s ramps during a rolling update, so the steps
do not share one binomial parameter and a Beta prior on pi is no longer conjugate (savvi's
``InhomogeneousPoissonProcess`` assumes a fixed share); a grid handles any share and the
margin rho0 exactly, and its state is one number per grid point: bounded.

Pods are not Poisson: when the pods' bad-event rates wander, X given B is over-dispersed by
phi = 1 + kappa (B - 1) pi0 (1 - pi0) (1/Pn + 1/Po), kappa the pods' squared coefficient of
variation and Pn, Po the effective numbers of pods per side. Each step's log likelihood ratio
is divided by phi (a quasi-likelihood: right to second order in the log ratio), with kappa
estimated from the old pods' counts (a moment estimate over the rollout so far, doubled for
the estimate's own noise). Without per-pod counts phi is 1. Where this holds and where it does
not is measured, not assumed: docs/analysis.md, "Sequential judgment".

Pods that stay different are not noise that averages out: the null's boundary is widened to
rho0 * w, w from the old pods' persistent spread (each old pod's counts summed since counting
began, by name), so that the test is about the release and not about which pods it got; the
grid moves with the boundary. The ratio's bounds are two one-sided mixtures per ratio of a fixed
grid, from the same conditional binomial (docs/analysis.md, "Pods that stay different" and "The
ratio's bounds").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sentinel_core.conditions import Verdict
from sentinel_core.kinds import DEPLOYMENT, no_old_side
from sentinel_core.values import number

if TYPE_CHECKING:
    import numpy as np

DEFAULT_FALSE_PAUSE_RATE = 0.05
DEFAULT_MIN_EVENTS = 100
# The grid of alternatives: rho0 * TOP ** (j / GRID) for j = 1..GRID, equal weights. Up to ten
# times the margin covers every regression worth pausing for; 24 points ~10 % apart lose
# little against the best single alternative and keep the status small.
GRID = 24
TOP = 10.0
# The moment estimate of kappa is noisy with few old pods and few steps; doubling it kept every
# over-dispersed case of the calibration within its bound (docs/analysis.md).
DISPERSION_SAFETY = 2.0
# The fewest old pods, when counting began, with which the status states the false-pause bound:
# fewer cannot estimate how much pods differ before that spread decides the first steps
# (docs/analysis.md, "Where the bound is stated").
MIN_OLD_PODS = 4
STATED, CONDITIONAL = "Stated", "Conditional"
# Pods that stay different: the null's boundary rho0 is widened by exp(t * sd), sd the standard
# deviation of log(new pods' average / old pods' average) that the old pods' persistent spread
# implies, estimated from each old pod's counts summed since counting began, and t Student's
# quantile at the estimate's degrees of freedom (old pods less one): a good release's new pods
# then exceed the widened boundary by pod luck alone with probability SPREAD_MISS, whatever the
# number of old pods, shared among the metrics as falsePauseRate is (docs/analysis.md, "Pods
# that stay different"). One point: the promise at the margin's edge is falsePauseRate plus it.
SPREAD_MISS = 0.01
# The old pods whose summed counts are kept (the status stays small); later ones are not.
MAX_TRACKED_PODS = 64
# Beyond this the spread leaves nothing a margin could mean; it also bounds a forged status.
_MAX_WIDENING = 1000.0
# The confidence sequence's grid of ratios: 2 ** (k / 6), k = -30..30 (1/32 to 32, 12 % apart).
BOUND_GRID = 61
_BOUND_STEP = 6
# Status values are rounded to this many decimals (log ratios) so that the status stays small.
_DECIMALS = 6


@dataclass(frozen=True)
class Side:
    """One side's counts over one step: bad and all events, and optionally per pod."""

    bad: float
    total: float
    # (bad, total) per pod of the side; empty when the query is not per pod.
    pods: tuple[tuple[float, float], ...] = ()
    # The pods' names, in the order of ``pods`` (empty: the position in ``pods`` names a pod).
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    """The counts of one step of ``interval`` (both sides) and the instant it ends."""

    new: Side
    old: Side
    end: str


@dataclass(frozen=True)
class Settings:
    """What one sequential metric is judged with, defaults applied."""

    # Tolerated increase of the new pods' bad-event rate as a fraction (0.1 for 10 %).
    max_increase: float = 0.0
    # The analysis's number of sequential metrics and its falsePauseRate: needed is m/alpha.
    metrics: int = 1
    false_pause_rate: float = DEFAULT_FALSE_PAUSE_RATE
    min_events: int = DEFAULT_MIN_EVENTS
    # Words of the message: "<rate> ... <events>".
    rate_name: str = "error rate"
    events_name: str = "requests"

    @property
    def needed(self) -> float:
        """Return the evidence at which the metric fails: the budget split evenly."""
        return self.metrics / self.false_pause_rate

    @property
    def rho0(self) -> float:
        return 1.0 + self.max_increase


@dataclass(frozen=True)
class State:
    """``metricResults[].sequential``: the evidence and the counts since the rollout began.

    ``key`` names what the evidence is about (the rollout's template hash, the spec's
    generation, the resume): a different key starts afresh (``_read.begin``).
    """

    key: str
    since: str
    through: str
    new_bad: float = 0.0
    new_total: float = 0.0
    old_bad: float = 0.0
    old_total: float = 0.0
    # The cumulated log likelihood ratio per grid point (empty: no step counted yet).
    log_ratios: tuple[float, ...] = ()
    # The old pods' dispersion so far: excess of the chi-square over its mean, and its weight.
    excess: float = 0.0
    weight: float = 0.0
    steps: int = field(default=0)
    # Old pods with events in the first step with events on both sides (0: none yet), and
    # whether every such step was read per pod: what ``guarantee`` rests on.
    old_pods: int = 0
    per_pod: bool = True
    # Each old pod's (name, bad, total) summed since counting began: the pods' persistent spread.
    old_by_pod: tuple[tuple[str, float, float], ...] = ()
    # The factor the last step's null boundary was widened by for that spread (1: none).
    widening: float = 1.0
    # The cumulated tempered log likelihood of each ratio of the bound grid, less that of ratio
    # 1 (empty: no step counted): the confidence sequence ``bounds`` reads.
    bound_logs: tuple[float, ...] = ()
    # The end of the last step counted by the evaluation at which the evidence first reached
    # what is needed (None: not yet). From then on the metric fails, whatever the evidence
    # does after: the test has concluded (docs/analysis.md#the-verdict-stays).
    reached_at: str | None = None
    # The evidence at which the metric fails (Settings.needed), kept with the state in the
    # status so that a reader sees both; not part of what the evidence is about.
    needed: float = field(default=0.0, compare=False)

    @property
    def evidence(self) -> float:
        """Return the mixture likelihood ratio: 1 before any step."""
        if not self.log_ratios:
            return 1.0
        top = max(self.log_ratios)
        total = sum(math.exp(v - top) for v in self.log_ratios) / len(self.log_ratios)
        return math.exp(min(top + math.log(total), 700.0))

    @property
    def ratio(self) -> float | None:
        """Return the new pods' bad-event rate over the old pods'; None when undefined."""
        if self.new_total <= 0 or self.old_total <= 0 or self.old_bad <= 0:
            return None
        return (self.new_bad / self.new_total) / (self.old_bad / self.old_total)

    @property
    def kappa(self) -> float:
        """Return the old pods' estimated squared coefficient of variation (0 without pods)."""
        return max(0.0, self.excess / self.weight) if self.weight > 0 else 0.0

    @property
    def spread(self) -> float:
        """Return the old pods' persistent squared coefficient of variation, estimated (>= 0)."""
        return persistent_spread(self.old_by_pod)

    def bounds(self, needed: float | None = None) -> tuple[float | None, float | None]:
        """Return the anytime-valid bounds of the ratio at the metric's share of the budget.

        None where a side is unbounded (no evidence yet, or beyond the grid).
        """
        limit = self.needed if needed is None else needed
        if not self.bound_logs or limit <= 0:
            return None, None
        low, high = ratio_bounds(self.bound_logs, limit)
        return (
            None if low is None else low / self.widening,
            None if high is None else high * self.widening,
        )

    @property
    def guarantee(self) -> tuple[str, str]:
        """Return whether the status states the false-pause bound, and why not when it does not.

        ``Stated`` when what the bound rests on and the operator can check holds: counts per
        pod, and at least ``MIN_OLD_PODS`` old pods when counting began. ``Conditional`` with
        the reason otherwise (docs/analysis.md, "Where the bound is stated").
        """
        if not self.per_pod:
            return CONDITIONAL, (
                "the series have no pod label, so pods whose error rates differ are not seen "
                "and the bound assumes every request fails independently"
            )
        if self.old_pods == 0:
            return CONDITIONAL, "no step with events on both sides yet"
        if self.old_pods < MIN_OLD_PODS:
            pods = "1 old pod" if self.old_pods == 1 else f"{self.old_pods} old pods"
            return CONDITIONAL, (
                f"only {pods} when counting began, fewer than the {MIN_OLD_PODS} needed to "
                "estimate how much pods differ"
            )
        return STATED, ""

    def to_dict(self, needed: float | None = None) -> dict[str, Any]:
        ratio = self.ratio
        guarantee, reason = self.guarantee
        low, high = self.bounds(needed)
        return {
            "evidence": float(f"{self.evidence:.6g}"),
            "needed": self.needed if needed is None else needed,
            "ratio": None if ratio is None else float(f"{ratio:.4g}"),
            "ratioLower": None if low is None else float(f"{low:.4g}"),
            "ratioUpper": None if high is None else float(f"{high:.4g}"),
            "newBad": self.new_bad,
            "newTotal": self.new_total,
            "oldBad": self.old_bad,
            "oldTotal": self.old_total,
            "since": self.since,
            "through": self.through,
            "key": self.key,
            "steps": self.steps,
            "logRatios": list(self.log_ratios),
            "dispersion": {"excess": self.excess, "weight": self.weight},
            "oldPods": self.old_pods,
            "perPod": self.per_pod,
            "guarantee": guarantee,
            "guaranteeReason": reason,
            "podSpread": {
                "pods": [
                    {"pod": name, "bad": bad, "total": total}
                    for name, bad, total in self.old_by_pod
                ],
                "widening": self.widening,
            },
            "boundLogs": list(self.bound_logs),
            # Only once reached: every status field costs the API server a little at each write.
            **({"reachedAt": self.reached_at} if self.reached_at is not None else {}),
        }

    @classmethod
    def from_dict(cls, raw: object) -> State | None:
        """Return the state in a status's ``sequential``; None when missing or malformed."""
        if not isinstance(raw, Mapping):
            return None
        key, since, through = raw.get("key"), raw.get("since"), raw.get("through")
        if not all(isinstance(v, str) for v in (key, since, through)):
            return None
        counts = [number(raw.get(k)) for k in ("newBad", "newTotal", "oldBad", "oldTotal")]
        logs = raw.get("logRatios")
        dispersion = raw.get("dispersion")
        steps = raw.get("steps")
        if any(c is None or c < 0 for c in counts) or not isinstance(logs, list):
            return None
        if not isinstance(dispersion, Mapping) or not isinstance(steps, int) or steps < 0:
            return None
        values = [number(v) for v in logs]
        excess, weight = number(dispersion.get("excess")), number(dispersion.get("weight"))
        if len(values) not in (0, GRID) or any(v is None for v in values):
            return None
        if excess is None or weight is None or weight < 0:
            return None
        assert isinstance(key, str) and isinstance(since, str) and isinstance(through, str)
        new_bad, new_total, old_bad, old_total = (float(c or 0.0) for c in counts)
        # A state written before these were kept: what its steps had is unknown, so the bound
        # is not stated for it.
        old_pods, per_pod = raw.get("oldPods", 0), raw.get("perPod", steps == 0)
        if not isinstance(old_pods, int) or isinstance(old_pods, bool) or old_pods < 0:
            return None
        if not isinstance(per_pod, bool):
            return None
        needed = number(raw.get("needed"))
        # A state written before these were kept: no spread seen, no bounds until a step.
        spread = _pod_spread(raw.get("podSpread", {"pods": [], "widening": 1.0}))
        bound_raw = raw.get("boundLogs", [])
        if spread is None or not isinstance(bound_raw, list):
            return None
        bound_logs = [number(v) for v in bound_raw]
        if len(bound_logs) not in (0, BOUND_GRID) or any(v is None for v in bound_logs):
            return None
        reached_at = raw.get("reachedAt")
        if reached_at is not None and not isinstance(reached_at, str):
            return None
        return cls(
            key=key,
            since=since,
            through=through,
            new_bad=new_bad,
            new_total=new_total,
            old_bad=old_bad,
            old_total=old_total,
            log_ratios=tuple(float(v or 0.0) for v in values),
            excess=excess,
            weight=weight,
            steps=steps,
            old_pods=old_pods,
            per_pod=per_pod,
            old_by_pod=spread[0],
            widening=spread[1],
            bound_logs=tuple(float(v or 0.0) for v in bound_logs),
            reached_at=reached_at,
            needed=needed if needed is not None and needed > 0 else 0.0,
        )


def _pod_spread(raw: object) -> tuple[tuple[tuple[str, float, float], ...], float] | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("pods"), list):
        return None
    widening = number(raw.get("widening"))
    if widening is None or not 1.0 <= widening <= _MAX_WIDENING:
        return None
    pods = []
    for entry in raw["pods"][:MAX_TRACKED_PODS]:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("pod"), str):
            return None
        bad, total = number(entry.get("bad")), number(entry.get("total"))
        if bad is None or total is None or not 0 <= bad <= total:
            return None
        pods.append((str(entry["pod"]), bad, total))
    return tuple(pods), widening


@dataclass(frozen=True)
class Counted:
    """Both sides' counts over the steps one evaluation counted: the history's per-side rates.

    The status keeps the sums since the rollout began; an evaluation's own steps (one, or a
    backlog after an outage) are what the graph of the two sides' bad-event rates draws.
    """

    new_bad: float
    new_total: float
    old_bad: float
    old_total: float
    steps: int
    # The end of the last step counted (the state's ``through`` after it).
    through: str

    @property
    def new_rate(self) -> float | None:
        """Return the new pods' bad events per event; None without events."""
        return self.new_bad / self.new_total if self.new_total > 0 else None

    @property
    def old_rate(self) -> float | None:
        """Return the old pods' bad events per event; None without events."""
        return self.old_bad / self.old_total if self.old_total > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "newBad": self.new_bad,
            "newTotal": self.new_total,
            "oldBad": self.old_bad,
            "oldTotal": self.old_total,
            "steps": self.steps,
            "through": self.through,
        }

    @classmethod
    def from_dict(cls, raw: object) -> Counted | None:
        """Return the counts in a history row's ``counted``; None when missing or malformed."""
        if not isinstance(raw, Mapping):
            return None
        counts = [number(raw.get(k)) for k in ("newBad", "newTotal", "oldBad", "oldTotal")]
        steps, through = raw.get("steps"), raw.get("through")
        if any(c is None or c < 0 for c in counts) or not isinstance(through, str):
            return None
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            return None
        new_bad, new_total, old_bad, old_total = (float(c or 0.0) for c in counts)
        return cls(new_bad, new_total, old_bad, old_total, steps, through)


def counted(before: State, after: State) -> Counted:
    """Return what ``advance`` added to ``before`` to make ``after`` (the same key)."""
    return Counted(
        new_bad=_difference(after.new_bad, before.new_bad),
        new_total=_difference(after.new_total, before.new_total),
        old_bad=_difference(after.old_bad, before.old_bad),
        old_total=_difference(after.old_total, before.old_total),
        steps=after.steps - before.steps,
        through=after.through,
    )


def _difference(after: float, before: float) -> float:
    # Sums of floats: 0.30000000000000004 - 0.1 is not 0.2 exactly; counts need no more digits.
    return max(0.0, round(after - before, _DECIMALS))


def fresh(key: str, since: str) -> State:
    """Return the state of a rollout with nothing counted yet: evidence 1."""
    return State(key=key, since=since, through=since)


def advance(state: State, steps: Sequence[Step], settings: Settings) -> State:
    """Return ``state`` with ``steps`` counted, in order; each step ends after ``through``."""
    for step in steps:
        state = _count(state, step, settings)
    return state


def _count(state: State, step: Step, settings: Settings) -> State:
    import numpy as np

    new_bad, old_bad = _clip(step.new.bad, step.new.total), _clip(step.old.bad, step.old.total)
    new_total, old_total = max(step.new.total, 0.0), max(step.old.total, 0.0)
    previous = np.asarray(state.log_ratios) if state.log_ratios else np.zeros(GRID)
    both = bool(step.new.pods) and bool(step.old.pods)
    informative = new_total > 0 and old_total > 0
    old_pods = state.old_pods
    if not old_pods and informative and both:
        old_pods = sum(1 for _, t in step.old.pods if t > 0)
    old_by_pod = _summed(state.old_by_pod, step.old) if both else state.old_by_pod
    new_counts = np.asarray([max(t, 0.0) for _, t in step.new.pods]) if both else None
    old_counts = np.asarray([max(t, 0.0) for _, t in step.old.pods]) if both else None
    widening = state.widening
    if both and informative:
        summed = np.asarray([t for _, _, t in old_by_pod if t > 0])
        widening = widening_of(
            persistent_spread(old_by_pod),
            float(effective_pods(new_counts)),
            float(effective_pods(old_counts)),
            float(effective_pods(summed)) - 1,
            settings.metrics,
        )
    bounds = np.asarray(state.bound_logs) if state.bound_logs else np.zeros(BOUND_GRID)
    logs, excess, weight, bounds = accumulate(
        previous,
        np.asarray(state.excess),
        np.asarray(state.weight),
        new_bad=np.asarray(new_bad),
        new_total=np.asarray(new_total),
        old_bad=np.asarray(old_bad),
        old_total=np.asarray(old_total),
        rho0=settings.rho0,
        new_pods=new_counts,
        old_pods_bad=np.asarray([_clip(b, t) for b, t in step.old.pods]) if both else None,
        old_pods=old_counts,
        widening=np.asarray(widening),
        bounds=bounds,
    )
    return State(
        key=state.key,
        since=state.since,
        through=step.end,
        new_bad=state.new_bad + new_bad,
        new_total=state.new_total + new_total,
        old_bad=state.old_bad + old_bad,
        old_total=state.old_total + old_total,
        log_ratios=tuple(_floor(float(v)) for v in logs),
        excess=float(excess),
        weight=float(weight),
        steps=state.steps + 1,
        old_pods=old_pods,
        per_pod=state.per_pod and (both or not informative),
        old_by_pod=old_by_pod,
        widening=widening,
        bound_logs=tuple(round(float(v), _DECIMALS) for v in bounds),
        reached_at=state.reached_at,
    )


def _summed(
    before: tuple[tuple[str, float, float], ...], side: Side
) -> tuple[tuple[str, float, float], ...]:
    """Return each old pod's counts summed with this step's (unnamed: named by position)."""
    names = side.names
    if len(names) != len(side.pods):
        names = tuple(f"#{i}" for i in range(len(side.pods)))
    sums = {name: (bad, total) for name, bad, total in before}
    for name, (bad, total) in zip(names, side.pods, strict=True):
        if name not in sums and len(sums) >= MAX_TRACKED_PODS:
            continue
        was_bad, was_total = sums.get(name, (0.0, 0.0))
        sums[name] = (was_bad + _clip(bad, total), was_total + max(total, 0.0))
    return tuple(
        (name, round(bad, _DECIMALS), round(total, _DECIMALS))
        for name, (bad, total) in sums.items()
    )


def persistent_spread(pods: Sequence[tuple[str, float, float]]) -> float:
    """Return the old pods' persistent squared CV from their counts summed since counting began.

    The same moment estimate as the per-step ``kappa`` (``dispersion_terms``), on each pod's
    sums: a pod that stays worse stays worse in its sums, while step-to-step wander averages
    out of them, so this estimates the spread that does not go away with more steps.
    """
    import numpy as np

    if len(pods) < 2:
        return 0.0
    bad = np.asarray([b for _, b, _ in pods])
    total = np.asarray([t for _, _, t in pods])
    return float(spread_of(bad, total))


def spread_of(bad: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Return ``persistent_spread`` of per-pod sums (last axis: the pods; broadcasts)."""
    import numpy as np

    excess, weight = dispersion_terms(bad, total)
    return np.where(weight > 0, np.maximum(excess, 0) / np.where(weight > 0, weight, 1), 0.0)


def widening_of(
    spread: float, pods_new: float, pods_old: float, freedom: float, metrics: int
) -> float:
    """Return the factor by which pods' persistent spread widens the null's boundary (>= 1)."""
    return float(widenings(spread, pods_new, pods_old, freedom, metrics))


def widenings(
    spread: np.ndarray | float,
    pods_new: np.ndarray | float,
    pods_old: np.ndarray | float,
    freedom: np.ndarray | float,
    metrics: int = 1,
) -> np.ndarray:
    """Return ``widening_of`` elementwise.

    log(new pods' average / old pods' average) has variance about spread (1/Pn + 1/Po) when
    every pod's rate is its side's times a factor of squared CV ``spread`` (Pn, Po the
    effective pods). ``spread`` is estimated with ``freedom`` degrees of freedom (the old pods
    in its sums less one), so the log ratio over its estimated sd is Student's t: a good
    release's new pods exceed exp(t sd) by pod luck alone with probability SPREAD_MISS /
    ``metrics``. Fewer than MIN_OLD_PODS - 1 degrees of freedom are taken as that many (the
    status says Conditional there; a quantile at one degree of freedom would end detection).
    """
    import numpy as np
    from scipy.special import stdtrit

    k = np.asarray(spread, dtype=float)
    n, o = np.asarray(pods_new, dtype=float), np.asarray(pods_old, dtype=float)
    known = (k > 0) & (n > 0) & (o > 0)
    inverse = np.where(known, 1 / np.where(known, n, 1) + 1 / np.where(known, o, 1), 0.0)
    sd = np.sqrt(np.where(known, k, 0.0) * inverse)
    dof = np.maximum(np.asarray(freedom, dtype=float), MIN_OLD_PODS - 1)
    t = stdtrit(dof, 1 - SPREAD_MISS / max(metrics, 1))
    return np.minimum(np.exp(t * sd), _MAX_WIDENING)


def accumulate(
    logs: np.ndarray,
    excess: np.ndarray,
    weight: np.ndarray,
    *,
    new_bad: np.ndarray,
    new_total: np.ndarray,
    old_bad: np.ndarray,
    old_total: np.ndarray,
    rho0: float,
    new_pods: np.ndarray | None = None,
    old_pods_bad: np.ndarray | None = None,
    old_pods: np.ndarray | None = None,
    widening: np.ndarray | float = 1.0,
    bounds: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the log ratios, dispersion sums and bound grid's logs with one more step counted.

    ``logs`` has the grid as last axis; the counts broadcast over the others (one rollout for
    ``advance``, thousands for the benchmark). The per-pod arrays (last axis: the pods, 0 for
    a pod not on that side) are all given or all None. The old pods' dispersion of this step
    counts in its own tempering: the moment estimate needs every old pod it can get.
    ``widening`` (>= 1, per rollout) moves the null's boundary to rho0 * widening for this step,
    the grid with it; ``bounds`` (last axis: ``BOUND_GRID``) are the confidence sequence's logs
    (zeros when None).
    """
    import numpy as np

    if new_pods is not None and old_pods_bad is not None and old_pods is not None:
        step_excess, step_weight = dispersion_terms(old_pods_bad, old_pods)
        excess = excess + step_excess
        weight = weight + step_weight
        kappa = np.where(weight > 0, np.maximum(excess, 0) / np.where(weight > 0, weight, 1), 0)
        pods_new, pods_old = effective_pods(new_pods), effective_pods(old_pods)
    else:
        kappa, pods_new, pods_old = np.zeros(()), np.zeros(()), np.zeros(())
    boundary = rho0 * np.asarray(widening, dtype=float)
    # The grid moves with the boundary: alternative j is boundary * TOP ** (j / GRID).
    relative = TOP ** (np.arange(1, GRID + 1) / GRID)
    step = log_ratios(
        new_bad,
        new_total,
        old_bad,
        old_total,
        1.0,
        kappa=kappa,
        pods_new=pods_new,
        pods_old=pods_old,
        alternatives=boundary[..., None] * relative,
        null=boundary,
    )
    bound_step = log_ratios(
        new_bad,
        new_total,
        old_bad,
        old_total,
        1.0,
        kappa=kappa,
        pods_new=pods_new,
        pods_old=pods_old,
        alternatives=bound_grid(),
    )
    base = np.zeros((*step.shape[:-1], BOUND_GRID)) if bounds is None else bounds
    return logs + step, excess, weight, base + bound_step


def bound_grid() -> np.ndarray:
    """Return the ratios of the confidence sequence's grid: 2 ** (k / 6), k = -30..30."""
    import numpy as np

    half = (BOUND_GRID - 1) // 2
    return 2.0 ** (np.arange(-half, half + 1) / _BOUND_STEP)


def ratio_bounds(bound_logs: Sequence[float], needed: float) -> tuple[float | None, float | None]:
    """Return the confidence sequence's lower and upper ratio from the bound grid's logs.

    Two one-sided tests per grid ratio r, each at half the metric's share of the budget
    (evidence 2 * needed): "the ratio is at most r" against the grid's ratios above it, and
    "at least r" against those below, each the average of their likelihood ratios (a test
    supermartingale for every ratio on its side, as the main evidence is). The lower bound is
    the largest r such that r and every grid ratio below it are refuted as upper limits; so
    the true ratio is below it with probability at most half the share, at any time. None when
    nothing is refuted on that side, or everything (beyond the grid).
    """
    import numpy as np

    logs = np.asarray(bound_logs, dtype=float)
    ratios = bound_grid()
    limit = math.log(2 * needed) + math.log1p(-1e-9)
    count = len(logs)
    index = np.arange(count)
    # log sum over j > k and over j < k of exp(L_j), by cumulative log-add-exp.
    above = np.append(np.logaddexp.accumulate(logs[::-1])[::-1][1:], -np.inf)
    below = np.insert(np.logaddexp.accumulate(logs)[:-1], 0, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        # "ratio <= r_k" refuted: mean over j > k of exp(L_j - L_k) >= 2 needed.
        below_refuted = above - np.log(count - 1 - index) - logs >= limit
        # "ratio >= r_k" refuted: mean over j < k of exp(L_j - L_k) >= 2 needed.
        above_refuted = below - np.log(index) - logs >= limit
    below_refuted[-1] = above_refuted[0] = False
    low = 0
    while low < count and below_refuted[low]:
        low += 1
    high = count - 1
    while high >= 0 and above_refuted[high]:
        high -= 1
    lower = None if low == 0 or low == count else float(ratios[low - 1])
    upper = None if high == count - 1 or high < 0 else float(ratios[high + 1])
    return lower, upper


def grid(rho0: float) -> np.ndarray:
    """Return the alternatives rho of the mixture (all above ``rho0``), equal weights."""
    import numpy as np

    return rho0 * TOP ** (np.arange(1, GRID + 1) / GRID)


def log_ratios(
    new_bad: np.ndarray,
    new_total: np.ndarray,
    old_bad: np.ndarray,
    old_total: np.ndarray,
    rho0: float,
    *,
    kappa: np.ndarray | float = 0.0,
    pods_new: np.ndarray | float = 0.0,
    pods_old: np.ndarray | float = 0.0,
    alternatives: np.ndarray | None = None,
    null: np.ndarray | float | None = None,
) -> np.ndarray:
    """Return one step's log likelihood ratio per grid point, shape ``(*counts, GRID)``.

    The counts broadcast (the benchmark passes whole arrays of rollouts). A step with no
    events on a side, or no bad events at all, carries no evidence: 0. ``kappa`` and the
    effective pods per side (0: unknown) temper the step for over-dispersion.
    ``alternatives`` replaces the grid (the last axis) by other ratios rho; ``null`` (one per
    rollout) replaces ``rho0`` as the ratio they are tested against.
    """
    import numpy as np

    x = np.asarray(new_bad, dtype=float)[..., None]
    y = np.asarray(old_bad, dtype=float)[..., None]
    n = np.asarray(new_total, dtype=float)[..., None]
    m = np.asarray(old_total, dtype=float)[..., None]
    bad = x + y
    informative = (n > 0) & (m > 0) & (bad > 0)
    share = np.where(informative, n / np.where(informative, n + m, 1.0), 0.5)
    odds = share / (1 - share)
    rho = grid(rho0) if alternatives is None else np.asarray(alternatives, dtype=float)
    base = np.asarray(rho0 if null is None else null, dtype=float)[..., None]
    # log(pi / pi0) and log((1 - pi) / (1 - pi0)) with pi = rho*odds / (1 + rho*odds).
    log_up = np.log(rho / base) - np.log1p(rho * odds) + np.log1p(base * odds)
    log_down = np.log1p(base * odds) - np.log1p(rho * odds)
    logs = x * log_up + y * log_down
    pi0 = base * odds / (1 + base * odds)
    phi = 1.0 + DISPERSION_SAFETY * _overdispersion(
        np.asarray(kappa, dtype=float)[..., None],
        bad,
        pi0,
        np.asarray(pods_new, dtype=float)[..., None],
        np.asarray(pods_old, dtype=float)[..., None],
    )
    return np.where(informative, logs / phi, 0.0)


def _overdispersion(
    kappa: np.ndarray, bad: np.ndarray, pi0: np.ndarray, pods_new: np.ndarray, pods_old: np.ndarray
) -> np.ndarray:
    import numpy as np

    known = (pods_new > 0) & (pods_old > 0)
    inverse = np.where(
        known, 1 / np.where(known, pods_new, 1) + 1 / np.where(known, pods_old, 1), 0
    )
    return kappa * np.maximum(bad - 1, 0) * pi0 * (1 - pi0) * inverse


def evidence_of(logs: np.ndarray) -> np.ndarray:
    """Return the mixture evidence of cumulated log ratios (last axis: the grid)."""
    import numpy as np
    from scipy.special import logsumexp

    return np.exp(np.minimum(logsumexp(logs, axis=-1) - math.log(logs.shape[-1]), 700.0))


def dispersion_terms(bad: np.ndarray, total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the old pods' chi-square excess and its weight (last axis: the pods).

    With b_i ~ Poisson(n_i p G_i), Var G = kappa: E[sum (b_i - n_i p)^2 / (n_i p (1 - p))]
    = (P - 1) + kappa p (N - sum n_i^2 / N) / (1 - p), so kappa is estimated by the ratio of
    the summed excesses to the summed weights over the steps.
    """
    import numpy as np

    b = np.asarray(bad, dtype=float)
    n = np.asarray(total, dtype=float)
    live = n > 0
    pods = live.sum(axis=-1)
    big_n = np.where(live, n, 0).sum(axis=-1)
    p = np.where(big_n > 0, np.where(live, b, 0).sum(axis=-1) / np.where(big_n > 0, big_n, 1), 0)
    usable = (pods >= 2) & (p > 0) & (p < 1)
    safe_p = np.where(usable, p, 0.5)[..., None]
    expected = n * safe_p
    terms = np.where(live, (b - expected) ** 2 / np.where(live, expected * (1 - safe_p), 1), 0)
    chi2 = terms.sum(axis=-1)
    squares = np.where(live, n * n, 0).sum(axis=-1)
    excess = np.where(usable, chi2 - (pods - 1), 0.0)
    w = np.where(usable, p * (big_n - squares / np.where(big_n > 0, big_n, 1)) / (1 - p), 0.0)
    return excess, w


def effective_pods(total: np.ndarray) -> np.ndarray:
    """Return (sum n_i)^2 / sum n_i^2 over the last axis: the pods, weighted by traffic."""
    import numpy as np

    n = np.asarray(total, dtype=float)
    squares = (n * n).sum(axis=-1)
    return np.where(squares > 0, n.sum(axis=-1) ** 2 / np.where(squares > 0, squares, 1), 0.0)


@dataclass(frozen=True)
class Outcome:
    """``judge_sequential``'s answer: the verdict and its one sentence."""

    verdict: Verdict
    message: str
    # Set when there is nothing to judge (Inconclusive, reason NoComparison): says why.
    missing: str = ""


def judge_sequential(
    settings: Settings,
    state: State | None,
    *,
    rollout: bool,
    old_side: bool,
    kind: str = DEPLOYMENT,
) -> Outcome:
    """Return the verdict of a sequential metric whose evidence is ``state``.

    ``rollout``: a rollout is in progress; ``old_side``: pods of an older ReplicaSet or
    controller revision run; ``kind``, the target's, words a missing side.
    """
    if not rollout or state is None:
        why = "no comparison: no rollout in progress, so no new pods to judge"
        return Outcome(Verdict.INCONCLUSIVE, why, why)
    needed = settings.needed
    evidence = state.evidence
    figures = sentence(settings, state)
    limit = f"{settings.max_increase * 100:g} %"
    if reached(evidence, needed):
        return Outcome(Verdict.FAIL, f"{figures}: worse than maxIncrease {limit} allows")
    if state.reached_at is not None:
        # Reached before and dipped since (the old pods' spread is estimated anew each step):
        # the test concluded then, and a Fail does not turn back into a Pass.
        return Outcome(
            Verdict.FAIL,
            f"{figures}: it reached {needed:g} at {_clock(state.reached_at)}, worse than "
            f"maxIncrease {limit} allows",
        )
    if not old_side:
        why = no_old_side(kind)
        return Outcome(Verdict.INCONCLUSIVE, why, why)
    if state.new_total < settings.min_events:
        why = (
            f"no comparison yet: {_count_text(state.new_total)} {settings.events_name} on the "
            f"new pods since {_clock(state.since)}, under minEvents {settings.min_events}"
        )
        return Outcome(Verdict.INCONCLUSIVE, why, why)
    return Outcome(Verdict.PASS, f"{figures}: no evidence of harm so far")


def reached(evidence: np.ndarray | float, needed: float) -> np.ndarray | bool:
    """Return whether ``evidence`` reached ``needed`` (floating error in the last digits aside)."""
    return evidence >= needed * (1 - 1e-9)


def sentence(settings: Settings, state: State) -> str:
    """Return the sentence of the figures, e.g. for the metric card."""
    counts = (
        f"{_count_text(state.new_bad)} of {_count_text(state.new_total)} vs "
        f"{_count_text(state.old_bad)} of {_count_text(state.old_total)} "
        f"{settings.events_name} since {_clock(state.since)}"
    )
    ratio = state.ratio
    if ratio is not None:
        times = f"{ratio:.2g}" if ratio < 10 else f"{ratio:,.0f}"
        head = f"new pods' {settings.rate_name} is {times} \u00d7 the old pods' ({counts})"
    else:
        head = f"new pods' {settings.rate_name} against the old pods' ({counts})"
    bounds = _bounds_text(state.bounds(settings.needed))
    if bounds:
        head = f"{head}, {bounds} so far"
    evidence = f"evidence {_evidence_text(state.evidence)} of {settings.needed:g} needed"
    guarantee, reason = state.guarantee
    if guarantee == CONDITIONAL:
        evidence = f"{evidence} (false-pause bound conditional: {reason})"
    return f"{head}; {evidence}"


def _bounds_text(bounds: tuple[float | None, float | None]) -> str:
    low, high = bounds
    if low is not None and high is not None:
        return f"{_times(low)}\u2013{_times(high)} \u00d7"
    if low is not None:
        return f"at least {_times(low)} \u00d7"
    if high is not None:
        return f"at most {_times(high)} \u00d7"
    return ""


def _times(value: float) -> str:
    return f"{value:.2g}" if value < 10 else f"{value:,.0f}"


def _clip(bad: float, total: float) -> float:
    # increase() never goes below 0 and a side cannot have more bad events than events.
    return min(max(bad, 0.0), max(total, 0.0))


def _floor(value: float) -> float:
    # Rounded to the status's decimals, never up: a lower evidence keeps the guarantee.
    rounded = float(f"{value:.{_DECIMALS}f}")
    return rounded if rounded <= value else float(f"{rounded - 10**-_DECIMALS:.{_DECIMALS}f}")


def _count_text(value: float) -> str:
    return f"{round(value):,}"


def _evidence_text(value: float) -> str:
    # The evidence of a clearly bad side grows geometrically with every step; written out in
    # full it ran to hundreds of digits in the status message and the notification.
    if value < 10:
        return f"{value:.2g}"
    return f"{value:,.0f}" if value < 1e6 else f"{value:.3g}"


def _clock(instant: str) -> str:
    try:
        return datetime.fromisoformat(instant.replace("Z", "+00:00")).strftime("%H:%M")
    except ValueError:
        return instant
