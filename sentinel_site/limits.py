"""Site-wide request limits and the web app's guarded ``/metrics`` (docs/security.md#abuse-limits).

``BodySizeLimitMiddleware`` answers 413 to any request announcing a body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` before anything reads it (Django itself would answer 400, and
only once the body is read); bodies without a length are capped by the API's parser.
``guarded_metrics`` serves the Prometheus text only to ``Authorization: Bearer
$SENTINEL_METRICS_TOKEN``, and is a plain 404 when no token is configured: the mirror gauges
name every analysis, which is not for anonymous eyes.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from sentinel_operator.metrics import metrics_view


class BodySizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return JsonResponse(
                {"detail": "The request body is larger than 1 MiB.", "code": "payload_too_large"},
                status=413,
            )
        return self.get_response(request)


def guarded_metrics(request: HttpRequest) -> HttpResponse:
    """Serve ``/metrics`` to the bearer of ``SENTINEL_METRICS_TOKEN``; 404 without a token."""
    token = getattr(settings, "SENTINEL_METRICS_TOKEN", "")
    if not token:
        raise Http404("/metrics is not served without SENTINEL_METRICS_TOKEN.")
    given = request.META.get("HTTP_AUTHORIZATION", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse("A bearer token is required.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return metrics_view(request)
