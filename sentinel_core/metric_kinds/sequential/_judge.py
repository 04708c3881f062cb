"""Judge a sequential metric: continue its evidence with the steps read, then the verdict.

The decision core calls the kind's ``judge`` once per metric that got an answer. The evidence
continues from the state in the previous status (``_read.basis_of``: a new rollout, a spec edit
or a resume starts afresh); only steps after the state's ``through`` count, so a step is never
counted twice. Once the evidence has reached what is needed, the state keeps when
(``reachedAt``) and the metric stays Fail for that state's key. Pure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sentinel_core.conditions import Reason, Verdict
from sentinel_core.kinds import no_new_side
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds._kind import Context, Judgement, inconclusive
from sentinel_core.metric_kinds.sequential._evidence import (
    Settings,
    advance,
    counted,
    judge_sequential,
    reached,
)
from sentinel_core.metric_kinds.sequential._read import Reading, basis_of
from sentinel_core.values import format_value, parse_time


def settings_of(metric: Any, spec: Any) -> Settings:
    """Return what ``metric`` (a sequential one of the analysis ``spec``) is judged with."""
    sequential = metric.sequential
    if sequential.histogram is not None:
        rate = f"share of requests slower than {sequential.slower_than:g}"
    else:
        rate = "error rate"
    return Settings(
        max_increase=sequential.max_increase,
        metrics=spec.sequential_metrics,
        false_pause_rate=spec.budget,
        min_events=sequential.min_events,
        rate_name=rate,
        events_name="requests",
    )


def judge(metric: Any, m: Measurement, base: Any, context: Context) -> Judgement:
    """Continue the metric's evidence with the steps read and judge it."""
    situation = context.situation
    if situation is None:
        # An attempt cut short (decision.interrupted): the evidence is the status's.
        why = "not judged: the attempt ended before the evidence was continued"
        return inconclusive(base, Reason.NO_COMPARISON, why)
    settings = settings_of(metric, situation.spec)
    basis = basis_of(
        situation.status,
        metric.name,
        generation=situation.generation,
        rollout=context.rollout,
        now=situation.now,
        resumed_now=situation.resumed_now,
    )
    reading = m.reading if isinstance(m.reading, Reading) else None
    base = replace(base, limit=settings.needed)
    if reading is None or reading.new_hash is None:
        why = no_new_side(context.target_kind)
        return inconclusive(replace(base, sequential=basis.previous), Reason.NO_COMPARISON, why)
    before = basis.state(reading.new_hash)
    # Only steps after the state's end count: a step is never counted twice.
    through = parse_time(before.through)
    steps = [
        step
        for step in reading.steps
        if through is None or (parse_time(step.end) or through) > through
    ]
    state = replace(advance(before, steps, settings), needed=settings.needed)
    if state.reached_at is None and reached(state.evidence, settings.needed):
        # Judged per evaluation, as the false-pause bound is calibrated (docs/analysis.md).
        state = replace(state, reached_at=state.through)
    outcome = judge_sequential(
        settings, state, rollout=True, old_side=bool(reading.old_hashes), kind=context.target_kind
    )
    judged = replace(
        base,
        value=format_value(float(f"{state.evidence:.6g}")),
        sequential=state,
        counted=counted(before, state) if steps else None,
    )
    if outcome.missing:
        return inconclusive(judged, Reason.NO_COMPARISON, outcome.missing)
    failed = outcome.verdict == Verdict.FAIL
    return Judgement(
        replace(judged, verdict=outcome.verdict, message=outcome.message),
        why=f"{metric.name}: {outcome.message}" if failed else "",
    )
