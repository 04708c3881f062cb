"""The operator's own Prometheus metrics (docs/operator.md "Own metrics") and the ``/metrics`` page.

Two kinds of series, gathered two ways:

- **Counters and histograms** (reconciles by result, evaluation duration, Prometheus errors,
  pauses, dispatch lag) are incremented where the work happens: in the django-q2 worker
  processes and the dispatcher thread. ``runoperator`` switches prometheus-client into
  multiprocess mode (``enable_multiprocess``) before it forks the workers, so every process
  writes its samples to files in one directory and a scrape sums them. Without that directory
  (tests calling the reconciler in-process, the web app) they live in this process's registry.
- **Gauges per analysis** (verdict, failures, paused, ready) and the queue depth are not kept in
  memory at all: ``MirrorCollector`` reads them from the database mirror at scrape time, so they
  are right in every process that can reach the database, the web app's ``/metrics`` included.
- **Gauges per metric** (``sentinel_metric_value``, ``_threshold``, ``_baseline``, and
  ``_evidence`` of a sequential metric; docs/status.md) come the same way, from the newest
  history row of each live analysis, restricted to the metrics its spec still names: a deleted
  analysis or a metric removed from the spec has no series at the next scrape, with nothing to
  forget in any process.

The reconciler and dispatcher call ``operator_metrics()``; ``runtime`` serves ``scrape()`` on
``--metrics-port``; ``sentinel_site.urls`` serves ``metrics_view``.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Exists, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from sentinel_core.conditions import Verdict

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Dispatch lag must stay under a second (docs/operator.md); the buckets are fine around that bound.
_LAG_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 15.0, 60.0)
_DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class OperatorMetrics:
    """The counters and histograms the operator's processes increment."""

    # result: evaluated | transient | forbidden | deleted
    reconciles: Counter
    evaluation_duration: Histogram
    # error: Unavailable | InvalidQuery, one per failed Prometheus request
    prometheus_errors: Counter
    prometheus_requests: Counter
    pauses: Counter
    dispatch_lag: Histogram
    dispatched: Counter


_lock = threading.Lock()
_metrics: OperatorMetrics | None = None
# Used when no multiprocess directory is configured.
_local_registry = CollectorRegistry(auto_describe=True)


def enable_multiprocess(directory: Path) -> None:
    """Share counters across processes through files in ``directory`` (call before forking).

    prometheus-client chooses its value class when first imported, which Django has already
    done by the time a management command runs, so the class is switched here explicitly.
    Metrics created before this call would stay process-local, hence the guard.
    """
    if _metrics is not None:
        raise RuntimeError("enable_multiprocess() must run before the first metric is created.")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    values.ValueClass = values.MultiProcessValue()


def multiprocess_dir() -> str | None:
    directory = os.environ.get(MULTIPROC_ENV)
    return directory if directory and Path(directory).is_dir() else None


def operator_metrics() -> OperatorMetrics:
    """Return the process's metric objects, creating them on first use."""
    global _metrics
    with _lock:
        if _metrics is None:
            # In multiprocess mode samples go to files; registering would double them.
            registry = None if multiprocess_dir() else _local_registry
            _metrics = OperatorMetrics(
                reconciles=Counter(
                    "sentinel_reconciles",
                    "Reconciles of RolloutAnalyses, by result.",
                    ["result"],
                    registry=registry,
                ),
                evaluation_duration=Histogram(
                    "sentinel_evaluation_duration_seconds",
                    "Wall time of one reconcile: fetch, measure, decide, act, write.",
                    buckets=_DURATION_BUCKETS,
                    registry=registry,
                ),
                prometheus_errors=Counter(
                    "sentinel_prometheus_errors",
                    "Prometheus queries that produced no answer, by error.",
                    ["error"],
                    registry=registry,
                ),
                prometheus_requests=Counter(
                    "sentinel_prometheus_requests",
                    "Prometheus queries sent.",
                    registry=registry,
                ),
                pauses=Counter(
                    "sentinel_pauses",
                    "Deployments paused because an analysis reached its failure limit.",
                    registry=registry,
                ),
                dispatch_lag=Histogram(
                    "sentinel_dispatch_lag_seconds",
                    "Start of an evaluation minus the time it was due.",
                    buckets=_LAG_BUCKETS,
                    registry=registry,
                ),
                dispatched=Counter(
                    "sentinel_dispatched",
                    "Analyses handed to a worker by the due-time dispatcher.",
                    registry=registry,
                ),
            )
        return _metrics


