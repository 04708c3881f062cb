"""Backtest jobs of the REST API (docs/backtest.md): ask for one, follow it, cancel it.

``POST /api/v1/analyses/{ns}/{name}/backtest/`` stores a ``BacktestJob`` (queued) and answers
202 with its URL; the operator runs it (``sentinel_operator.backtest_jobs``: the web app never
queues a task itself). ``GET …/backtest/{id}/`` gives its state, progress and, once finished,
its rollouts and summary; ``DELETE`` on it cancels it. Whoever may view the analysis may
backtest it; a draft ``spec`` needs the right to change it, and its metrics' providers must be
allowed in the namespace.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access, provider_access, scope
from analyses.api.serializers import ErrorSerializer
from analyses.models import Analysis, BacktestJob, BacktestState
from sentinel_core.backtest import (
    DEFAULT_ROLLOUTS,
    MAX_DURATION_LIMIT_SECONDS,
    MAX_ROLLOUTS,
)
from sentinel_core.spec import InvalidSpecError, parse_duration, parse_spec

_VIEW = "analyses.view_analysis"
_CHANGE = "analyses.change_analysis"


class BacktestRequestSerializer(serializers.Serializer):
    """What to backtest: the saved spec or a draft, how many rollouts, how long each at most."""

    spec = serializers.JSONField(
        required=False,
        help_text="A draft spec to try instead of the saved one (needs the right to change it).",
    )
    rollouts = serializers.IntegerField(
        required=False,
        default=DEFAULT_ROLLOUTS,
        min_value=1,
        max_value=MAX_ROLLOUTS,
        help_text="How many of the target's newest rollouts.",
    )
    maxDuration = serializers.CharField(
        required=False,
        default="1h",
        help_text="A rollout ends at the next one or after this long (Go duration, at most 24h).",
    )

    def validate_maxDuration(self, value: str) -> float:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        if seconds > MAX_DURATION_LIMIT_SECONDS:
            raise serializers.ValidationError("at most 24h")
        return seconds


class BacktestRolloutSerializer(serializers.Serializer):
    """What the analysis would have done during one past rollout."""

    revision = serializers.IntegerField()
    hash = serializers.CharField()
    startedAt = serializers.DateTimeField()
    endedAt = serializers.DateTimeField()
    rolledBack = serializers.BooleanField()
    wouldPauseAt = serializers.DateTimeField(allow_null=True)
    evaluation = serializers.IntegerField(allow_null=True)
    metric = serializers.CharField(allow_null=True)
    value = serializers.CharField(allow_null=True)
    limit = serializers.FloatField(allow_null=True)
    message = serializers.CharField()
    verdicts = serializers.DictField(child=serializers.IntegerField())
    noData = serializers.BooleanField()
    evaluations = serializers.ListField(child=serializers.DictField())


class BacktestJobSerializer(serializers.Serializer):
    """A backtest job: its state, progress and, once it succeeded, its rollouts and summary."""

    id = serializers.IntegerField()
    url = serializers.CharField()
    analysis = serializers.CharField()
    state = serializers.ChoiceField(choices=[s.value for s in BacktestState])
    progress = serializers.FloatField(help_text="The share of evaluations replayed, 0 to 1.")
    draft = serializers.BooleanField(help_text="Whether a draft spec was backtested.")
    createdAt = serializers.DateTimeField()
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()
    rollouts = BacktestRolloutSerializer(many=True)
    summary = serializers.DictField(allow_null=True)


def job_body(job: BacktestJob, request: Request) -> dict[str, Any]:
    """Return the job's JSON, as ``GET`` gives it, with its absolute URL."""
    result = job.result or {}
    path = reverse(
        "api:analysis-backtest-job",
        kwargs={"namespace": job.namespace, "name": job.name, "pk": job.pk},
    )
    return {
        "id": job.pk,
        "url": request.build_absolute_uri(path),
        "analysis": f"{job.namespace}/{job.name}",
        "state": job.state,
        "progress": job.progress,
        "draft": job.draft is not None,
        "createdAt": job.created_at,
        "startedAt": job.started_at,
        "finishedAt": job.finished_at,
        "error": job.error,
        "rollouts": result.get("rollouts", []),
        "summary": result.get("summary"),
    }


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=ErrorSerializer, description=description)


_ERRORS = {
    401: _error("No or invalid credentials."),
    403: _error("The user may not view (or, with a draft, change) this analysis."),
    404: _error("No such analysis (or job)."),
}


