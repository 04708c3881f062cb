"""The mirror of RolloutAnalysis resources and their evaluation history.

The cluster owns spec and status (docs/operator.md); ``Analysis`` and ``AnalysisMetric`` are a copy
kept current by the watch through ``analyses.mirror`` so the admin and the REST API read fast. The
operator adds the due-time dispatch fields on ``Analysis`` and writes one ``Evaluation`` with its
``MetricResult`` rows per attempt (docs/operator.md#mirror-and-history). Nothing here talks to the
cluster.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from django.db import models
from django.db.models import Q

from sentinel_core.conditions import Outcome, Verdict
from sentinel_core.spec import DEFAULT_INTERVAL_SECONDS, DEFAULT_TARGET_KIND


def _choices(values: type[StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in values]


# The strings are an API owned by sentinel_core.conditions (docs/status.md); never spell them here.
VERDICT_CHOICES = _choices(Verdict)
OUTCOME_CHOICES = _choices(Outcome)


class AnalysisQuerySet(models.QuerySet["Analysis"]):
    """Queries the UI, the API and the dispatcher share."""

    def live(self) -> AnalysisQuerySet:
        """Return the analyses whose resource still exists."""
        return self.filter(deleted_at__isnull=True)

    def due(self, now: datetime) -> AnalysisQuerySet:
        """Return the live analyses due at ``now``, the most overdue first."""
        return self.live().filter(next_due_at__lte=now).order_by("next_due_at", "pk")


class Analysis(models.Model):
    """One RolloutAnalysis custom resource, mirrored; kept after deletion for the retention."""

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    # metadata.uid: identifies one incarnation of the resource; a resource deleted and created
    # again under the same name gets a new uid and therefore a new row.
    uid = models.CharField(max_length=64, unique=True)

    spec = models.JSONField(default=dict)
    # Denormalised from spec so lists filter and sort without parsing JSON.
    target_name = models.CharField(max_length=253, blank=True)
    interval_seconds = models.FloatField(default=DEFAULT_INTERVAL_SECONDS)
    failure_limit = models.PositiveIntegerField(default=3)
    # spec.failureWindow (docs/resource.md#failure-window); null counts consecutive failures.
    failure_window = models.PositiveIntegerField(null=True, blank=True)
    dry_run = models.BooleanField(default=False)

    status = models.JSONField(default=dict, blank=True)
    # Denormalised from status for the overview counts, filters and list badges.
    last_verdict = models.CharField(max_length=16, choices=VERDICT_CHOICES, blank=True)
    failures = models.PositiveIntegerField(default=0)
    # RolloutPaused=True: this analysis has paused its target.
    paused = models.BooleanField(default=False)
    # Ready=True; ready_reason is the Ready condition's reason (e.g. MetricsUnavailable).
    ready = models.BooleanField(default=False)
    ready_reason = models.CharField(max_length=64, blank=True)
    last_evaluation_at = models.DateTimeField(null=True, blank=True)

    # Opaque string from the API server; only ever compared for equality, and sent back as the
    # precondition of updates from the UI and API.
    resource_version = models.CharField(max_length=64, blank=True)
    generation = models.BigIntegerField(default=0)
    observed_generation = models.BigIntegerField(null=True, blank=True)
    # metadata.creationTimestamp, not when the row was inserted.
    created_at = models.DateTimeField()
    # Null while the resource exists; rows are pruned once this is older than the retention.
    deleted_at = models.DateTimeField(null=True, blank=True)
    # When the mirror last wrote this row from the cluster; lets a full resync tell a list
    # that is older than the row (and must not undo it) from one that is newer.
    mirrored_at = models.DateTimeField(null=True, blank=True)

    # Due-time dispatch (docs/operator.md#due-time-dispatch): when the operator's loop should next
    # hand this analysis to a worker. Null means not scheduled (deleted, or not yet picked up).
    next_due_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Consecutive transient errors; drives the exponential backoff, reset on success.
    backoff_attempt = models.PositiveIntegerField(default=0)

    objects = AnalysisQuerySet.as_manager()

    @property
    def target_kind(self) -> str:
        """Return ``spec.target.kind`` (Deployment, StatefulSet or DaemonSet) as mirrored."""
        target = self.spec.get("target") if isinstance(self.spec, dict) else None
        kind = target.get("kind") if isinstance(target, dict) else None
        return kind if isinstance(kind, str) and kind else DEFAULT_TARGET_KIND

    class Meta:
        ordering = ["namespace", "name", "-created_at"]
        verbose_name_plural = "analyses"
        constraints = [
            # Kubernetes allows one live object per name; deleted incarnations stay as history.
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=Q(deleted_at__isnull=True),
                name="analysis_live_name_unique",
            ),
        ]
        indexes = [
            # The default ordering, including deleted rows (the partial unique index cannot
            # serve queries that do not say deleted_at IS NULL).
            models.Index(fields=["namespace", "name", "-created_at"], name="analysis_ns_name"),
            # "Which analyses guard this Deployment?" (two analyses on one target, resume).
            models.Index(fields=["namespace", "target_name"], name="analysis_target"),
            # Pruning of deleted analyses. Partial: an index holding every live row under NULL
            # would tempt SQLite's planner into using it for "deleted_at IS NULL" (every live
            # row) instead of a selective index such as next_due_at.
            models.Index(
                fields=["deleted_at"],
                condition=Q(deleted_at__isnull=False),
                name="analysis_deleted_at",
            ),
        ]

    def __str__(self) -> str:
        suffix = " (deleted)" if self.deleted_at else ""
        return f"{self.namespace}/{self.name}{suffix}"

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None


class AnalysisMetric(models.Model):
    """One entry of ``spec.metrics`` as a row, so the admin can edit metrics inline."""

    # No index of its own: the (analysis, name) unique constraint serves lookups by analysis.
    analysis = models.ForeignKey(
        Analysis, on_delete=models.CASCADE, related_name="metrics", db_index=False
    )
    # Index in spec.metrics; the order the user wrote them in.
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=63)
    query = models.TextField()
    # At least one of max_value and max_increase_* is set (docs/resource.md#metrics); the spec
    # parser says so.
    max_value = models.FloatField(null=True, blank=True)
    # maxIncrease: at most one of the two.
    max_increase_percent = models.FloatField(null=True, blank=True)
    max_increase_absolute = models.FloatField(null=True, blank=True)
    # baseline: an offset duration as written ("1h"), or before the rollout.
    baseline_offset = models.CharField(max_length=32, blank=True)
    baseline_before_rollout = models.BooleanField(default=False)
    # minSamples: the guard query and its minimum; empty query means no guard.
    min_samples_query = models.TextField(blank=True)
    min_samples_min = models.FloatField(null=True, blank=True)
    # compare (docs/resource.md#new-pods-against-old-pods) in the resource's shape, defaults written
    # out; empty without one.
    compare = models.JSONField(default=dict, blank=True)
    # sequential in the resource's shape, defaults written out; empty without one. A metric
    # with it has no query; ``is_sequential`` says which kind it is
    # (docs/analysis.md#sequential-judgment-a-false-pause-budget-per-rollout).
    sequential = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["analysis", "position"]
        constraints = [
            models.UniqueConstraint(fields=["analysis", "name"], name="metric_name_unique"),
        ]

    def __str__(self) -> str:
        if self.max_value is None:
            return self.name
        return f"{self.name} <= {self.max_value:g}"

    @property
    def is_sequential(self) -> bool:
        """Return whether this metric is judged sequentially (its value is the evidence)."""
        return bool(self.sequential)

    def as_spec(self) -> dict[str, object]:
        """Return this metric in the custom resource's ``spec.metrics[]`` shape."""
        out: dict[str, object] = {"name": self.name}
        if self.sequential:
            out["sequential"] = dict(self.sequential)
            return out
        out["query"] = self.query
        if self.max_value is not None:
            out["maxValue"] = self.max_value
        if self.max_increase_percent is not None:
            out["maxIncrease"] = {"percent": self.max_increase_percent}
        elif self.max_increase_absolute is not None:
            out["maxIncrease"] = {"absolute": self.max_increase_absolute}
        if self.baseline_offset:
            out["baseline"] = {"offset": self.baseline_offset}
        elif self.baseline_before_rollout:
            out["baseline"] = {"beforeRollout": True}
        if self.min_samples_query:
            out["minSamples"] = {"query": self.min_samples_query, "min": self.min_samples_min}
        if self.compare:
            out["compare"] = dict(self.compare)
        return out


