"""What a soak run does, drawn from its seed: the analyses' scripted truths and the fault schedule.

``bench.soak`` calls ``draw_plan(seed, ...)`` once; everything random in a run comes from here,
so the same seed, minutes and analyses give the same plan (``docs/reliability.md``, replaying).
Pure: no I/O, no clock. The times are seconds from the moment the analyses exist (``t = 0``).

A *truth* says what the metrics app serves for one analysis at every instant: a value below its
``maxValue`` (healthy), above it (failing), or nothing (no data: the series absent, or NaN).
A *fault* is one thing the run breaks, on one of three lanes that run concurrently: the
Prometheus lane (the fault proxy and the Prometheus process), the cluster lane (API server,
operator replicas, workers, database, kubectl edits and deletes) and the notification receiver
lane (refusing, answering 500, hanging), each lane one fault at a time.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from enum import StrEnum

# Every analysis has one metric with this threshold; truths serve values well clear of it.
MAX_VALUE = 0.5
HEALTHY = 0.1
FAILING = 0.9
# The minSamples guard of LOW_TRAFFIC analyses: its minimum, and what is served under and over it.
SAMPLES_MIN = 100.0
SAMPLES_LOW = 20.0
SAMPLES_ENOUGH = 500.0

# Notifications (docs/reliability.md): the one channel (default: true, a JSON webhook), and
# settings short enough for a soak: Prometheus faults of seconds become outages that send
# MetricsUnavailable and Recovered; a receiver down for a fault's length exhausts the tries.
NOTIFY_CHANNEL = "soak-hook"
NOTIFY_OUTAGE_AFTER = 8.0
NOTIFY_ATTEMPTS = 4
NOTIFY_RETRY_AFTER = 1.0
NOTIFY_RETRY_MAX = 4.0
NOTIFY_TIMEOUT = 5.0
# A hanging receiver holds each request this long: past the timeout, so never an answer.
RECEIVER_HANG_SECONDS = 8.0


def samples_case(name: str) -> str:
    """Return the metrics app's case of an analysis' minSamples guard series."""
    return f"{name}-samples"


class TruthKind(StrEnum):
    HEALTHY = "healthy"
    # Healthy until ``regress_at``, failing from then on.
    REGRESSING = "regressing"
    # The same with dryRun: true, which must never pause.
    REGRESSING_DRY_RUN = "regressing-dryrun"
    # Failing for ``on`` seconds, healthy for ``off`` seconds, from ``phase``.
    FLAPPING = "flapping"
    # No data (series absent, then NaN) except short healthy spells.
    NO_DATA = "nodata"
    # Too little traffic: the value always fails, but the minSamples guard (min SAMPLES_MIN)
    # serves enough samples only for ``on`` seconds out of every ``on + off`` (from ``phase``).
    LOW_TRAFFIC = "lowtraffic"
    # Flapping about every interval, judged with failureWindow (``window``): a pause needs
    # failureLimit failing evaluations among the last ``window`` decisive ones.
    FLAPPING_WINDOW = "flapping-window"


# Served value at an instant: a number, NaN, or None (the series is absent).
Served = float | None


@dataclass(frozen=True)
class Truth:
    """The scripted value of one analysis' metric over time."""

    kind: TruthKind
    regress_at: float = math.inf
    on: float = 0.0
    off: float = 0.0
    phase: float = 0.0
    # FLAPPING_WINDOW: the analysis' spec.failureWindow.
    window: int = 0

    @property
    def guarded(self) -> bool:
        """Whether the analysis has a minSamples guard (its samples series is served)."""
        return self.kind == TruthKind.LOW_TRAFFIC

    def samples_at(self, t: float) -> Served:
        """Return the guard's sample count served at ``t`` (None: no guard)."""
        if not self.guarded:
            return None
        position = (t + self.phase) % (self.on + self.off)
        return SAMPLES_ENOUGH if position < self.on else SAMPLES_LOW

    def value_at(self, t: float) -> Served:
        """Return what the metrics app serves at ``t`` seconds into the run."""
        if self.kind in (TruthKind.REGRESSING, TruthKind.REGRESSING_DRY_RUN):
            return FAILING if t >= self.regress_at else HEALTHY
        if self.kind == TruthKind.LOW_TRAFFIC:
            return FAILING
        if self.kind in (TruthKind.FLAPPING, TruthKind.FLAPPING_WINDOW):
            position = (t + self.phase) % (self.on + self.off)
            return FAILING if position < self.on else HEALTHY
        if self.kind == TruthKind.NO_DATA:
            position = (t + self.phase) % 60.0
            if position < 20.0:
                return None
            if position < 40.0:
                return math.nan
            return HEALTHY if position < 45.0 else None
        return HEALTHY


