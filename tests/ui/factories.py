"""Mirror rows and history for the UI tests, written the way the watch and the reconciler do.

The admin only reads the mirror, so most UI tests build rows directly: ``analysis`` goes through
``analyses.mirror.upsert_from_resource`` with an object shaped as the API server returns it, and
``history`` writes ``Evaluation``/``MetricResult`` rows as the reconcile task records them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from analyses import mirror
from analyses.models import Analysis, Evaluation, MetricResult
from notifications.models import Delivery, DeliveryAttempt, State
from testkit.manifests import analysis_manifest, as_served

# The password of the users that tests log in with through the login form.
PASSWORD = "correct-horse-battery"
T0 = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
_uids = itertools.count(1)

LATENCY = {
    "name": "p99-latency",
    "query": (
        'histogram_quantile(0.99, rate(http_request_duration_seconds_bucket{app="checkout"}[5m]))'
    ),
    "maxValue": 0.25,
}
ERRORS = {
    "name": "error-rate",
    "query": 'sum(rate(http_errors_total{app="checkout"}[1m]))',
    "maxValue": 0.05,
}


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message or f"{kind} is {status} ({reason})",
        "lastTransitionTime": "2026-11-29T10:02:00Z",
        "observedGeneration": 1,
    }


def status(
    *,
    verdict: str = "Pass",
    failures: int = 0,
    paused: bool = False,
    ready_reason: str = "Evaluating",
    values: Sequence[tuple[str, str, float, str]] = (),
) -> dict[str, Any]:
    """Return a status as the operator writes it."""
    ready = ready_reason == "Evaluating"
    healthy = {
        "Pass": ("True", "WithinThresholds"),
        "Fail": ("False", "ThresholdExceeded"),
    }.get(verdict, ("Unknown", "NoData"))
    return {
        "observedGeneration": 1,
        "lastVerdict": verdict,
        "failures": failures,
        "lastEvaluationTime": "2026-11-29T10:05:00Z",
        "metricResults": [
            {"name": name, "value": value, "maxValue": max_value, "verdict": result}
            for name, value, max_value, result in values
        ],
        "pausedAt": "2026-11-29T10:04:00Z" if paused else None,
        "conditions": [
            condition("Ready", "True" if ready else "False", ready_reason),
            condition("Healthy", *healthy),
            condition(
                "RolloutPaused",
                "True" if paused else "False",
                "FailureLimitReached" if paused else "NotPaused",
            ),
        ],
    }


def resource(
    name: str,
    *,
    namespace: str = "shop",
    target: str | None = None,
    kind: str = "Deployment",
    metrics: Sequence[dict[str, Any]] = (LATENCY,),
    failure_limit: int = 3,
    status_: dict[str, Any] | None = None,
    uid: str | None = None,
    resource_version: str = "10",
) -> dict[str, Any]:
    manifest = analysis_manifest(
        name,
        namespace,
        target=target or name,
        metrics=metrics,
        interval="30s",
        failure_limit=failure_limit,
        kind=kind,
    )
    return as_served(
        manifest,
        uid=uid or f"uid-{next(_uids)}",
        resource_version=resource_version,
        created="2026-11-29T09:00:00Z",
        status=status_,
    )


def analysis(name: str, **kwargs: Any) -> Analysis:
    """Mirror one analysis and return its row."""
    row, _ = mirror.upsert_from_resource(resource(name, **kwargs))
    return row


def history(
    row: Analysis,
    values: Sequence[float | None],
    *,
    start: datetime = T0,
    step: timedelta = timedelta(seconds=30),
    paused_at: int | None = None,
    error_at: int | None = None,
    steady: Mapping[str, float] | None = None,
) -> list[Evaluation]:
    """Record one evaluation per value, with outcomes and failure counts as the operator would.

    Every metric measures ``values[i]`` in evaluation ``i``, except those named in ``steady``,
    which measure their fixed value each time. ``error_at`` makes that evaluation an Error
    (no values); ``paused_at`` marks that evaluation as the one that paused the target.
    """
    fixed = dict(steady or {})
    metrics = list(row.metrics.all())
    evaluations = []
    failures = 0
    for index, value in enumerate(values):
        measured = {m.name: fixed.get(m.name, value) for m in metrics}
        error = index == error_at
        verdicts = {m.name: _verdict(measured[m.name], m.max_value, error) for m in metrics}
        if error:
            outcome = "Error"
        elif "Fail" in verdicts.values():
            outcome = "Fail"
        elif "Inconclusive" in verdicts.values():
            outcome = "Inconclusive"
        else:
            outcome = "Pass"
        failures = failures + 1 if outcome == "Fail" else (0 if outcome == "Pass" else failures)
        evaluation = Evaluation.objects.create(
            analysis=row,
            started_at=start + index * step,
            finished_at=start + index * step + timedelta(milliseconds=35),
            duration_seconds=0.035,
            generation=row.generation,
            outcome=outcome,
            failures_after=failures,
            error_reason="MetricsUnavailable" if error else "",
            error_message="Prometheus answered 502 Bad Gateway" if error else "",
            paused=index == paused_at,
        )
        MetricResult.objects.bulk_create(
            MetricResult(
                evaluation=evaluation,
                name=metric.name,
                value=None if error else measured[metric.name],
                value_text=_text(None if error else measured[metric.name]),
                max_value=metric.max_value,
                verdict=verdicts[metric.name],
            )
            for metric in metrics
        )
        evaluations.append(evaluation)
    return evaluations


def failed_delivery(row: Analysis, *, at: datetime, duration_seconds: float) -> Delivery:
    """Record a Paused notification of ``row`` whose one attempt failed with HTTP 500."""
    delivery = Delivery.objects.create(
        key=f"{row.uid}/Paused@seed/payments-slack",
        analysis=row,
        namespace=row.namespace,
        name=row.name,
        channel="payments-slack",
        event="Paused",
        message="paused Deployment checkout: p99-latency 0.41 is above maxValue 0.25",
        transition_at=at,
        created_at=at,
        state=State.FAILED,
        attempts=1,
        last_error="HTTP 500 from the receiver",
    )
    DeliveryAttempt.objects.create(
        delivery=delivery,
        started_at=at,
        duration_seconds=duration_seconds,
        error="HTTP 500 from the receiver",
    )
    return delivery


def _verdict(value: float | None, max_value: float | None, error: bool) -> str:
    if error:
        return "Error"
    if value is None:
        return "Inconclusive"
    if max_value is None:
        # No fixed bound (maxIncrease or compare): the test sets the verdict it wants.
        return "Pass"
    return "Fail" if value > max_value else "Pass"


def _text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


# -- one analysis of every metric kind, as the demo runs it (docs/analysis.md) ------------------

# Judged against its own value one rate window earlier, with a traffic guard.
RELATIVE = {
    "name": "p99-vs-before",
    "query": LATENCY["query"],
    "maxIncrease": {"percent": 20},
    "baseline": {"offset": "5m"},
    "minSamples": {"query": 'sum(increase(http_requests_total{app="checkout"}[5m]))', "min": 200},
}
# The demo's query on the real control plane (207 characters): one line of it is wider than
# the page's content column.
COMPARE = {
    "name": "latency-vs-old",
    "query": (
        'rate(http_request_duration_seconds_sum{namespace="default",app="checkout",'
        'job="kubernetes-pods"}[1m]) / rate(http_request_duration_seconds_count'
        '{namespace="default",app="checkout",job="kubernetes-pods"}[1m])'
    ),
    "compare": {"by": "pod_template_hash", "maxEffect": {"percent": 10}, "lookback": "5m"},
}
_PODS = '{namespace="default",app="checkout",job="kubernetes-pods"}'
SEQUENTIAL = {
    "name": "errors-vs-old",
    "sequential": {
        "bad": f"http_request_errors_total{_PODS}",
        "total": f"http_requests_total{_PODS}",
        "maxIncrease": {"percent": 10},
    },
}
# The other form of a sequential metric: a histogram and one of its bucket boundaries.
SLOW = {
    "name": "slow-vs-old",
    "sequential": {
        "histogram": 'http_request_duration_seconds{app="ledger"}',
        "slowerThan": 0.25,
        "maxIncrease": {"percent": 10},
    },
}
EVERY_KIND = (LATENCY, RELATIVE, COMPARE, SEQUENTIAL)
# Values as floating point leaves them: the pages must round them (analyses/numbers.py).
RAW_BASELINE = 0.09144607843137259
RAW_EVIDENCE = 0.021118904734573
# 2.4299064691064727 % of the new pods' requests failed in each step.
NEW_BAD, NEW_TOTAL = 52.0, 2139.99
OLD_BAD, OLD_TOTAL = 49.0, 2101.0
SEQUENTIAL_SENTENCE = (
    "new pods' error rate is 1 \u00d7 the old pods' (812 of 33,416 vs 798 of 32,904 requests "
    "since 09:58); evidence 0.021 of 20 needed: no evidence of harm so far"
)


def _sequential_state(needed: float, evidence: float) -> dict[str, Any]:
    """Return ``metricResults[].sequential`` as the operator writes it (no grid yet)."""
    return {
        "evidence": evidence,
        "needed": needed,
        "ratio": 1.009,
        "newBad": 812.0,
        "newTotal": 33416.0,
        "oldBad": 798.0,
        "oldTotal": 32904.0,
        "since": "2026-11-29T09:58:10Z",
        "through": "2026-11-29T10:05:00Z",
        "key": "5c7f9d/1",
        "steps": 14,
        "logRatios": [],
        "dispersion": {"excess": 0.0, "weight": 0.0},
    }


def every_kind_analysis(name: str = "checkout", namespace: str = "demo") -> Analysis:
    """Mirror an analysis of ``EVERY_KIND`` paused mid-rollout, with its history."""
    row = analysis(name, namespace=namespace, metrics=EVERY_KIND, status_=every_kind_status())
    every_kind_history(row)
    return row


def histogram_analysis(
    name: str = "ledger", namespace: str = "web", target: str = "db"
) -> Analysis:
    """Mirror a StatefulSet's analysis with a threshold and ``SLOW``, paused, with its history."""
    metrics = (LATENCY, SLOW)
    row = analysis(
        name,
        namespace=namespace,
        target=target,
        kind="StatefulSet",
        metrics=metrics,
        status_=every_kind_status(metrics),
    )
    every_kind_history(row)
    return row


