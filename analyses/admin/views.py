"""The admin pages around an analysis that Django's ModelAdmin does not make: data and actions.

``sentinel_site.admin_site.SentinelAdminSite`` shows ``overview_context`` on the admin's
index; ``analyses.admin.analysis.AnalysisAdmin`` wires in ``detail_context`` (status,
conditions, history and graphs added to the change page), and ``resume`` / ``evaluate`` (the
detail page's POST actions). Everything shown is read from the mirror and the history tables;
the actions go through ``analyses.services``, which write to the cluster first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from accounts import access
from analyses import kinds, services
from analyses.charts import (
    ChartPoint,
    render_band_chart,
    render_metric_chart,
    render_rates_chart,
)
from analyses.models import Analysis, Evaluation, MetricResult
from sentinel_core.conditions import ConditionStatus, ConditionType, Verdict
from sentinel_core.spec import DEFAULT_TARGET_KIND
from sentinel_core.status import AnalysisStatus, Condition


class ModelAdminActions(Protocol):
    """What the detail page and its actions need from the model admin that shows them.

    ``analysis.AnalysisAdmin`` is one; the views receive it rather than import it, so the admin
    imports the views and never the other way round.
    """

    def has_perm_to_act(self, request: HttpRequest) -> bool: ...

    def get_object(self, request: HttpRequest, object_id: str) -> Analysis | None: ...

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any: ...


# Rows in the history table: the newest evaluations; the REST API pages through the rest.
HISTORY_ROWS = 25
# Evaluations drawn per graph: 2 hours at the default 30 s interval.
CHART_EVALUATIONS = 240
# Not-ready analyses listed by name on the overview; the count links to all of them.
OVERVIEW_LIST_LIMIT = 20
# The condition types in the order the page shows them (docs/status.md's conditions).
_CONDITION_ORDER = (ConditionType.READY, ConditionType.HEALTHY, ConditionType.ROLLOUT_PAUSED)


@dataclass(frozen=True)
class CountLink:
    """One figure on the overview, and the filtered list it stands for."""

    label: str
    count: int
    url: str
    # CSS modifier of the card: all, pass, fail, inconc, none, paused or notready.
    tone: str


@dataclass(frozen=True)
class PausedTarget:
    """A target paused by one or more analyses."""

    namespace: str
    target: str
    analyses: tuple[str, ...]
    url: str
    # spec.target.kind: Deployment, StatefulSet or DaemonSet.
    kind: str = DEFAULT_TARGET_KIND


@dataclass(frozen=True)
class ConditionRow:
    condition: Condition
    # CSS modifier: good, bad or unknown.
    tone: str


@dataclass(frozen=True)
class MetricChart:
    name: str
    query: str
    # None for a metric judged only against its baseline (maxIncrease).
    max_value: float | None
    svg: SafeString
    # From status.metricResults: the last evaluation that got answers.
    latest_value: str | None = None
    latest_verdict: str = ""
    # status.metricResults[]: the baseline, the guard's count and the worst series' labels.
    baseline: str | None = None
    samples: str | None = None
    # minSamples.min.
    samples_min: float | None = None
    series: tuple[tuple[str, str], ...] = ()
    # With a kind whose value is evidence: the graph of both sides' bad-event rates under it.
    rates_svg: SafeString | str = ""
    # With a kind whose view has a band: the graph of the ratio's bounds under the rates.
    band_svg: SafeString | str = ""
    # How the metric is judged, as the card's tag says it: a tag of its kind's view
    # (``analyses.kinds``).
    kind: str = "threshold"
    # What it reads: (label, PromQL) pairs, as its kind's view says.
    reads: tuple[tuple[str, str], ...] = ()
    # When it fails, in words, as its kind's view says.
    rule: SafeString | str = ""
    # The last evaluation's verdict in one sentence (status.metricResults[].message).
    sentence: str = ""
    # With a kind whose value is evidence: the evidence needed to fail (m/falsePauseRate).
    needed: float | None = None
    # Whether its value is evidence (the badge says "evidence x of needed").
    evidence: bool = False
    # What the main graph draws, in words.
    caption: str = ""
    # A CSS class of the verdict sentence; the history cell's template (its kind's view's).
    sentence_class: str = ""
    cell: str = ""

    @property
    def kind_words(self) -> str:
        """Return how the metric is judged, in the card's words."""
        return kinds.WORDS[self.kind]