@dataclass(frozen=True)
class AnalysisPlan:
    name: str
    truth: Truth
    interval: int
    failure_limit: int

    @property
    def dry_run(self) -> bool:
        return self.truth.kind == TruthKind.REGRESSING_DRY_RUN


class FaultKind(StrEnum):
    # Prometheus lane.
    PROMETHEUS_502 = "prometheus-502"
    PROMETHEUS_HTML = "prometheus-html"
    PROMETHEUS_SLOW = "prometheus-slow"
    PROMETHEUS_STOPPED = "prometheus-stopped"
    # Cluster lane.
    API_SERVER_RESTART = "apiserver-restart"
    LEADER_SIGKILL = "leader-sigkill"
    LEADER_SIGTERM = "leader-sigterm"
    WORKER_KILL = "worker-kill"
    DATABASE_RESTART = "database-restart"
    EDIT_ANALYSIS = "kubectl-edit-analysis"
    DELETE_ANALYSIS = "kubectl-delete-analysis"
    DELETE_TARGET = "kubectl-delete-target"
    # Notification receiver lane: the JSON webhook every analysis notifies is down.
    RECEIVER_REFUSED = "receiver-refused"
    RECEIVER_500 = "receiver-500"
    RECEIVER_HANG = "receiver-hang"
    # Person lane: a person resumes a paused rollout, as a user would (docs/status.md).
    RESUME_API = "resume-api"
    RESUME_KUBECTL = "resume-kubectl"


PROMETHEUS_LANE = (
    FaultKind.PROMETHEUS_502,
    FaultKind.PROMETHEUS_HTML,
    FaultKind.PROMETHEUS_SLOW,
    FaultKind.PROMETHEUS_STOPPED,
)
# The notification receiver: refusing connections, answering 500, holding requests.
RECEIVER_LANE = (FaultKind.RECEIVER_REFUSED, FaultKind.RECEIVER_500, FaultKind.RECEIVER_HANG)
# A person resuming a paused Deployment: the REST API's resume action, or kubectl rollout resume.
PERSON_LANE = (FaultKind.RESUME_API, FaultKind.RESUME_KUBECTL)
# Weights of the cluster lane: kubectl changes are the most common in production.
CLUSTER_LANE = {
    FaultKind.API_SERVER_RESTART: 2,
    FaultKind.LEADER_SIGKILL: 2,
    FaultKind.LEADER_SIGTERM: 1,
    FaultKind.WORKER_KILL: 2,
    FaultKind.DATABASE_RESTART: 1,
    FaultKind.EDIT_ANALYSIS: 3,
    FaultKind.DELETE_ANALYSIS: 1,
    FaultKind.DELETE_TARGET: 2,
}


@dataclass(frozen=True)
class FaultPlan:
    """One fault: when it starts (s into the run), how long it lasts, on what."""

    kind: FaultKind
    at: float
    duration: float
    # The analysis (or its target) a kubectl fault acts on.
    analysis: str = ""
    # Start just before the analysis' next due time instead of at ``at`` (kubectl edits and
    # leader kills): the timing near an interval boundary.
    near_boundary: bool = False


