"""Backtest: replay an analysis over its target's past rollouts, writing nothing anywhere.

Called by ``manage.py backtest`` and by the backtest task (docs/backtest.md). ``Backtest.run``
reads the analysis (or takes a draft spec) and its target once, reads the target's past
revisions (``sentinel_cluster.past_revisions``), and for each rollout
(``sentinel_core.backtest.past_rollouts``) replays the evaluations the operator would have made:
at each instant (``sentinel_core.backtest.instants``) every metric is measured through the same
``measuring.measure_from`` as the reconciler's, its "now" queries sent at that instant
(Prometheus's ``time``) and its ranges ending there, then judged by the same
``sentinel_core.decision.decide`` from an empty status whose rollout began at the revision's
creation. The target is seen as it stood, unpaused until the replay's own pause and paused by
this analysis after it, so the count continues as it would have live. Nothing is written to the
cluster, the status or the database; nothing is paused or notified.

Queries are bounded (``max_queries`` per backtest) and rate-limited per provider
(``queries_per_second``) so a backtest cannot starve live evaluations sharing the provider.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sentinel_cluster import kube, past_revisions
from sentinel_cluster.replicasets import MAX_OLD_HASHES
from sentinel_core.backtest import (
    DEFAULT_MAX_DURATION_SECONDS,
    DEFAULT_ROLLOUTS,
    MAX_ROLLOUTS,
    PastRollout,
    RolloutReplay,
    Step,
    Verdicts,
    exit_code,
    instants,
    old_side_query,
    past_rollouts,
    summarize,
)
from sentinel_core.conditions import ConditionType, Outcome, Verdict
from sentinel_core.decision import Observation, decide
from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_core.metric_kinds import Ask, Instant, Situation, kind_of
from sentinel_core.resource import AnalysisResource
from sentinel_core.spec import AnalysisSpec, InvalidSpecError, parse_spec
from sentinel_core.status import AnalysisStatus, Rollout
from sentinel_core.workload_kinds import TargetState
from sentinel_operator import templating
from sentinel_operator.measuring import measure_from
from sentinel_operator.providers import Providers
from sentinel_operator.range_query import measure_range

# The backtest's share of a provider: at most this many queries a second (docs/backtest.md).
DEFAULT_QUERIES_PER_SECOND = 20.0
# At most this many queries per backtest: 50 rollouts of an hour at 30 s with a few metrics.
DEFAULT_MAX_QUERIES = 20_000


class BacktestError(Exception):
    """A backtest that cannot run: one line for the caller (unknown analysis, no cluster, …)."""


class Cancelled(BacktestError):
    """The backtest was cancelled between two evaluations."""


@dataclass(frozen=True)
class Result:
    """A finished backtest: one replay per rollout (oldest first) and the summary."""

    namespace: str
    name: str
    replays: tuple[RolloutReplay, ...]
    summary: dict[str, Any]
    queries: int

    @property
    def exit_code(self) -> int:
        return exit_code(self.replays)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": f"{self.namespace}/{self.name}",
            "rollouts": [r.to_dict() for r in self.replays],
            "summary": {**self.summary, "queries": self.queries},
        }


class Pace:
    """When each provider may next be asked by a backtest (thread-safe)."""

    def __init__(self) -> None:
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def take(self, provider: str, now: float, gap: float) -> float:
        """Return when the caller may send its query to ``provider``; book the next slot."""
        with self._lock:
            due = max(self._next.get(provider, now), now)
            self._next[provider] = due + gap
            return due


# Shared by every backtest of the process, so two running at once keep to one rate together.
SHARED_PACE = Pace()


class _Limiter:
    """Count a backtest's queries against its bound; space each provider's ``1/rate`` s apart."""

    def __init__(
        self,
        rate: float,
        max_queries: int,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        pace: Pace,
    ) -> None:
        self._gap = 1.0 / rate if rate > 0 else 0.0
        self._max = max_queries
        self._clock, self._sleep, self._pace = clock, sleep, pace
        self.sent = 0

    def before(self, provider: str) -> Callable[[Ask], None]:
        def wait(_ask: Ask) -> None:
            if self.sent >= self._max:
                raise BacktestError(
                    f"the backtest reached its bound of {self._max} queries; ask for fewer "
                    "rollouts or a shorter maximum duration"
                )
            now = self._clock()
            due = self._pace.take(provider, now, self._gap)
            if due > now:
                self._sleep(due - now)
            self.sent += 1

        return wait


class Replayer:
    """Replay a spec over given rollout periods at the configured metric providers."""

    def __init__(
        self,
        providers: Providers,
        *,
        queries_per_second: float = DEFAULT_QUERIES_PER_SECOND,
        max_queries: int = DEFAULT_MAX_QUERIES,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        pace: Pace = SHARED_PACE,
    ) -> None:
        self.providers = providers
        self._rate = queries_per_second
        self._max_queries = max_queries
        self._clock, self._sleep, self._pace = clock, sleep, pace

    def replay(
        self,
        namespace: str,
        name: str,
        spec: AnalysisSpec,
        periods: tuple[PastRollout, ...],
        *,
        generation: int = 1,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Result:
        """Return what ``spec`` would have done during each of ``periods`` (``run``'s core)."""
        limiter = _Limiter(
            self._rate, self._max_queries, clock=self._clock, sleep=self._sleep, pace=self._pace
        )
        self.providers.refresh()
        total = sum(len(instants(p, spec.interval_seconds)) for p in periods)
        done = [0]

        def step() -> None:
            if cancelled is not None and cancelled():
                raise Cancelled("the backtest was cancelled")
            if progress is not None:
                progress(done[0], total)
            done[0] += 1

        replays = tuple(
            _Replay(
                namespace,
                name,
                spec,
                generation,
                period,
                self.providers,
                limiter,
                first=index == 0,
            ).run(step)
            for index, period in enumerate(periods)
        )
        if progress is not None:
            progress(total, total)
        return Result(namespace, name, replays, summarize(replays), limiter.sent)


class Backtest:
    """Replay analyses, read with their targets' revisions from one API server."""

    def __init__(
        self,
        client: kube.KubeClient,
        replayer: Replayer,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.replayer = replayer
        self._now = now

    def run(
        self,
        namespace: str,
        name: str,
        *,
        spec: Mapping[str, Any] | None = None,
        rollouts: int = DEFAULT_ROLLOUTS,
        max_duration: float = DEFAULT_MAX_DURATION_SECONDS,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Result:
        """Return what ``namespace/name`` (or the draft ``spec`` for it) would have done.

        ``progress(done, total)`` is told after each evaluation; ``cancelled()`` is asked
        before each one and ends the backtest with ``Cancelled``. Raise ``BacktestError`` with
        one line when it cannot run.
        """
        if not 1 <= rollouts <= MAX_ROLLOUTS:
            raise BacktestError(f"rollouts must be between 1 and {MAX_ROLLOUTS}, got {rollouts}")
        if max_duration <= 0:
            raise BacktestError("the maximum duration must be positive")
        parsed, generation = self._spec(namespace, name, spec)
        # The question is what the guard would have done armed: dryRun never pauses.
        parsed = replace(parsed, dry_run=False)
        workload = self._workload(namespace, parsed)
        kind = parsed.target.kind
        try:
            revisions = past_revisions.read(self.client, kind, workload)
        except kube.KubeError as exc:
            raise BacktestError(f"cannot read the revisions of {_target(parsed)}: {exc}") from exc
        periods = past_rollouts(
            revisions, now=self._now(), max_duration=max_duration, limit=rollouts
        )
        return self.replayer.replay(
            namespace,
            name,
            parsed,
            periods,
            generation=generation,
            progress=progress,
            cancelled=cancelled,
        )

    def _spec(
        self, namespace: str, name: str, draft: Mapping[str, Any] | None
    ) -> tuple[AnalysisSpec, int]:
        try:
            raw = self.client.request("GET", kube.analysis_path(namespace, name))
        except kube.NotFound:
            if draft is None:
                raise BacktestError(f"analysis {namespace}/{name} not found") from None
            raw = None
        except kube.KubeError as exc:
            raise BacktestError(f"cannot read analysis {namespace}/{name}: {exc}") from exc
        generation = 1
        if raw is not None:
            generation = AnalysisResource.read(raw).generation
            if draft is None:
                resource = AnalysisResource.read(self._resolved(namespace, raw))
                if resource.valid_spec is None:
                    raise BacktestError(
                        f"analysis {namespace}/{name} has an invalid spec: {resource.spec}"
                    )
                return resource.valid_spec, generation
        # A draft's templates are resolved as a saved analysis's (docs/templates.md).
        obj = {"metadata": {"namespace": namespace, "name": name}, "spec": draft}
        try:
            return parse_spec(self._resolved(namespace, obj)["spec"], strict=True), generation
        except InvalidSpecError as exc:
            raise BacktestError(f"the draft spec is invalid: {exc}") from None

    def _resolved(self, namespace: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """Return ``obj`` with the templates it names resolved, as the operator resolves them."""
        try:
            resolution = templating.resolve_object(self.client, obj)
        except kube.KubeError as exc:
            raise BacktestError(f"cannot read the templates in {namespace}: {exc}") from exc
        if resolution.error is not None:
            raise BacktestError(f"the templates cannot be resolved: {resolution.error.message}")
        return resolution.obj

    def _workload(self, namespace: str, spec: AnalysisSpec) -> Mapping[str, Any]:
        try:
            return self.client.request(
                "GET", kube.workload_path(spec.target.kind, namespace, spec.target.name)
            )
        except kube.NotFound:
            raise BacktestError(f"{_target(spec)} not found in {namespace}") from None
        except kube.KubeError as exc:
            raise BacktestError(f"cannot read {_target(spec)}: {exc}") from exc


class _Replay:
    """One rollout's evaluations, in order, from an empty status."""

    def __init__(
        self,
        namespace: str,
        name: str,
        spec: AnalysisSpec,
        generation: int,
        period: PastRollout,
        providers: Providers,
        limiter: _Limiter,
        *,
        first: bool,
    ) -> None:
        self.first = first
        self.namespace, self.name, self.spec = namespace, name, spec
        self.generation, self.period = generation, period
        self.providers, self.limiter = providers, limiter

    def run(self, step: Callable[[], None]) -> RolloutReplay:
        period, spec = self.period, self.spec
        rollout = Rollout(template_hash=period.key, started_at=period.started_at)
        status = AnalysisStatus(rollout=rollout)
        verdicts = Verdicts()
        steps: list[Step] = []
        paused: tuple[datetime, int, str, str | None, str | None, float | None] | None = None
        answered = False
        key = f"{self.namespace}/{self.name}"
        for index, moment in enumerate(instants(period, spec.interval_seconds), start=1):
            step()
            situation = Situation(
                status=status,
                spec=spec,
                generation=self.generation,
                rollout=rollout,
                now=moment,
                target_kind=spec.target.kind,
                new_hash=period.key,
            )
            measurements = tuple(
                self._measure(metric, situation, moment) for metric in spec.metrics
            )
            if self.first and index == 1:
                _require_answers(measurements)
            # Data: a value, a series, or a verdict only data gives (a kind reading counts).
            answered = answered or any(m.value is not None or m.series > 0 for m in measurements)
            target = (
                TargetState(exists=True, paused=True, paused_by=(key,))
                if paused is not None
                else TargetState(exists=True)
            )
            decision = decide(
                Observation(
                    namespace=self.namespace,
                    name=self.name,
                    generation=self.generation,
                    spec=spec,
                    previous=status,
                    target=target,
                    measurements=measurements,
                    now=moment,
                    rollout=rollout,
                )
            )
            history = decision.history
            _count(verdicts, history.outcome)
            message = history.error_message
            if decision.pause is not None and paused is None:
                condition = decision.status.condition(ConditionType.ROLLOUT_PAUSED)
                failing = next(
                    (r for r in history.metric_results if r.verdict == Verdict.FAIL), None
                )
                message = condition.message if condition is not None else ""
                paused = (
                    moment,
                    index,
                    message,
                    failing.name if failing else None,
                    failing.value if failing else None,
                    failing.limit if failing else None,
                )
            steps.append(
                Step(
                    at=moment,
                    outcome=history.outcome.value,
                    metrics=tuple(_metric_row(r) for r in history.metric_results),
                    paused=decision.pause is not None,
                    message=message,
                )
            )
            # A transient attempt is retried live with backoff; a replay moves on to the next
            # instant with the status as it stood, the error counted.
            status = decision.status if not decision.transient else status
        decisive = verdicts.passed + verdicts.failed > 0
        no_data = bool(steps) and not answered and not decisive and verdicts.errors == 0
        if no_data or paused is None:
            return RolloutReplay(period, verdicts, tuple(steps), no_data=no_data)
        at, index, message, metric, value, limit = paused
        return RolloutReplay(
            period,
            verdicts,
            tuple(steps),
            would_pause_at=at,
            evaluation=index,
            metric=metric,
            value=value,
            limit=limit,
            message=message,
        )

    def _measure(self, metric: Any, situation: Situation, moment: datetime) -> Measurement:
        before = self.limiter.before(metric.provider or "default")
        if kind_of(metric).sides:
            old = self._old_side(metric, moment, before)
            if isinstance(old, Measurement):
                return old
            situation = replace(situation, old_hashes=old)
        facts = kind_of(metric).facts(metric, situation)
        return measure_from(self.providers, self.namespace, metric, facts, at=moment, before=before)

    def _old_side(
        self, metric: Any, moment: datetime, before: Callable[[Ask], None]
    ) -> tuple[str, ...] | Measurement:
        """Return the older revisions whose series ``metric``'s data holds at ``moment``.

        Live, the old side is the older revisions whose pods run then; where none is left
        (the rollout complete) the metric is Inconclusive with live's sentence, never judged
        against pods already gone (docs/backtest.md#which-instants-and-which-queries). A
        failed query is the metric's error, as live.
        """
        candidates = self.period.candidates
        asked = old_side_query(metric)
        if not candidates or asked is None:
            return candidates[:MAX_OLD_HASHES]
        query, by = asked
        picked = self.providers.pick(metric.provider, self.namespace)
        if isinstance(picked, Measurement):
            return replace(picked, metric=metric.name)
        before(Instant(query, at=moment))
        answer = measure_range(
            picked, metric.name, query, start=moment, end=moment, step=self.spec.interval_seconds
        )
        if answer.error is not None:
            return Measurement(
                metric=metric.name, error=answer.error, message=f"old pods query: {answer.message}"
            )
        seen = {labels.get(by) for labels, points in answer.timed if points}
        return tuple(key for key in candidates if key in seen)[:MAX_OLD_HASHES]


def _count(verdicts: Verdicts, outcome: Outcome) -> None:
    if outcome == Outcome.PASS:
        verdicts.passed += 1
    elif outcome == Outcome.FAIL:
        verdicts.failed += 1
    elif outcome == Outcome.INCONCLUSIVE:
        verdicts.inconclusive += 1
    else:
        verdicts.errors += 1


def _metric_row(result: Any) -> dict[str, Any]:
    return {
        "name": result.name,
        "verdict": str(result.verdict),
        "value": result.value,
        "limit": result.limit,
        "message": result.message,
    }


def _target(spec: AnalysisSpec) -> str:
    return f"{spec.target.kind} {spec.target.name}"


def _require_answers(measurements: tuple[Measurement, ...]) -> None:
    """Raise when no metric's provider answered the backtest's first evaluation at all."""
    down = [m for m in measurements if m.error == MeasurementError.UNAVAILABLE]
    if measurements and len(down) == len(measurements):
        raise BacktestError(f"Prometheus is unavailable: {down[0].message}")