def changelist_url(**filters: str) -> str:
    """Return the analyses list filtered by ``filters`` (admin query-string lookups)."""
    base = reverse("admin:analyses_analysis_changelist")
    return f"{base}?{urlencode(filters)}" if filters else base


def overview_context(request: HttpRequest) -> dict[str, Any]:
    """Return the overview the index shows: counts by verdict, paused targets and analyses not
    ready, each a link to the filtered list (the caller checks the user may see analyses)."""
    live = access.visible(request.user, Analysis.objects.live())
    totals = live.aggregate(
        total=Count("pk"),
        paused=Count("pk", filter=Q(paused=True)),
        not_ready=Count("pk", filter=Q(ready=False)),
        **{
            f"v_{verdict.value}": Count("pk", filter=Q(last_verdict=verdict)) for verdict in Verdict
        },
        none=Count("pk", filter=Q(last_verdict="")),
    )
    verdict_tones = {Verdict.PASS: "pass", Verdict.FAIL: "fail", Verdict.INCONCLUSIVE: "inconc"}
    verdicts = [
        CountLink(
            label=verdict.value,
            count=totals[f"v_{verdict.value}"],
            url=changelist_url(last_verdict__exact=verdict.value),
            tone=verdict_tones[verdict],
        )
        for verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE, Verdict.PASS)
    ]
    verdicts.append(
        CountLink(
            label="Not evaluated yet",
            count=totals["none"],
            url=changelist_url(last_verdict__exact=""),
            tone="none",
        )
    )
    not_ready_reasons = [
        CountLink(
            label=row["ready_reason"] or "Not reconciled yet",
            count=row["count"],
            url=changelist_url(ready__exact="0", ready_reason=row["ready_reason"]),
            tone="notready",
        )
        for row in live.filter(ready=False)
        .values("ready_reason")
        .annotate(count=Count("pk"))
        .order_by("-count", "ready_reason")
    ]
    return {
        "overview": True,
        "total": CountLink("Analyses", totals["total"], changelist_url(), "all"),
        "verdicts": verdicts,
        "paused": CountLink(
            "Paused rollouts", totals["paused"], changelist_url(paused__exact="1"), "paused"
        ),
        "not_ready": CountLink(
            "Not ready", totals["not_ready"], changelist_url(ready__exact="0"), "notready"
        ),
        "not_ready_reasons": not_ready_reasons,
        "paused_targets": paused_targets(live),
        "not_ready_rows": list(
            live.filter(ready=False).order_by("namespace", "name")[:OVERVIEW_LIST_LIMIT]
        ),
    }


def paused_targets(live: QuerySet[Analysis]) -> list[PausedTarget]:
    """Return the targets paused by ``live`` analyses, with the analyses that paused each."""
    holders: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    rows = live.filter(paused=True).order_by("namespace", "target_name", "name")
    for row in rows.only("namespace", "target_name", "name", "spec"):
        holders[(row.namespace, row.target_kind, row.target_name)].append(row.name)
    return [
        PausedTarget(
            namespace=namespace,
            target=target,
            analyses=tuple(names),
            url=changelist_url(paused__exact="1", namespace=namespace, target_name=target),
            kind=kind,
        )
        for (namespace, kind, target), names in holders.items()
    ]


