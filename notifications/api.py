"""``GET /api/v1/analyses/{namespace}/{name}/notifications/``: the deliveries of one analysis.

The view is the REST API's own ``AnalysisViewSet`` with one more action, so authentication,
the ``SENTINEL_NAMESPACES`` scope and the per-namespace authorization are exactly those of
``…/evaluations/`` (view permission on Analysis and ``get`` in the namespace). Routed by
``sentinel_site.urls`` ahead of the API's catch-all, since ``analyses`` may not import this app.
Channel URLs are never part of the answer: only the channel's name.
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import access
from analyses.api.serializers import ErrorSerializer
from analyses.api.views import AnalysisViewSet
from notifications.models import Delivery, DeliveryAttempt


class DeliveryAttemptSerializer(serializers.ModelSerializer):
    startedAt = serializers.DateTimeField(source="started_at")
    durationSeconds = serializers.FloatField(source="duration_seconds")

    class Meta:
        model = DeliveryAttempt
        fields = ["startedAt", "durationSeconds", "ok", "error"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    """One message of one event to one channel, and how its delivery went."""

    transitionAt = serializers.DateTimeField(source="transition_at")
    createdAt = serializers.DateTimeField(source="created_at")
    sentAt = serializers.DateTimeField(source="sent_at", allow_null=True)
    nextAttemptAt = serializers.SerializerMethodField()
    lastError = serializers.CharField(source="last_error")
    tries = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "event",
            "channel",
            "message",
            "transitionAt",
            "createdAt",
            "state",
            "attempts",
            "sentAt",
            "nextAttemptAt",
            "lastError",
            "tries",
        ]
        read_only_fields = fields

    def get_nextAttemptAt(self, delivery: Delivery) -> str | None:
        # Only a pending delivery has a next try; otherwise it is a leftover claim.
        if delivery.state != "pending" or delivery.next_attempt_at is None:
            return None
        return serializers.DateTimeField().to_representation(delivery.next_attempt_at)


class DeliveryPagination(CursorPagination):
    """Newest first, 50 a page; served by the (analysis, -created_at, -id) index."""

    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    # Never unbounded pages.
    max_page_size = 500


class AnalysisNotificationsViewSet(AnalysisViewSet):
    """The REST API's analyses, with their notifications."""

    verbs = {**AnalysisViewSet.verbs, "notifications": access.Verb.GET}

    @extend_schema(
        summary="Notifications",
        description=(
            "The messages sent (or being sent) for this analysis: one per transition and "
            "channel, newest first, with every delivery attempt."
        ),
        responses={
            200: DeliverySerializer(many=True),
            401: OpenApiResponse(ErrorSerializer, description="No or invalid credentials."),
            403: OpenApiResponse(
                ErrorSerializer,
                description="The user lacks the model permission or the right in this namespace.",
            ),
            404: OpenApiResponse(
                ErrorSerializer, description="No such analysis (or an invalid cursor)."
            ),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        serializer_class=DeliverySerializer,
        pagination_class=DeliveryPagination,
        filter_backends=[],
    )
    def notifications(self, request: Request, namespace: str, name: str) -> Response:
        rows: QuerySet[Delivery] = Delivery.objects.filter(
            analysis=self.get_object()
        ).prefetch_related("tries")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


notifications_view = AnalysisNotificationsViewSet.as_view(
    {"get": "notifications"}, detail=True, **AnalysisNotificationsViewSet.notifications.kwargs
)
