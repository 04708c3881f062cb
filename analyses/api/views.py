"""The analysis endpoints of docs/api.md, composed from DRF mixins and hooks.

Reads come from the mirror (fast, and what the operator and the admin see); writes go through
``analyses.services``, which writes the cluster first and mirrors its answer. Routes are in
``analyses.api.urls`` (DRF routers know only one lookup field; an analysis has two).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.filters import SearchFilter
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import access
from analyses import services
from analyses.api.filters import AnalysisFilter, EvaluationWindowFilter
from analyses.api.pagination import AnalysisPagination, EvaluationPagination
from analyses.api.permissions import AnalysisPermissions
from analyses.api.serializers import (
    AnalysisSerializer,
    AnalysisUpdateSerializer,
    ErrorSerializer,
    EvaluateSerializer,
    EvaluationSerializer,
    ReleaseSerializer,
    ResumeSerializer,
)
from analyses.api.throttles import EvaluateThrottle
from analyses.models import Analysis, Evaluation

_FIELD_ERRORS = OpenApiResponse(
    response={
        "oneOf": [
            {
                "type": "object",
                "description": "Messages keyed by field path (non_field_errors for the body).",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "example": {"spec.metrics[0].maxValue": ["is required"]},
            },
            {
                "type": "object",
                "description": "A body that is not JSON, or a malformed query parameter value.",
                "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
                "required": ["detail", "code"],
            },
        ]
    },
    description="Invalid input; nothing was written anywhere.",
)


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=ErrorSerializer, description=description)


_READ_ERRORS = {
    401: _error("No or invalid credentials."),
    403: _error("The user lacks the model permission or the right in this namespace."),
}
_DETAIL_ERRORS = {**_READ_ERRORS, 404: _error("No such analysis.")}
_WRITE_ERRORS = {
    **_DETAIL_ERRORS,
    409: _error("The resource changed in the cluster (or already exists); nothing was written."),
    502: _error("The cluster refused Rollout Sentinel's credentials; nothing was written."),
    503: _error("The cluster cannot be reached; nothing was written."),
}
_RESOURCE_VERSION = OpenApiParameter(
    "resourceVersion",
    str,
    description="Delete only if the resource is still at this version (default: the mirror's).",
)


@extend_schema_view(
    list=extend_schema(
        summary="List analyses",
        description="Live analyses from the mirror, ordered by namespace and name.",
        responses={
            200: AnalysisSerializer(many=True),
            400: _FIELD_ERRORS,
            **_READ_ERRORS,
            404: _error("No such page."),
        },
    ),
    create=extend_schema(
        summary="Create an analysis",
        description="Created in the cluster first, then mirrored from the API server's answer.",
        responses={201: AnalysisSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    ),
    retrieve=extend_schema(
        summary="Get an analysis",
        responses={200: AnalysisSerializer, **_DETAIL_ERRORS},
    ),
    update=extend_schema(
        summary="Replace the spec",
        description="Applied in the cluster only if it is still at resourceVersion.",
        request=AnalysisUpdateSerializer,
        responses={200: AnalysisSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    ),
    partial_update=extend_schema(
        summary="Change part of the spec",
        description="The given spec is merged into the current one (JSON merge patch).",
        responses={200: AnalysisSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    ),
    destroy=extend_schema(
        summary="Delete an analysis",
        description="Deleted in the cluster; the history is kept for the retention period.",
        parameters=[_RESOURCE_VERSION],
        responses={204: None, **_WRITE_ERRORS},
    ),
)
class AnalysisViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """RolloutAnalyses, addressed by namespace and name."""

    # Deleted incarnations stay in the mirror for their history; the API shows live ones.
    queryset = Analysis.objects.live().order_by("namespace", "name")
    serializer_class = AnalysisSerializer
    # view / add / change / delete on Analysis; resume and evaluate need change.
    permission_classes = [AnalysisPermissions]
    # Numbered pages of 50.
    pagination_class = AnalysisPagination
    # ?namespace= ?verdict= ?paused= and ?search=.
    filter_backends = [AnalysisFilter, SearchFilter]
    # ?search= matches any of these, case-insensitively.
    search_fields = ["name", "namespace", "target_name"]

    # What each action asks of accounts.access, besides the model permission.
    verbs = {
        "retrieve": access.Verb.GET,
        "evaluations": access.Verb.GET,
        "update": access.Verb.UPDATE,
        "partial_update": access.Verb.PATCH,
        "destroy": access.Verb.DELETE,
        "resume": access.Verb.RESUME,
        "evaluate": access.Verb.RESUME,
    }

    def get_queryset(self) -> QuerySet[Analysis]:
        # Only the namespaces the user may list, inside SENTINEL_NAMESPACES: the rest is 404.
        return access.visible(self.request.user, super().get_queryset())

    def get_object(self) -> Analysis:
        # List filters do not apply to a lookup by namespace and name.
        analysis = get_object_or_404(
            self.get_queryset(), namespace=self.kwargs["namespace"], name=self.kwargs["name"]
        )
        self.check_object_permissions(self.request, analysis)
        # OPTIONS ("metadata") looks the object up to describe the forms: a read.
        verb = self.verbs.get(self.action, access.Verb.GET)
        if not access.allows(self.request.user, verb, analysis.namespace):
            # Seen (listed) but not allowed: 403, where an unseen one was 404 above.
            raise PermissionDenied(
                f"You may not {verb.value} analyses in namespace {analysis.namespace}."
            )
        return analysis

    def perform_create(self, serializer: AnalysisSerializer) -> None:
        data = serializer.validated_data
        if not access.allows(self.request.user, access.Verb.CREATE, data["namespace"]):
            raise PermissionDenied(f"You may not create analyses in namespace {data['namespace']}.")
        serializer.instance = services.create_analysis(
            data["namespace"], data["name"], data["spec"]
        )

    def get_success_headers(self, data: Any) -> dict[str, str]:
        location = reverse(
            "api:analysis-detail", kwargs={"namespace": data["namespace"], "name": data["name"]}
        )
        return {"Location": location}

    def perform_update(self, serializer: AnalysisSerializer) -> None:
        data = serializer.validated_data
        if "spec" not in data:
            # A PATCH without a spec changes nothing; the cluster is not asked.
            return
        serializer.instance = services.update_analysis(
            serializer.instance, data["spec"], resource_version=data.get("resource_version")
        )

    def perform_destroy(self, instance: Analysis) -> None:
        services.delete_analysis(
            instance, resource_version=self.request.query_params.get("resourceVersion")
        )

    @extend_schema(
        summary="Evaluation history",
        description="Newest first, with cursor pagination; since is inclusive, until exclusive.",
        responses={200: EvaluationSerializer(many=True), 400: _FIELD_ERRORS, **_DETAIL_ERRORS},
    )
    @action(
        detail=True,
        methods=["get"],
        serializer_class=EvaluationSerializer,
        pagination_class=EvaluationPagination,
        filter_backends=[EvaluationWindowFilter],
    )
    def evaluations(self, request: Request, namespace: str, name: str) -> Response:
        history: QuerySet[Evaluation] = self.get_object().evaluations.prefetch_related(
            "metric_results"
        )
        page = self.paginate_queryset(self.filter_queryset(history))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        summary="Resume the rollout",
        description=(
            "Takes this analysis out of the pause record of its target (in the analysis's "
            "namespace). The last analysis holding the target gives it back what it had before "
            "the first pause: a target someone had paused before stays paused; while other "
            "analyses hold it, it stays paused and release.heldBy names them. Then resets the "
            "failure count in the status (RolloutPaused=False/ResumedByUser). An analysis that "
            "holds nothing on its target (code nothing_to_release), or a pause record that "
            "disagrees with the target (code untrusted_pause_record), is a 409 and changes "
            "nothing (docs/status.md#pausing-each-kind)."
        ),
        request=None,
        responses={
            200: ResumeSerializer,
            **_WRITE_ERRORS,
            409: _error(
                "The analysis holds nothing on its target (nothing_to_release), its pause record "
                "cannot be trusted (untrusted_pause_record), or the resource changed in the "
                "cluster (conflict); nothing was changed."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, namespace: str, name: str) -> Response:
        result = services.resume_analysis(
            self.get_object(), actor=request.user.get_username(), via="the REST API"
        )
        release = {
            "target": result.target,
            "outcome": str(result.outcome),
            "held_by": list(result.held_by),
            "message": result.message,
        }
        body = {**AnalysisSerializer(result.analysis).data}
        body["release"] = ReleaseSerializer(release).data
        return Response(body)

    @extend_schema(
        summary="Evaluate now",
        description="The operator evaluates the analysis within about a second.",
        request=None,
        responses={
            202: EvaluateSerializer,
            **_DETAIL_ERRORS,
            429: _error("Too many evaluate requests; retry after Retry-After seconds."),
            409: _error("The analysis was deleted meanwhile."),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        serializer_class=EvaluateSerializer,
        throttle_classes=[EvaluateThrottle],
    )
    def evaluate(self, request: Request, namespace: str, name: str) -> Response:
        analysis = self.get_object()
        due = services.evaluate_now(analysis)
        body = {"namespace": analysis.namespace, "name": analysis.name, "nextDueAt": due}
        return Response(EvaluateSerializer(body).data, status=status.HTTP_202_ACCEPTED)