class Evaluation(models.Model):
    """One evaluation attempt, successful or not (docs/status.md#history-outcomes)."""

    # No index of its own: evaluation_newest starts with analysis and serves lookups by it.
    analysis = models.ForeignKey(
        Analysis, on_delete=models.CASCADE, related_name="evaluations", db_index=False
    )
    # When the attempt was due, as the dispatcher handed it (docs/status.md#history-outcomes):
    # ``started_at`` minus this is its dispatch lag. Null for rows written before it was kept.
    due_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    # Measured on a monotonic clock by the operator; the wall-clock difference between
    # started_at and finished_at can jump with NTP corrections.
    duration_seconds = models.FloatField(default=0.0)
    # metadata.generation of the spec that was evaluated.
    generation = models.BigIntegerField(default=0)
    outcome = models.CharField(max_length=16, choices=OUTCOME_CHOICES)
    failures_after = models.PositiveIntegerField(default=0)
    # A stable reason when the attempt did not get answers (MetricsUnavailable, TargetNotFound,
    # InvalidQuery, ...); empty otherwise.
    error_reason = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    # Whether this evaluation paused the target.
    paused = models.BooleanField(default=False)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            # Newest evaluations of one analysis, cursor pagination and per-analysis since/until.
            models.Index(fields=["analysis", "-started_at", "-id"], name="evaluation_newest"),
            # Since/until across analyses, and pruning by age.
            models.Index(fields=["started_at"], name="evaluation_started_at"),
        ]

    def __str__(self) -> str:
        return f"{self.analysis_id} @ {self.started_at:%Y-%m-%d %H:%M:%S}: {self.outcome}"

    @property
    def duration(self) -> timedelta:
        return timedelta(seconds=self.duration_seconds)


