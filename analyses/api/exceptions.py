"""Turn service errors into HTTP answers, and make every API error JSON with a stable code.

Installed as ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``. Error bodies are ``{"detail", "code"}``,
except field validation (400), which is ``{field path: [messages]}`` as DRF has it; even an
unexpected exception is a logged JSON 500, never Django's HTML page.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import utils as db_utils
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from analyses import services

log = logging.getLogger(__name__)

# Clients may retry a 503 after this many seconds (the cluster may be back by then).
RETRY_AFTER_SECONDS = 5


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource changed in the cluster; reload it and try again."
    default_code = "conflict"


class ClusterUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The Kubernetes API server cannot be reached."
    default_code = "cluster_unavailable"


class ClusterRefused(exceptions.APIException):
    """The cluster refused the app itself (its RBAC): a gateway problem, not the user's."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The Kubernetes API server refused the request."
    default_code = "cluster_refused"


class DatabaseUnavailable(exceptions.APIException):
    """PostgreSQL restarting or unreachable: an outage to wait out, not a bug (no traceback)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The database cannot be reached; try again shortly."
    default_code = "database_unavailable"


def _api_exception(exc: Exception) -> Exception:
    # Django's own errors, as DRF's handler would convert them, so they get a code too.
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, services.ResourceRejected):
        key = api_settings.NON_FIELD_ERRORS_KEY
        return exceptions.ValidationError(
            {field or key: messages for field, messages in exc.field_errors.items()}
        )
    if isinstance(exc, services.NothingToRelease | services.UntrustedPauseRecord):
        return Conflict(exc.message, code=exc.code)
    if isinstance(exc, services.ResourceConflict):
        return Conflict(exc.message)
    if isinstance(exc, services.ClusterUnavailable):
        return ClusterUnavailable(exc.message)
    if isinstance(exc, services.ClusterRefused):
        return ClusterRefused(exc.message)
    if isinstance(exc, db_utils.OperationalError | db_utils.InterfaceError):
        reason = (str(exc).strip().splitlines() or [""])[0][:300]
        log.error("the database is unavailable (%s: %s)", type(exc).__name__, reason)
        return DatabaseUnavailable()
    return exc


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """Return DRF's error response for ``exc``, with service errors mapped and a ``code``."""
    exc = _api_exception(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        # A bug, not a client error: logged with its traceback, answered in JSON like the rest.
        log.error("unhandled error in %s", context.get("view"), exc_info=exc)
        return Response(
            {"detail": "Internal server error; it has been logged.", "code": "server_error"},
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    if isinstance(exc, exceptions.APIException) and not isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        if isinstance(detail, exceptions.ErrorDetail):
            response.data = {"detail": str(detail), "code": detail.code}
    if isinstance(exc, ClusterUnavailable | DatabaseUnavailable):
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


@extend_schema(exclude=True)
class NotFoundView(APIView):
    """Answer any unknown path under the API with a JSON 404 instead of Django's HTML page.

    A DRF view so that, like every path under ``/api/``, it is 401 without credentials: what
    exists there is no business of the anonymous (docs/security.md#who-can-do-what).
    """

    # Authentication and throttles come from the REST_FRAMEWORK defaults.
    permission_classes = [IsAuthenticated]

    def _answer(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        path = request.path
        hint = "" if path.endswith("/") else " API paths end with a slash."
        raise exceptions.NotFound(f"No API endpoint at {path}.{hint}")

    get = post = put = patch = delete = head = options = _answer
