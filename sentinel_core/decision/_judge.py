"""Judge one metric's measurement: ask the metric's kind.

``_decide.decide`` (and ``_decide.interrupted``) call ``judge`` once per metric that got an answer;
the verdicts of all metrics then make the evaluation's verdict. Each kind judges its own reading
(``sentinel_core.metric_kinds``) from the result this module starts, the metric's name and
Inconclusive. Pure: the queries were asked by the reconciler, the rollout was detected by it.
"""

from __future__ import annotations

from sentinel_core.conditions import Verdict
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds import Context, Judgement, Situation, kind_of, series_labels
from sentinel_core.spec import MetricSpec
from sentinel_core.status import MetricResult, Rollout

__all__ = ["Judgement", "judge", "series_labels"]


def judge(
    metric: MetricSpec,
    m: Measurement,
    rollout: Rollout | None = None,
    *,
    situation: Situation | None = None,
    kind: str = DEPLOYMENT,
) -> Judgement:
    """Return the judgement of measurement ``m`` of ``metric`` (which got an answer).

    ``situation`` is the evaluation the metric is judged in (None for an attempt cut short: a
    kind that continues evidence from the status does not then); ``kind``, the target's, words a
    missing side for the kinds that weigh the new pods against the old.
    """
    base = MetricResult(name=metric.name, verdict=Verdict.INCONCLUSIVE)
    context = Context(rollout=rollout, target_kind=kind, situation=situation)
    return kind_of(metric).judge(metric, m, base, context)