class MetricResult(models.Model):
    """What one metric measured in one evaluation."""

    evaluation = models.ForeignKey(
        Evaluation, on_delete=models.CASCADE, related_name="metric_results"
    )
    name = models.CharField(max_length=63)
    # The worst (largest) sample; null when there was no data or the query failed.
    value = models.FloatField(null=True, blank=True)
    # The value exactly as Prometheus printed it ("0.412", "+Inf"), for display. Text, not a
    # sized column: Prometheus prints without an exponent, so 1e-300 is 302 characters, which
    # PostgreSQL would refuse (failing the attempt's whole bookkeeping) and SQLite would keep.
    value_text = models.TextField(blank=True)
    max_value = models.FloatField(null=True, blank=True)
    # With maxIncrease: the baseline's value (null when there was none) and its text.
    baseline = models.FloatField(null=True, blank=True)
    baseline_text = models.TextField(blank=True)
    # The lowest bound the value was judged against (maxValue or the baseline's limit).
    limit = models.FloatField(null=True, blank=True)
    # With minSamples: what the guard query returned, as Prometheus printed it.
    samples_text = models.TextField(blank=True)
    # Labels of the worst series.
    series = models.JSONField(default=dict, blank=True)
    # With compare: status.metricResults[].comparison of this evaluation (medians, p-value,
    # samples, hashes); empty without one. The chart draws newMedian and oldMedian.
    comparison = models.JSONField(default=dict, blank=True)
    # With sequential: both sides' bad and all events over the steps this evaluation counted
    # (sentinel_core.metric_kinds.sequential.Counted.to_dict); empty when it counted none. The
    # chart draws the two sides' bad-event rates from it.
    counted = models.JSONField(default=dict, blank=True)
    # With sequential: the ratio's anytime-valid bounds after this evaluation
    # (status.metricResults[].sequential.ratioLower/ratioUpper, docs/analysis.md); null where a
    # side is not bounded yet, and in rows written before they were kept. The chart's band.
    ratio_lower = models.FloatField(null=True, blank=True)
    ratio_upper = models.FloatField(null=True, blank=True)
    # Error when this metric's query got no usable answer.
    verdict = models.CharField(max_length=16, choices=OUTCOME_CHOICES)
    # Detail for humans, e.g. "worst of 3 series" or Prometheus's error text.
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["evaluation", "id"]

    def __str__(self) -> str:
        shown = self.value_text or "no data"
        bound = f" (max {self.max_value:g})" if self.max_value is not None else ""
        return f"{self.name}={shown}{bound}: {self.verdict}"


class BacktestState(StrEnum):
    """Where a backtest job stands (docs/backtest.md)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


# A finished backtest is kept this long, then pruned by the operator (docs/backtest.md).
BACKTEST_KEEP = timedelta(days=7)


class BacktestJob(models.Model):
    """One backtest of an analysis: asked through the REST API, run by an operator worker.

    The web app writes the row ``queued`` with ``next_attempt_at`` set; the operator's leader
    claims it (a compare-and-set on ``next_attempt_at``), a worker runs it, storing its progress
    and finally its result (the same JSON as ``manage.py backtest --json``). docs/backtest.md.
    """

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    requested_by = models.CharField(max_length=150, blank=True)
    # A draft spec to try instead of the analysis's own; None: the saved one.
    draft = models.JSONField(null=True, blank=True)
    rollouts = models.PositiveSmallIntegerField()
    max_duration_seconds = models.FloatField()
    state = models.CharField(
        max_length=10, choices=_choices(BacktestState), default=BacktestState.QUEUED
    )
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A running job's worker touches it as it goes; one silent too long has lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When the leader may queue it (the claim column, as Delivery.next_attempt_at); None: never.
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["namespace", "name", "-created_at"])]

    def __str__(self) -> str:
        return f"backtest {self.pk} of {self.namespace}/{self.name} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (
            BacktestState.SUCCEEDED,
            BacktestState.FAILED,
            BacktestState.CANCELLED,
        )

    @property
    def progress(self) -> float:
        """Return the share of evaluations replayed, 0 to 1."""
        if self.finished and self.state == BacktestState.SUCCEEDED:
            return 1.0
        return round(self.done / self.total, 3) if self.total else 0.0
