"""The template endpoints of docs/api.md#templates: both kinds, read and written in the cluster.

No mirror: each request is one or two requests to the Kubernetes API server (templates are
few), whose validation is the template CRDs' (schema and CEL rules, field paths in a 400).

Who may do what (docs/security.md#who-can-do-what): the model permissions on ``Analysis``
(view / add / change / delete) as for analyses; a namespaced template also needs the user's
right in its namespace, as an analysis there would (``accounts.access``); a cluster template
is read by anyone who may view analyses, and written only by those ``accounts.access`` lets
(superusers, or RBAC's answer in kubernetes mode), since it changes the guard of every
namespace that uses it.
"""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import access, scope
from analyses import templates_service as service
from analyses.api.permissions import AnalysisPermissions
from analyses.api.serializers import ErrorSerializer
from analyses.models import Analysis
from sentinel_core.spec import DNS1123_LABEL, DNS1123_SUBDOMAIN

_SPEC_DESCRIPTION = (
    "The template's spec as in the custom resource (docs/templates.md): metrics, args and the "
    "optional interval, failureLimit, failureWindow, falsePauseRate and description. The API "
    "server validates it."
)


class TemplateSerializer(serializers.Serializer):
    """A template as the custom resource holds it."""

    namespace = serializers.CharField(
        read_only=True, help_text="Absent for a cluster template.", required=False
    )
    name = serializers.CharField(max_length=253)
    resourceVersion = serializers.CharField(read_only=True)
    generation = serializers.IntegerField(read_only=True)
    createdAt = serializers.CharField(read_only=True)
    spec = serializers.JSONField(help_text=_SPEC_DESCRIPTION)

    def validate_name(self, value: str) -> str:
        if not re.fullmatch(DNS1123_SUBDOMAIN, value):
            raise serializers.ValidationError(
                "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'"
            )
        return value

    def validate_spec(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be an object")
        return value

    def to_representation(self, instance: Any) -> dict[str, Any]:
        meta = instance.get("metadata") or {}
        body: dict[str, Any] = {}
        if meta.get("namespace"):
            body["namespace"] = meta["namespace"]
        return {
            **body,
            "name": meta.get("name"),
            "resourceVersion": meta.get("resourceVersion"),
            "generation": meta.get("generation"),
            "createdAt": meta.get("creationTimestamp"),
            "spec": instance.get("spec") or {},
        }


class TemplateUpdateSerializer(serializers.Serializer):
    """A replacement spec, applied only if the template is still at ``resourceVersion``."""

    spec = serializers.JSONField(help_text=_SPEC_DESCRIPTION)
    resourceVersion = serializers.CharField(
        required=False,
        help_text="Replace only if the template is still at this version (default: as read).",
    )

    def validate_spec(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be an object")
        return value


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=ErrorSerializer, description=description)


_FIELD_ERRORS = OpenApiResponse(
    response={
        "oneOf": [
            {
                "type": "object",
                "description": "Messages keyed by field path, from the API server's validation.",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "example": {"spec.metrics[0].maxValue": ["Required value"]},
            },
            {
                "type": "object",
                "description": "A body that is not JSON.",
                "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
                "required": ["detail", "code"],
            },
        ]
    },
    description="Invalid input; nothing was written.",
)
_READ_ERRORS = {
    401: _error("No or invalid credentials."),
    403: _error("The user lacks the model permission or the right in this namespace."),
    502: _error("The cluster refused Rollout Sentinel's credentials."),
    503: _error("The cluster cannot be reached."),
}
_DETAIL_ERRORS = {**_READ_ERRORS, 404: _error("No such template.")}
_LIST_ERRORS = {**_READ_ERRORS, 404: _error("The path's namespace is not a namespace name.")}
_WRITE_ERRORS = {
    **_DETAIL_ERRORS,
    409: _error("The template changed in the cluster (or already exists); nothing was written."),
}
_RESOURCE_VERSION = OpenApiParameter(
    "resourceVersion", str, description="Delete only if the template is still at this version."
)

# Said to a user who may not change cluster templates (accounts.access decides who may).
CLUSTER_WRITE_REFUSED = (
    "You may not change cluster templates: they guard every namespace (superusers only, or "
    "the Kubernetes RBAC on clusterrolloutanalysistemplates with SENTINEL_AUTHZ=kubernetes)."
)

# The access verb of each HTTP method on one template (checked before the handler runs).
_DETAIL_VERBS = {
    "GET": access.Verb.GET,
    "HEAD": access.Verb.GET,
    "OPTIONS": access.Verb.GET,
    "PUT": access.Verb.UPDATE,
    "DELETE": access.Verb.DELETE,
}


class _TemplateView(GenericAPIView):  # type: ignore[type-arg]
    """Shared by the four views: permissions, the kind, and who may act where."""

    kind: service.Kind = service.NAMESPACED
    # The model permissions are those on Analysis; the queryset only names the model.
    queryset = Analysis.objects.none()
    permission_classes = [AnalysisPermissions]
    serializer_class = TemplateSerializer
    pagination_class = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # A path segment that cannot name a Kubernetes object names nothing: 404, and the
        # API server is never sent it.
        namespace, name = kwargs.get("namespace"), kwargs.get("name")
        if namespace is not None and not (
            len(namespace) <= 63 and re.fullmatch(DNS1123_LABEL, namespace)
        ):
            raise exceptions.NotFound(f"No namespace {namespace!r}.")
        if name is not None and not (len(name) <= 253 and re.fullmatch(DNS1123_SUBDOMAIN, name)):
            raise exceptions.NotFound(f"No {self.kind.name} {name!r}.")
        if name is not None:
            self.authorize(namespace, _DETAIL_VERBS.get(request.method or "", access.Verb.GET))

    def authorize(self, namespace: str | None, verb: access.Verb) -> None:
        user = self.request.user
        if namespace is not None:
            if not scope.in_scope(namespace):
                # As for analyses (docs/security.md): a create there is a 400 naming the
                # namespace; anything else finds nothing.
                message = scope.outside_message(namespace)
                if verb == access.Verb.CREATE:
                    raise exceptions.ValidationError({"namespace": [message]})
                raise exceptions.NotFound(message[0].upper() + message[1:] + ".")
            if not access.allows(user, verb, namespace):
                raise exceptions.PermissionDenied(
                    f"You may not {verb.value} templates in namespace {namespace}."
                )
            return
        if verb not in (access.Verb.GET, access.Verb.LIST) and not (
            access.may_write_cluster_templates(user, verb)
        ):
            raise exceptions.PermissionDenied(CLUSTER_WRITE_REFUSED)

    def answer(self, resource: dict[str, Any], code: int = status.HTTP_200_OK) -> Response:
        return Response(TemplateSerializer(resource).data, status=code)

    def get_object(self) -> dict[str, Any]:
        # OPTIONS (DRF's metadata) looks the object up before describing the PUT form.
        return self.found(self.kwargs.get("namespace"), self.kwargs["name"])

    def found(self, namespace: str | None, name: str) -> dict[str, Any]:
        try:
            return service.get_template(self.kind, namespace, name)
        except service.TemplateNotFound as exc:
            raise exceptions.NotFound(str(exc)) from exc

    def create(self, request: Request, namespace: str | None) -> Response:
        self.authorize(namespace, access.Verb.CREATE)
        incoming = TemplateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        created = service.create_template(self.kind, namespace, data["name"], data["spec"])
        response = self.answer(created, status.HTTP_201_CREATED)
        response["Location"] = self.location(namespace, data["name"])
        return response

    def location(self, namespace: str | None, name: str) -> str:
        if namespace is None:
            return reverse("api:clustertemplate-detail", kwargs={"name": name})
        return reverse("api:template-detail", kwargs={"namespace": namespace, "name": name})

    def replace(self, request: Request, namespace: str | None, name: str) -> Response:
        incoming = TemplateUpdateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            updated = service.replace_template(
                self.kind,
                namespace,
                name,
                data["spec"],
                resource_version=data.get("resourceVersion"),
            )
        except service.TemplateNotFound as exc:
            raise exceptions.NotFound(str(exc)) from exc
        return self.answer(updated)

    def remove(self, request: Request, namespace: str | None, name: str) -> Response:
        try:
            service.delete_template(
                self.kind,
                namespace,
                name,
                resource_version=request.query_params.get("resourceVersion") or None,
            )
        except service.TemplateNotFound as exc:
            raise exceptions.NotFound(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


class TemplateListView(_TemplateView):
    """The RolloutAnalysisTemplates of one namespace."""

    @extend_schema(
        summary="List a namespace's templates",
        description="Read from the cluster (templates have no mirror), ordered by name.",
        responses={200: TemplateSerializer(many=True), **_LIST_ERRORS},
    )
    def get(self, request: Request, namespace: str) -> Response:
        self.authorize(namespace, access.Verb.LIST)
        items = service.list_templates(self.kind, namespace)
        return Response(TemplateSerializer(items, many=True).data)

    @extend_schema(
        summary="Create a template",
        description="Created in the cluster, which validates it.",
        request=TemplateSerializer,
        responses={201: TemplateSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    )
    def post(self, request: Request, namespace: str) -> Response:
        return self.create(request, namespace)


class TemplateDetailView(_TemplateView):
    """One RolloutAnalysisTemplate."""

    @extend_schema(summary="Get a template", responses={200: TemplateSerializer, **_DETAIL_ERRORS})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        return self.answer(self.found(namespace, name))

    @extend_schema(
        summary="Replace a template's spec",
        description="Applied in the cluster only if it is still at resourceVersion (when given).",
        request=TemplateUpdateSerializer,
        responses={200: TemplateSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    )
    def put(self, request: Request, namespace: str, name: str) -> Response:
        return self.replace(request, namespace, name)

    @extend_schema(
        summary="Delete a template",
        description="Deleted in the cluster; the analyses using it become Ready=False.",
        parameters=[_RESOURCE_VERSION],
        responses={204: None, **_WRITE_ERRORS},
    )
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        return self.remove(request, namespace, name)


class ClusterTemplateListView(_TemplateView):
    """The ClusterRolloutAnalysisTemplates."""

    kind = service.CLUSTER

    @extend_schema(
        summary="List cluster templates",
        description="Read from the cluster (templates have no mirror), ordered by name.",
        responses={200: TemplateSerializer(many=True), **_READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        items = service.list_templates(self.kind)
        return Response(TemplateSerializer(items, many=True).data)

    @extend_schema(
        summary="Create a cluster template",
        description="Superusers only. Created in the cluster, which validates it.",
        request=TemplateSerializer,
        responses={201: TemplateSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    )
    def post(self, request: Request) -> Response:
        return self.create(request, None)


class ClusterTemplateDetailView(_TemplateView):
    """One ClusterRolloutAnalysisTemplate."""

    kind = service.CLUSTER

    @extend_schema(
        summary="Get a cluster template", responses={200: TemplateSerializer, **_DETAIL_ERRORS}
    )
    def get(self, request: Request, name: str) -> Response:
        return self.answer(self.found(None, name))

    @extend_schema(
        summary="Replace a cluster template's spec",
        description=(
            "Superusers only. Applied in the cluster only if it is still at resourceVersion "
            "(when given)."
        ),
        request=TemplateUpdateSerializer,
        responses={200: TemplateSerializer, 400: _FIELD_ERRORS, **_WRITE_ERRORS},
    )
    def put(self, request: Request, name: str) -> Response:
        return self.replace(request, None, name)

    @extend_schema(
        summary="Delete a cluster template",
        description="Superusers only. The analyses using it become Ready=False.",
        parameters=[_RESOURCE_VERSION],
        responses={204: None, **_WRITE_ERRORS},
    )
    def delete(self, request: Request, name: str) -> Response:
        return self.remove(request, None, name)