class _AnalysisScoped(APIView):
    # Authenticated users; the model permissions and namespace rights are checked per request.
    permission_classes = [IsAuthenticated]

    def _analysis(self, request: Request, namespace: str, name: str, *, edit: bool) -> Analysis:
        live: QuerySet[Analysis] = Analysis.objects.live()
        analysis = get_object_or_404(
            access.visible(request.user, live), namespace=namespace, name=name
        )
        if not request.user.has_perm(_VIEW) or not access.allows(
            request.user, access.Verb.GET, namespace
        ):
            raise PermissionDenied(f"You may not view analyses in namespace {namespace}.")
        if edit and not (
            request.user.has_perm(_CHANGE)
            and access.allows(request.user, access.Verb.UPDATE, namespace)
        ):
            raise PermissionDenied(
                f"A draft spec needs the right to change analyses in namespace {namespace}."
            )
        return analysis


class BacktestListView(_AnalysisScoped):
    """Ask for a backtest of one analysis."""

    @extend_schema(
        summary="Backtest on past rollouts",
        description=(
            "Replays the analysis (or a draft spec) over the target's past rollouts, as the "
            "operator would have evaluated them; nothing is written to the cluster or the "
            "status. Runs as a job in the operator: follow the URL answered. docs/backtest.md."
        ),
        request=BacktestRequestSerializer,
        responses={
            202: BacktestJobSerializer,
            400: OpenApiResponse(description="Invalid input, field by field; nothing stored."),
            **_ERRORS,
        },
    )
    def post(self, request: Request, namespace: str, name: str) -> Response:
        given = BacktestRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        draft = data.get("spec")
        self._analysis(request, namespace, name, edit=draft is not None)
        if draft is not None:
            _check_draft(namespace, draft)
        job = BacktestJob.objects.create(
            namespace=namespace,
            name=name,
            requested_by=request.user.get_username(),
            draft=draft,
            rollouts=data["rollouts"],
            max_duration_seconds=data["maxDuration"],
            next_attempt_at=timezone.now(),
        )
        body = job_body(job, request)
        return Response(
            BacktestJobSerializer(body).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": body["url"]},
        )


class BacktestJobView(_AnalysisScoped):
    """One backtest job: follow it, or cancel it."""

    def _job(self, request: Request, namespace: str, name: str, pk: int) -> BacktestJob:
        self._analysis(request, namespace, name, edit=False)
        return get_object_or_404(BacktestJob, pk=pk, namespace=namespace, name=name)

    @extend_schema(
        summary="A backtest job",
        description="Its state (queued, running, succeeded, failed, cancelled) and progress; "
        "once succeeded, one entry per rollout and the summary.",
        responses={200: BacktestJobSerializer, **_ERRORS},
    )
    def get(self, request: Request, namespace: str, name: str, pk: int) -> Response:
        job = self._job(request, namespace, name, pk)
        return Response(BacktestJobSerializer(job_body(job, request)).data)

    @extend_schema(
        summary="Cancel a backtest job",
        description="A queued job is cancelled at once, a running one between two "
        "evaluations; a finished one is left as it is.",
        request=None,
        responses={200: BacktestJobSerializer, **_ERRORS},
    )
    def delete(self, request: Request, namespace: str, name: str, pk: int) -> Response:
        job = self._job(request, namespace, name, pk)
        jobs = BacktestJob.objects.filter(pk=job.pk)
        jobs.filter(state=BacktestState.QUEUED).update(
            state=BacktestState.CANCELLED, finished_at=timezone.now(), next_attempt_at=None
        )
        jobs.filter(state=BacktestState.RUNNING).update(cancel_requested=True)
        job.refresh_from_db()
        return Response(BacktestJobSerializer(job_body(job, request)).data)


def _check_draft(namespace: str, draft: Any) -> None:
    """Raise a 400 for a draft spec that is invalid or uses providers the namespace may not."""
    try:
        spec = parse_spec(draft, strict=True)
    except InvalidSpecError as exc:
        raise serializers.ValidationError(exc.by_field()) from None
    if not scope.in_scope(namespace):
        raise serializers.ValidationError({"namespace": [scope.outside_message(namespace)]})
    refused = provider_access.refusals(namespace, [m.provider for m in spec.metrics])
    if refused:
        raise serializers.ValidationError(refused)
