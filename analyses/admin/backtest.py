"""The admin's backtest: a button on the analysis page and a page that follows the job.

``AnalysisAdmin`` routes ``<id>/backtest/`` (POST: store a job for the saved spec, as the REST
API does) and ``<id>/backtest/<job>/`` (the job's page: a progress bar while it runs, reloading
itself every two seconds, then a row per rollout and, per rollout, each metric's graph over its
replayed evaluations with the would-be pause marked, drawn by the analysis page's chart code).
The edit form's and the add form's *Try on past rollouts* button stores a job for the draft spec
the form holds, unsaved (``start_draft``, called by ``AnalysisAdmin.save_related`` once the form
validated, edit or create rights and the namespace's provider allow-list checked); the add
form's job, of an analysis not created yet, has a page of its own, ``backtest/<job>/``
(``draft_page``). The operator runs the job (docs/backtest.md). Whoever may view the analysis
may backtest it; a draft needs the rights a save would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from accounts import access, scope
from analyses.charts import ChartPoint, render_metric_chart
from analyses.models import Analysis, BacktestJob
from sentinel_core.backtest import DEFAULT_MAX_DURATION_SECONDS, DEFAULT_ROLLOUTS
from sentinel_core.values import parse_time


class BacktestAdmin(Protocol):
    """What the backtest pages need from the model admin that routes them."""

    def get_object(self, request: HttpRequest, object_id: str) -> Analysis | None: ...

    @property
    def admin_site(self) -> Any: ...


def start(admin: BacktestAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """Store a backtest job of the saved spec and show its page (POST)."""
    analysis = _viewable(admin, request, object_id)
    job = BacktestJob.objects.create(
        namespace=analysis.namespace,
        name=analysis.name,
        requested_by=request.user.get_username(),
        rollouts=DEFAULT_ROLLOUTS,
        max_duration_seconds=DEFAULT_MAX_DURATION_SECONDS,
        next_attempt_at=timezone.now(),
    )
    return HttpResponseRedirect(
        reverse("admin:analyses_analysis_backtest_job", args=[analysis.pk, job.pk])
    )


def start_draft(request: HttpRequest, analysis: Analysis, draft: Mapping[str, Any]) -> str:
    """Store a backtest job of ``draft`` (the caller checked edit rights); return its page.

    ``analysis`` is the edit form's, or the add form's not yet created (no primary key): its
    job's page is then found by the job alone (``draft_page``).
    """
    job = BacktestJob.objects.create(
        namespace=analysis.namespace,
        name=analysis.name,
        requested_by=request.user.get_username(),
        draft=dict(draft),
        rollouts=DEFAULT_ROLLOUTS,
        max_duration_seconds=DEFAULT_MAX_DURATION_SECONDS,
        next_attempt_at=timezone.now(),
    )
    if analysis.pk is None:
        return reverse("admin:analyses_analysis_backtest_draft", args=[job.pk])
    return reverse("admin:analyses_analysis_backtest_job", args=[analysis.pk, job.pk])


def page(admin: BacktestAdmin, request: HttpRequest, object_id: str, job_id: str) -> HttpResponse:
    """Show a backtest job: its progress while it runs, its rollouts once done."""
    analysis = _viewable(admin, request, object_id)
    job = get_object_or_404(
        BacktestJob, pk=int(job_id), namespace=analysis.namespace, name=analysis.name
    )
    return _page(
        admin,
        request,
        job,
        str(analysis),
        reverse("admin:analyses_analysis_change", args=[analysis.pk]),
    )


def draft_page(admin: BacktestAdmin, request: HttpRequest, job_id: int) -> HttpResponse:
    """Show the backtest job of a draft tried on the add form: no analysis of its name yet.

    Whoever may view analyses in the job's namespace may see it, as they could the analysis
    once created; elsewhere it does not exist (404).
    """
    job = get_object_or_404(BacktestJob, pk=job_id, draft__isnull=False)
    if not (
        request.user.has_perm("analyses.view_analysis")
        and scope.in_scope(job.namespace)
        and access.allows(request.user, access.Verb.GET, job.namespace)
    ):
        raise Http404("No such backtest.")
    return _page(
        admin,
        request,
        job,
        f"draft {job.namespace}/{job.name}",
        reverse("admin:analyses_analysis_changelist"),
    )


def _page(
    admin: BacktestAdmin, request: HttpRequest, job: BacktestJob, analysis: str, back: str
) -> HttpResponse:
    result = job.result or {}
    context = {
        **admin.admin_site.each_context(request),
        "title": f"Backtest of {analysis}",
        "analysis": analysis,
        "job": job,
        "percent": round(job.progress * 100),
        "rollouts": result.get("rollouts", []),
        "graphs": [_graphs(r) for r in result.get("rollouts", [])],
        "summary": result.get("summary"),
        "analysis_url": back,
    }
    return TemplateResponse(request, "admin/analyses/analysis/backtest.html", context)


def _viewable(admin: BacktestAdmin, request: HttpRequest, object_id: str) -> Analysis:
    # An analysis the user may not see is 404; one seen but not viewable here is 403.
    analysis = admin.get_object(request, object_id)
    if analysis is None or analysis.is_deleted:
        raise Http404("No such analysis.")
    if not request.user.has_perm("analyses.view_analysis") or not access.allows(
        request.user, access.Verb.GET, analysis.namespace
    ):
        raise PermissionDenied
    return analysis


@dataclass(frozen=True)
class RolloutGraphs:
    """One replayed rollout's graphs: one per metric, the would-be pause marked."""

    revision: int
    paused: bool
    graphs: tuple[tuple[str, SafeString], ...]


def _graphs(rollout: Mapping[str, Any]) -> RolloutGraphs:
    """Return each metric's graph over ``rollout``'s replayed evaluations."""
    steps: Sequence[Mapping[str, Any]] = rollout.get("evaluations") or []
    names: list[str] = []
    for step in steps:
        names += [m["name"] for m in step.get("metrics", []) if m["name"] not in names]
    started = parse_time(rollout["startedAt"])
    graphs = []
    for name in names:
        points = [
            ChartPoint(
                at=parse_time(step["at"]),
                value=_number(metric.get("value")),
                # The pause is drawn on the metric that made it.
                paused=bool(step.get("paused")) and rollout.get("metric") == name,
                limit=metric.get("limit"),
            )
            for step in steps
            for metric in step.get("metrics", [])
            if metric["name"] == name
        ]
        limits = [p.limit for p in points if p.limit is not None]
        svg = render_metric_chart(
            points,
            max_value=min(limits) if limits else None,
            # Unique per rollout: the graph's ids are made from its title.
            title=f"{name} revision {rollout['revision']}",
            rollout_at=started,
            width=960,
        )
        # render_metric_chart escapes every text it writes.
        graphs.append((name, mark_safe(svg)))
    return RolloutGraphs(int(rollout["revision"]), bool(rollout.get("wouldPauseAt")), tuple(graphs))


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