@dataclass(frozen=True)
class Plan:
    seed: int
    analyses: list[AnalysisPlan]
    faults: list[FaultPlan] = field(default_factory=list)
    # Faults are drawn in [faults_from, faults_until); after it the run settles.
    faults_from: float = 0.0
    faults_until: float = 0.0


@dataclass(frozen=True)
class Pace:
    """How long faults last and how far apart they are on a lane (seconds, uniform ranges)."""

    prometheus_duration: tuple[float, float] = (5.0, 25.0)
    prometheus_gap: tuple[float, float] = (10.0, 30.0)
    cluster_duration: tuple[float, float] = (3.0, 15.0)
    cluster_gap: tuple[float, float] = (10.0, 25.0)
    receiver_duration: tuple[float, float] = (10.0, 40.0)
    receiver_gap: tuple[float, float] = (20.0, 60.0)
    # A resume is instant; the first waits until something had time to pause.
    person_first: float = 60.0
    person_gap: tuple[float, float] = (20.0, 60.0)


NORMAL = Pace()
# Short runs (the 3-minute test): shorter faults closer together, so more kinds fit.
COMPACT = Pace(
    (4.0, 12.0), (3.0, 8.0), (2.0, 8.0), (3.0, 8.0), (6.0, 15.0), (5.0, 15.0), 40.0, (12.0, 25.0)
)


def draw_plan(
    seed: int,
    *,
    analyses: int,
    seconds: float,
    settle: float,
    intervals: tuple[int, ...],
    warmup: float = 20.0,
    pace: Pace = NORMAL,
) -> Plan:
    """Return the plan of a run of ``seconds`` with ``analyses`` analyses, from ``seed``."""
    rng = random.Random(seed)
    faults_until = max(warmup + 10.0, seconds - settle)
    kinds = [
        TruthKind.HEALTHY,
        TruthKind.REGRESSING,
        TruthKind.FLAPPING,
        TruthKind.NO_DATA,
        TruthKind.REGRESSING_DRY_RUN,
        TruthKind.LOW_TRAFFIC,
        TruthKind.FLAPPING_WINDOW,
    ]
    weights = [3, 3, 2, 1, 1, 1, 1]
    plans = []
    for index in range(analyses):
        # The first seven cover every kind, whatever the count.
        kind = kinds[index] if index < len(kinds) else rng.choices(kinds, weights)[0]
        interval = rng.choice(intervals)
        limit = rng.choice((1, 2, 3))
        # A regression must have time to pause before the end: (limit + 1) intervals and the
        # scrape lag; late ones fall in the quiet settle, early ones among the faults.
        latest = max(warmup + 1, seconds - (limit + 1) * interval - 30)
        truth = _truth(rng, kind, interval, limit, warmup, latest)
        plans.append(AnalysisPlan(f"s{index:04d}", truth, interval, limit))
    names = [plan.name for plan in plans]
    faults = _prometheus_lane(rng, warmup, faults_until, pace) + _cluster_lane(
        rng, warmup, faults_until, names, pace
    )
    # Drawn last, so the other lanes are what they were before the receiver lane existed.
    faults += _receiver_lane(rng, warmup, faults_until, pace)
    faults += _person_lane(rng, warmup, faults_until, pace)
    return Plan(seed, plans, sorted(faults, key=lambda f: f.at), warmup, faults_until)