def detail_context(
    admin: ModelAdminActions, request: HttpRequest, analysis: Analysis
) -> dict[str, Any]:
    """Return what the change page shows besides the form: status, history, graphs, actions."""
    status = AnalysisStatus.from_dict(analysis.status)
    can_act = (
        not analysis.is_deleted
        and admin.has_perm_to_act(request)
        and access.allows(request.user, access.Verb.RESUME, analysis.namespace)
    )
    history = list(
        Evaluation.objects.filter(analysis=analysis)
        .order_by("-started_at", "-id")
        .prefetch_related("metric_results")[:HISTORY_ROWS]
    )
    charts = metric_charts(analysis, latest=status)
    # The history's cells say what each value is, as the metric's card does; a metric that has
    # left the spec as what its row kept says.
    cards = {chart.name: chart for chart in charts}
    for evaluation in history:
        for result in evaluation.metric_results.all():
            card = cards.get(result.name)
            result.cell = card.cell if card is not None else kinds.view_of_result(result).cell
    return {
        "analysis": analysis,
        "status": status,
        "conditions": _conditions(status),
        "metric_results": status.metric_results,
        "history": history,
        "charts": charts,
        "can_resume": can_act and analysis.paused,
        "can_evaluate": can_act,
        "resume_url": reverse("admin:analyses_analysis_resume", args=[analysis.pk]),
        "evaluate_url": reverse("admin:analyses_analysis_evaluate", args=[analysis.pk]),
        "spec_outdated": (
            analysis.observed_generation is not None
            and analysis.observed_generation < analysis.generation
        ),
    }


def metric_charts(
    analysis: Analysis,
    *,
    latest: AnalysisStatus | None = None,
    evaluations: int = CHART_EVALUATIONS,
) -> list[MetricChart]:
    """Return one SVG graph per metric of the spec, from its newest ``evaluations``.

    ``latest`` (the resource's status) supplies each metric's current value and verdict.
    """
    current = {result.name: result for result in (latest.metric_results if latest else ())}
    values = chart_points(analysis, evaluations=evaluations)
    rollout = latest.rollout if latest is not None else None
    started_at = rollout.started_at if rollout is not None else None
    charts = []
    for metric in analysis.metrics.all():
        points = values.get(metric.name, [])
        result = current.get(metric.name)
        view = kinds.view_of(metric)
        # A metric whose value is evidence draws it on a log scale against the evidence needed
        # (``KindView.evidence``): the status's figure, else the newest history row's limit.
        evidence = view.evidence
        needed = next((p.limit for p in reversed(points) if p.limit is not None), None)
        if evidence and result is not None:
            needed = view.needed(result) or needed
        bound = needed if evidence else metric.max_value
        charts.append(
            MetricChart(
                name=metric.name,
                query=metric.query,
                max_value=metric.max_value,
                # render_metric_chart escapes every text it writes.
                svg=mark_safe(
                    render_metric_chart(
                        points,
                        max_value=bound,
                        title=metric.name,
                        rollout_at=started_at,
                        width=960,
                        evidence=evidence,
                    )
                ),
                rates_svg=(
                    mark_safe(
                        render_rates_chart(
                            points, title=metric.name, rollout_at=started_at, width=960
                        )
                    )
                    if evidence
                    else ""
                ),
                band_svg=(
                    mark_safe(
                        render_band_chart(
                            points,
                            title=metric.name,
                            margin=view.band(metric),
                            rollout_at=started_at,
                            width=960,
                        )
                    )
                    if view.band is not None
                    else ""
                ),
                latest_value=result.value if result is not None else None,
                latest_verdict=str(result.verdict) if result is not None else "",
                baseline=result.baseline if result is not None else None,
                samples=result.samples if result is not None else None,
                samples_min=(
                    metric.min_samples_min
                    if metric.min_samples_query and metric.min_samples_min is not None
                    else None
                ),
                series=result.series if result is not None else (),
                kind=view.tag(metric),
                reads=view.reads(metric),
                rule=view.rule(metric, needed),
                sentence=result.message if result is not None else "",
                needed=needed if evidence else None,
                evidence=evidence,
                caption=view.caption(view.tag(metric), metric.max_value),
                sentence_class=view.sentence_class,
                cell=view.cell,
            )
        )
    return charts


