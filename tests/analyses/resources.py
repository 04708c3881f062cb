"""Build RolloutAnalysis objects shaped as the API server returns them, for the mirror tests."""

from __future__ import annotations

from typing import Any

from testkit.manifests import analysis_manifest, as_served

DEFAULT_METRICS = (
    {"name": "p99-latency", "query": "histogram_quantile(0.99, x)", "maxValue": 0.25},
    {"name": "error-rate", "query": "sum(rate(errors[1m]))", "maxValue": 0.01},
)


def resource(
    name: str = "checkout",
    *,
    namespace: str = "shop",
    uid: str = "uid-1",
    resource_version: str = "100",
    generation: int = 1,
    metrics: tuple[dict[str, Any], ...] | list[dict[str, Any]] = DEFAULT_METRICS,
    interval: str = "30s",
    failure_limit: int = 3,
    dry_run: bool = False,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a RolloutAnalysis as a dict, the way ``CustomObjectsApi`` returns it."""
    manifest = analysis_manifest(
        name,
        namespace,
        target=name,
        metrics=metrics,
        interval=interval,
        failure_limit=failure_limit,
        dry_run=dry_run,
    )
    return as_served(
        manifest,
        uid=uid,
        resource_version=resource_version,
        generation=generation,
        created="2026-11-29T10:00:00Z",
        status=status,
    )


def paused_status(failures: int = 3, generation: int = 1) -> dict[str, Any]:
    """Return a status in which the analysis has paused its target."""
    when = "2026-11-29T10:05:00Z"
    return {
        "observedGeneration": generation,
        "lastVerdict": "Fail",
        "failures": failures,
        "lastEvaluationTime": when,
        "metricResults": [
            {"name": "p99-latency", "value": "0.412", "maxValue": 0.25, "verdict": "Fail"}
        ],
        "pausedAt": when,
        "conditions": [
            _condition("Ready", "True", "Evaluating", when, generation),
            _condition("Healthy", "False", "ThresholdExceeded", when, generation),
            _condition("RolloutPaused", "True", "FailureLimitReached", when, generation),
        ],
    }


def _condition(kind: str, status: str, reason: str, when: str, generation: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": f"{kind} is {status}",
        "lastTransitionTime": when,
        "observedGeneration": generation,
    }