def every_kind_status(
    metrics: Sequence[Mapping[str, Any]] = EVERY_KIND, *, paused: bool = True
) -> dict[str, Any]:
    """Return the status of an analysis of ``metrics`` (of ``EVERY_KIND`` and ``SLOW``) after a
    rollout's regression paused it; every sequential metric with the same figures."""
    names = {metric["name"] for metric in metrics}
    sequential = [metric["name"] for metric in metrics if "sequential" in metric]
    result = status(verdict="Fail", failures=3, paused=paused)
    result["rollout"] = {"templateHash": "5c7f9d", "startedAt": "2026-11-29T09:58:10Z"}
    result["metricResults"] = [
        {
            "name": "p99-latency",
            "value": "0.41",
            "maxValue": 0.25,
            "verdict": "Fail",
            "message": "0.41 is above maxValue 0.25; worst of 3 series",
        },
        {
            "name": "p99-vs-before",
            "value": "0.1305882352941176",
            "baseline": str(RAW_BASELINE),
            "samples": "1843.0000000000002",
            "series": {"pod": "checkout-7d9f-x2k4", "route": "/pay"},
            "verdict": "Fail",
            "message": "0.130588 is 43 % above the baseline 0.0914461 5m earlier (limit +20 %)",
        },
        {
            "name": "latency-vs-old",
            "value": "0.0800000000000001",
            "verdict": "Fail",
            "message": (
                "new pods' median 0.08 is 60 % above old pods' 0.05 (p = 0.001, 9 vs 9 samples)"
            ),
            "comparison": {
                "newMedian": 0.0800000000000001,
                "oldMedian": 0.05000000000000004,
                "effect": 0.030000000000000058,
                "pValue": 0.0010000000000000002,
                "newSamples": 9,
                "oldSamples": 9,
                "newHash": "5c7f9d",
                "oldHashes": ["7d9f4b"],
            },
        },
        *(
            {
                "name": name,
                "value": str(RAW_EVIDENCE),
                "verdict": "Pass",
                "message": SEQUENTIAL_SENTENCE,
                "sequential": _sequential_state(20.0 * len(sequential), RAW_EVIDENCE),
            }
            for name in sequential
        ),
    ]
    result["metricResults"] = [r for r in result["metricResults"] if r["name"] in names]
    return result