class MirrorCollector(Collector):
    """Per-analysis gauges and the queue depth, read from the database at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from analyses.models import Analysis  # the app registry is ready by scrape time

        labels = ["namespace", "name"]
        verdict = GaugeMetricFamily(
            "sentinel_analysis_verdict",
            "1 for the last verdict of each live analysis (Pass, Fail or Inconclusive).",
            labels=[*labels, "verdict"],
        )
        failures = GaugeMetricFamily(
            "sentinel_analysis_failures", "Consecutive failed evaluations.", labels=labels
        )
        limit = GaugeMetricFamily(
            "sentinel_analysis_failure_limit", "spec.failureLimit.", labels=labels
        )
        paused = GaugeMetricFamily(
            "sentinel_analysis_paused", "1 when this analysis has paused its target.", labels=labels
        )
        ready = GaugeMetricFamily(
            "sentinel_analysis_ready", "1 when the Ready condition is True.", labels=labels
        )
        rows = Analysis.objects.filter(deleted_at__isnull=True).values_list(
            "namespace", "name", "last_verdict", "failures", "failure_limit", "paused", "ready"
        )
        for namespace, name, last, fails, fail_limit, is_paused, is_ready in rows.iterator():
            key = [namespace, name]
            for value in Verdict:
                verdict.add_metric([*key, value.value], 1.0 if last == value.value else 0.0)
            failures.add_metric(key, float(fails))
            limit.add_metric(key, float(fail_limit))
            paused.add_metric(key, 1.0 if is_paused else 0.0)
            ready.add_metric(key, 1.0 if is_ready else 0.0)
        yield from (verdict, failures, limit, paused, ready)
        yield from _metric_gauges()
        yield _notification_failures()

        due = Analysis.objects.filter(deleted_at__isnull=True, next_due_at__lte=timezone.now())
        yield GaugeMetricFamily(
            "sentinel_analyses_due",
            "Analyses whose due time has passed and that no worker has claimed yet.",
            value=float(due.count()),
        )
        yield GaugeMetricFamily(
            "sentinel_queue_depth",
            "Tasks waiting in the django-q2 broker for a worker.",
            value=float(_broker_queue_size()),
        )


def _notification_failures() -> Metric:
    """Deliveries that failed after their last retry, per channel, from the rows.

    docs/notifications.md describes delivery and its retries.

    Read from the database like the gauges above, because the deliveries run in the django-q2
    workers, not in the process serving /metrics. Pruning old rows lowers it, which Prometheus
    reads as a counter reset; every replica reports the same figure (alert with ``max by``).
    """
    from django.db.models import Count

    from notifications.models import Delivery, State

    family = CounterMetricFamily(
        "sentinel_notification_failures",
        "Notification deliveries that failed after their retries, per channel.",
        labels=["channel"],
    )
    counts = (
        Delivery.objects.filter(state=State.FAILED)
        .values_list("channel")
        .annotate(n=Count("id"))
        .order_by("channel")
    )
    for channel, n in counts:
        family.add_metric([channel], float(n))
    return family


def _metric_gauges() -> Iterator[Metric]:
    """Yield value, threshold and baseline of each metric of each live analysis.

    Read from the newest ``Evaluation`` of each live analysis. ``MetricResult.limit`` is the
    lowest bound the value was judged against (``maxValue`` or the baseline's limit, whichever is
    lower); where the operator recorded none (an error, no baseline yet) ``maxValue`` stands in.
    A sample is left out when there is nothing to say: no value after an error, no baseline.
    """
    from analyses import kinds
    from analyses.models import Analysis, AnalysisMetric, Evaluation, MetricResult

    labels = ["namespace", "analysis", "metric"]
    value = GaugeMetricFamily(
        "sentinel_metric_value",
        "The metric's value (the worst series) at the analysis's last evaluation.",
        labels=labels,
    )
    threshold = GaugeMetricFamily(
        "sentinel_metric_threshold",
        "The lowest bound the value was judged against: maxValue or the baseline's limit.",
        labels=labels,
    )
    baseline = GaugeMetricFamily(
        "sentinel_metric_baseline",
        "The baseline the value was compared with (metrics with maxIncrease).",
        labels=labels,
    )
    evidence = GaugeMetricFamily(
        "sentinel_metric_evidence",
        "A sequential metric's evidence against the new pods; it fails at the threshold.",
        labels=labels,
    )
    newest = (
        Evaluation.objects.filter(analysis=OuterRef("pk"))
        .order_by("-started_at", "-id")
        .values("pk")[:1]
    )
    newest_of_live = Analysis.objects.live().annotate(newest=Subquery(newest)).values("newest")
    in_spec = AnalysisMetric.objects.filter(
        analysis=OuterRef("evaluation__analysis"), name=OuterRef("name")
    )
    rows = (
        MetricResult.objects.filter(evaluation__in=newest_of_live)
        .filter(Exists(in_spec))
        # Whether the metric's value is evidence, as its kind says (docs/analysis.md).
        .annotate(evidential=Exists(in_spec.filter(kinds.evidence_metrics())))
        .order_by("evaluation__analysis__namespace", "evaluation__analysis__name", "id")
        .values_list(
            "evaluation__analysis__namespace",
            "evaluation__analysis__name",
            "name",
            "value",
            "limit",
            "max_value",
            "baseline",
            "evidential",
        )
    )
    for namespace, name, metric, measured, judged_limit, max_value, base, ev in rows.iterator():
        key = [namespace, name, metric]
        if measured is not None:
            value.add_metric(key, measured)
            if ev:
                evidence.add_metric(key, measured)
        bound = judged_limit if judged_limit is not None else max_value
        if bound is not None:
            threshold.add_metric(key, bound)
        if base is not None:
            baseline.add_metric(key, base)
    yield from (value, threshold, baseline, evidence)


def _broker_queue_size() -> int:
    try:
        from django_q.brokers import get_broker

        return int(get_broker().queue_size() or 0)
    except Exception:  # a broker outage must not break the whole scrape
        log.exception("metrics: cannot read the django-q2 queue size")
        return 0


class _Local(Collector):
    def collect(self) -> Iterator[Metric]:
        yield from _local_registry.collect()


class _Extra(Collector):
    def __init__(self, collect: Callable[[], Iterator[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterator[Metric]:
        yield from self._collect()


class _WrittenFiles(MultiProcessCollector):
    """prometheus_client's multiprocess collector, skipping files a process is still creating.

    A worker forked a moment ago has created its ``*.db`` file but not yet sized it (an empty
    file for a few microseconds); the stock collector reads every file and fails on that one
    with ``struct.error``, so the whole scrape went unanswered (seen in a quiet ``make test``:
    the operator's ``/metrics`` closed the connection without an answer). An empty file holds
    no samples yet, so skipping it loses nothing; it is read on the next scrape.
    """

    def __init__(self, registry: CollectorRegistry, path: str) -> None:
        super().__init__(registry, path=path)
        self._directory = path

    def collect(self) -> Iterable[Metric]:
        files = []
        for file in glob.glob(os.path.join(self._directory, "*.db")):
            try:
                if os.path.getsize(file) > 0:
                    files.append(file)
            except FileNotFoundError:
                continue  # its process died and the file was removed meanwhile
        return self.merge(files, accumulate=True)


def scrape_registry(extra: Callable[[], Iterator[Metric]] | None = None) -> CollectorRegistry:
    """Return a registry gathering every series this process can see."""
    registry = CollectorRegistry(auto_describe=False)
    directory = multiprocess_dir()
    if directory:
        _WrittenFiles(registry, path=directory)
    else:
        registry.register(_Local())
    registry.register(MirrorCollector())
    if extra is not None:
        registry.register(_Extra(extra))
    return registry


def scrape(extra: Callable[[], Iterator[Metric]] | None = None) -> bytes:
    """Return the text exposition of ``scrape_registry``."""
    return generate_latest(scrape_registry(extra))


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Serve ``/metrics`` from the web app (mirror gauges; counters when sharing the dir)."""
    return HttpResponse(scrape(), content_type=CONTENT_TYPE_LATEST)


@dataclass(frozen=True)
class ProviderMetrics:
    """Per-provider request counts and latency, and configuration reload failures.

    See docs/operations.md#metric-providers.
    """

    # provider, code: the HTTP status, or "error" when no answer arrived
    requests: Counter
    latency: Histogram
    reload_failures: Counter


_provider_metrics: ProviderMetrics | None = None


def provider_metrics() -> ProviderMetrics:
    """Return the process's provider metrics, creating them on first use."""
    global _provider_metrics
    with _lock:
        if _provider_metrics is None:
            registry = None if multiprocess_dir() else _local_registry
            _provider_metrics = ProviderMetrics(
                requests=Counter(
                    "sentinel_provider_requests",
                    "Queries sent to each metric provider, by HTTP status ('error': none).",
                    ["provider", "code"],
                    registry=registry,
                ),
                latency=Histogram(
                    "sentinel_provider_request_duration_seconds",
                    "Wall time of one query to a metric provider, answer read.",
                    ["provider"],
                    buckets=_DURATION_BUCKETS,
                    registry=registry,
                ),
                reload_failures=Counter(
                    "sentinel_config_reload_failures",
                    "New versions of SENTINEL_PROVIDERS_FILE (or its secret files) that did "
                    "not load; the previous version stayed in force.",
                    registry=registry,
                ),
            )
        return _provider_metrics