def chart_points(
    analysis: Analysis, *, evaluations: int = CHART_EVALUATIONS
) -> dict[str, list[ChartPoint]]:
    """Return each metric's points from the history rows of its newest ``evaluations``.

    Each kind's view adds what its history columns give (``KindView.point``): the two sides'
    medians, or their bad-event rates and the ratio's bounds.
    """
    recent = list(
        Evaluation.objects.filter(analysis=analysis)
        .order_by("-started_at", "-id")
        .values_list("pk", "started_at", "paused")[:evaluations]
    )
    started = {pk: (at, paused) for pk, at, paused in recent}
    values: dict[str, list[ChartPoint]] = defaultdict(list)
    # The history columns the kinds keep of their own ("comparison", "counted"), and a band's.
    columns = [column.name for column in kinds.COLUMNS] + list(kinds.BAND_COLUMNS)
    results = MetricResult.objects.filter(evaluation_id__in=list(started)).values_list(
        "evaluation_id", "name", "value", "baseline", "limit", *columns
    )
    for evaluation_id, name, value, baseline, limit, *own in results:
        at, paused = started[evaluation_id]
        kept = dict(zip(columns, own, strict=True))
        fields = {key: v for view in kinds.VIEWS for key, v in view.point(kept).items()}
        values[name].append(
            ChartPoint(at=at, value=value, paused=paused, baseline=baseline, limit=limit, **fields)
        )
    return values


def resume(admin: ModelAdminActions, request: HttpRequest, object_id: str) -> HttpResponse:
    """Resume the rollout the analysis paused (POST, change permission)."""
    analysis = _actionable(admin, request, object_id)
    actor = request.user.get_username() if request.user.is_authenticated else None
    try:
        result = services.resume_analysis(analysis, actor=actor, via="the web UI")
    except services.ServiceError as exc:
        messages.error(request, describe_failure(exc))
        return _back(analysis)
    if result.target_unpaused:
        messages.success(request, result.message)
    else:
        # Still paused (held before, or by other analyses): say so, and by whom.
        messages.warning(request, result.message)
    admin.log_change(request, result.analysis, "Resumed the rollout.")
    return _back(analysis)


def evaluate(admin: ModelAdminActions, request: HttpRequest, object_id: str) -> HttpResponse:
    """Ask the operator to evaluate the analysis at once (POST, change permission)."""
    analysis = _actionable(admin, request, object_id)
    try:
        services.evaluate_now(analysis)
    except services.ServiceError as exc:
        messages.error(request, describe_failure(exc))
        return _back(analysis)
    messages.success(
        request,
        f"{analysis} will be evaluated within a few seconds; reload the page to see the result.",
    )
    return _back(analysis)


def describe_failure(exc: services.ServiceError) -> str:
    """Return the message shown for a write the cluster did not carry out."""
    if isinstance(exc, services.NothingToRelease | services.UntrustedPauseRecord):
        # Nothing changed in the cluster either: the sentence says why, without a prefix.
        return exc.message
    if isinstance(exc, services.ClusterUnavailable):
        return f"Cluster unreachable: {exc.message}"
    if isinstance(exc, services.ResourceConflict):
        return f"Changed in the cluster: {exc.message}"
    return exc.message


def _actionable(admin: ModelAdminActions, request: HttpRequest, object_id: str) -> Analysis:
    # Change permission (what) and the resume right in the namespace (where); an analysis the
    # user may not see is 404, one they see but may not act on is 403.
    analysis = admin.get_object(request, object_id)
    if analysis is None or analysis.is_deleted:
        raise Http404("No such analysis.")
    if not admin.has_perm_to_act(request) or not access.allows(
        request.user, access.Verb.RESUME, analysis.namespace
    ):
        raise PermissionDenied
    return analysis


def _back(analysis: Analysis) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("admin:analyses_analysis_change", args=[analysis.pk]))


def _conditions(status: AnalysisStatus) -> list[ConditionRow]:
    known = [c for kind in _CONDITION_ORDER if (c := status.condition(kind)) is not None]
    # Conditions another tool added are shown too, after ours.
    others = [c for c in status.conditions if c.type not in _CONDITION_ORDER]
    return [ConditionRow(condition=c, tone=_tone(c)) for c in known + others]


def _tone(condition: Condition) -> str:
    if condition.status == ConditionStatus.UNKNOWN:
        return "unknown"
    # RolloutPaused is the one condition whose True is the bad news.
    healthy = (
        ConditionStatus.FALSE
        if condition.type == ConditionType.ROLLOUT_PAUSED
        else ConditionStatus.TRUE
    )
    return "good" if condition.status == healthy else "bad"