def every_kind_history(row: Analysis, evaluations: int = 16, *, start: datetime = T0) -> None:
    """Record ``evaluations`` evaluations of ``row``'s metrics, the last one pausing the target.

    The threshold metrics rise over their bound in the last three; the compare metric's new
    pods are slower throughout; the sequential metrics count a step each time (but the first),
    with raw floating-point figures, as the operator stores them.
    """
    metrics = list(row.metrics.all())
    for index in range(evaluations):
        late = index >= evaluations - 3
        at = start + timedelta(seconds=30 * index)
        evaluation = Evaluation.objects.create(
            analysis=row,
            started_at=at,
            finished_at=at + timedelta(milliseconds=41),
            duration_seconds=0.041,
            generation=row.generation,
            outcome="Fail" if late else "Pass",
            failures_after=index - (evaluations - 4) if late else 0,
            paused=index == evaluations - 1,
        )
        # Float noise in the values (0.13049999999999998), as sums of rates have.
        latency = (0.31, 0.36, 0.41)[index - evaluations + 3] if late else 0.12 + 0.0035 * index
        relative = latency * 0.4 if late else RAW_BASELINE * 1.1 + 0.0007 * index
        results = []
        for metric in metrics:
            fields: dict[str, Any]
            if metric.is_sequential:
                counts = {
                    "newBad": NEW_BAD,
                    "newTotal": NEW_TOTAL,
                    "oldBad": OLD_BAD,
                    "oldTotal": OLD_TOTAL,
                    "steps": 1,
                    "through": (at - timedelta(seconds=5)).isoformat().replace("+00:00", "Z"),
                }
                # Growing to the status's evidence at the last evaluation.
                value = RAW_EVIDENCE * (7 + index) / (6 + evaluations)
                fields = {"limit": 20.0, "counted": counts if index else {}, "verdict": "Pass"}
                fields["message"] = SEQUENTIAL_SENTENCE
                # The ratio's bounds narrowing around 1 as steps add up: none in the first
                # evaluations, then the upper side, then both (raw floats, as stored).
                spread = 1 + 3.0 / math.sqrt(index or 1)
                fields["ratio_upper"] = 1.009 * spread if index >= 2 else None
                fields["ratio_lower"] = 1.009 / spread if index >= 5 else None
            elif metric.compare:
                value = 0.0800000000000001 if late else 0.05200000000000001
                fields = {"comparison": {"newMedian": value, "oldMedian": 0.05000000000000004}}
                fields["verdict"] = "Fail" if late else "Pass"
            elif metric.max_increase_percent is not None:
                value, limit = relative, RAW_BASELINE * 1.2
                fields = {"baseline": RAW_BASELINE, "baseline_text": repr(RAW_BASELINE)}
                fields |= {"limit": limit, "samples_text": "1843"}
                fields["verdict"] = "Fail" if relative > limit else "Pass"
            else:
                value = latency
                fields = {"max_value": metric.max_value, "limit": metric.max_value}
                fields["verdict"] = "Fail" if late else "Pass"
            results.append(
                MetricResult(
                    evaluation=evaluation,
                    name=metric.name,
                    value=value,
                    value_text=repr(value),
                    **fields,
                )
            )
        MetricResult.objects.bulk_create(results)
