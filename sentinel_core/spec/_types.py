"""The typed, frozen result of parsing a spec: ``AnalysisSpec``, its parts and the CRD defaults.

``sentinel_core.spec`` builds these and re-exports them; they hold no parsing rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sentinel_core.metric_kinds.compare import Compare
from sentinel_core.metric_kinds.sequential import DEFAULT_FALSE_PAUSE_RATE, Sequential
from sentinel_core.metric_kinds.threshold import Baseline, Increase, MinSamples

DEFAULT_TARGET_KIND = "Deployment"
DEFAULT_INTERVAL = "30s"
DEFAULT_INTERVAL_SECONDS = 30.0
DEFAULT_FAILURE_LIMIT = 3


@dataclass(frozen=True)
class SpecSummary:
    """The columns the mirror keeps of a spec, also of an invalid one.

    Parts that parsed are as written (an interval under the 5 s minimum included); the rest are
    the CRD's defaults, so a broken spec still lists and sorts sensibly.
    """

    target_name: str = ""
    metrics: tuple[MetricSpec, ...] = ()
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    failure_limit: int = DEFAULT_FAILURE_LIMIT
    dry_run: bool = False
    failure_window: int | None = None


@dataclass(frozen=True)
class Target:
    """The workload an analysis guards, in the analysis's own namespace."""

    kind: str
    name: str


@dataclass(frozen=True)
class MetricSpec:
    """One PromQL query and what it may return: under ``maxValue``, within ``maxIncrease``."""

    name: str
    query: str
    # At least one of max_value and max_increase is set (docs/resource.md); baseline comes with
    # max_increase.
    max_value: float | None = None
    max_increase: Increase | None = None
    baseline: Baseline | None = None
    min_samples: MinSamples | None = None
    # As written; None is the operator's ``default`` provider (docs/operations.md#metric-providers).
    provider: str | None = None
    # New pods against old pods (docs/analysis.md); excludes max_value and max_increase.
    compare: Compare | None = None
    # Sequential judgment on counts (docs/analysis.md); excludes query and every bound above.
    sequential: Sequential | None = None

    def to_dict(self) -> dict[str, object]:
        """Return the metric in the custom resource's ``spec.metrics[]`` shape."""
        if self.sequential is not None:
            out: dict[str, object] = {"name": self.name, "sequential": self.sequential.to_dict()}
            if self.provider is not None:
                out["provider"] = self.provider
            return out
        out = {"name": self.name, "query": self.query}
        if self.max_value is not None:
            out["maxValue"] = self.max_value
        if self.max_increase is not None:
            out["maxIncrease"] = self.max_increase.to_dict()
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.min_samples is not None:
            out["minSamples"] = self.min_samples.to_dict()
        if self.provider is not None:
            out["provider"] = self.provider
        if self.compare is not None:
            out["compare"] = self.compare.to_dict()
        return out


@dataclass(frozen=True)
class AnalysisSpec:
    """A validated spec with the CRD defaults applied."""

    target: Target
    metrics: tuple[MetricSpec, ...]
    # The duration as written (``1m30s``), kept so the spec round-trips unchanged.
    interval: str = DEFAULT_INTERVAL
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    failure_limit: int = DEFAULT_FAILURE_LIMIT
    dry_run: bool = False
    # M-of-N counting (docs/resource.md): None keeps consecutive counting.
    failure_window: int | None = None
    # Notification channel names (docs/notifications.md); the operator's configuration defines them.
    notify: tuple[str, ...] = ()
    # spec.falsePauseRate as written (docs/analysis.md); None: the default budget.
    false_pause_rate: float | None = None

    @property
    def budget(self) -> float:
        """Return the false-pause budget shared by the sequential metrics."""
        rate = self.false_pause_rate
        return DEFAULT_FALSE_PAUSE_RATE if rate is None else rate

    @property
    def sequential_metrics(self) -> int:
        """Return how many metrics share the budget: each needs evidence m / budget."""
        return sum(metric.sequential is not None for metric in self.metrics)

    @property
    def summary(self) -> SpecSummary:
        return SpecSummary(
            target_name=self.target.name,
            metrics=self.metrics,
            interval_seconds=self.interval_seconds,
            failure_limit=self.failure_limit,
            dry_run=self.dry_run,
            failure_window=self.failure_window,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the spec in the custom resource's shape, defaults written out."""
        out: dict[str, Any] = {
            "target": {"kind": self.target.kind, "name": self.target.name},
            "metrics": [m.to_dict() for m in self.metrics],
            "interval": self.interval,
            "failureLimit": self.failure_limit,
            "dryRun": self.dry_run,
        }
        if self.failure_window is not None:
            out["failureWindow"] = self.failure_window
        if self.notify:
            out["notify"] = list(self.notify)
        if self.false_pause_rate is not None:
            out["falsePauseRate"] = self.false_pause_rate
        return out