def _truth(
    rng: random.Random,
    kind: TruthKind,
    interval: int,
    limit: int,
    warmup: float,
    until: float,
) -> Truth:
    if kind in (TruthKind.REGRESSING, TruthKind.REGRESSING_DRY_RUN):
        return Truth(kind, regress_at=round(rng.uniform(warmup, until), 1))
    if kind == TruthKind.FLAPPING:
        on = interval * rng.uniform(0.5, limit + 0.5)
        off = interval * rng.uniform(0.5, 2.0)
        return Truth(kind, on=round(on, 1), off=round(off, 1), phase=round(rng.uniform(0, 60), 1))
    if kind == TruthKind.NO_DATA:
        return Truth(kind, phase=round(rng.uniform(0, 60), 1))
    if kind == TruthKind.LOW_TRAFFIC:
        # Enough samples for about one evaluation now and then, too few most of the time.
        on = interval * rng.uniform(1.0, limit + 1.0)
        off = interval * rng.uniform(2.0, 6.0)
        return Truth(kind, on=round(on, 1), off=round(off, 1), phase=round(rng.uniform(0, 60), 1))
    if kind == TruthKind.FLAPPING_WINDOW:
        # About one failing and one passing evaluation in turn: consecutive counting would
        # rarely reach the limit; a window of limit + 2 does.
        on = interval * rng.uniform(0.8, 1.5)
        off = interval * rng.uniform(0.8, 1.5)
        phase = round(rng.uniform(0, 60), 1)
        return Truth(kind, on=round(on, 1), off=round(off, 1), phase=phase, window=limit + 2)
    return Truth(kind)


def _prometheus_lane(rng: random.Random, start: float, until: float, pace: Pace) -> list[FaultPlan]:
    faults, t = [], start + rng.uniform(0, 10)
    # Every kind once, in a random order, before any repeats: a short run covers the most.
    first = rng.sample(PROMETHEUS_LANE, len(PROMETHEUS_LANE))
    while True:
        kind = first.pop() if first else rng.choice(PROMETHEUS_LANE)
        duration = round(rng.uniform(*pace.prometheus_duration), 1)
        if t + duration > until:
            return faults
        faults.append(FaultPlan(kind, round(t, 1), duration))
        t += duration + rng.uniform(*pace.prometheus_gap)


def _receiver_lane(rng: random.Random, start: float, until: float, pace: Pace) -> list[FaultPlan]:
    faults, t = [], start + rng.uniform(0, 10)
    first = rng.sample(RECEIVER_LANE, len(RECEIVER_LANE))
    while True:
        kind = first.pop() if first else rng.choice(RECEIVER_LANE)
        duration = round(rng.uniform(*pace.receiver_duration), 1)
        if t + duration > until:
            return faults
        faults.append(FaultPlan(kind, round(t, 1), duration))
        t += duration + rng.uniform(*pace.receiver_gap)


def _person_lane(rng: random.Random, start: float, until: float, pace: Pace) -> list[FaultPlan]:
    # Drawn after every other lane, so a seed's other faults are what they were before it.
    # Which paused analysis is resumed is decided when the time comes (what is paused then).
    faults, t = [], start + pace.person_first + rng.uniform(0, 10)
    first = rng.sample(PERSON_LANE, len(PERSON_LANE))
    while t < until:
        kind = first.pop() if first else rng.choice(PERSON_LANE)
        faults.append(FaultPlan(kind, round(t, 1), 0.0))
        t += rng.uniform(*pace.person_gap)
    return faults


def _cluster_lane(
    rng: random.Random, start: float, until: float, names: list[str], pace: Pace
) -> list[FaultPlan]:
    kinds, weights = list(CLUSTER_LANE), list(CLUSTER_LANE.values())
    faults, t = [], start + rng.uniform(0, 10)
    first = rng.sample(kinds, len(kinds))
    while True:
        kind = first.pop() if first else rng.choices(kinds, weights)[0]
        duration = round(rng.uniform(*pace.cluster_duration), 1)
        if t + duration > until:
            return faults
        near = kind in (FaultKind.EDIT_ANALYSIS, FaultKind.LEADER_SIGKILL) and rng.random() < 0.5
        target = rng.choice(names) if kind.value.startswith("kubectl") or near else ""
        faults.append(FaultPlan(kind, round(t, 1), duration, target, near))
        # Cluster faults take time to carry out (an API server restart is ~10-60 s).
        t += duration + rng.uniform(*pace.cluster_gap)
