"""URL configuration: admin, REST API, the health endpoint and /metrics."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from notifications.api import notifications_view
from sentinel_site.limits import guarded_metrics


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", guarded_metrics, name="metrics"),
    path("admin/", admin.site.urls),
    # Ahead of the API's routes, which end in a catch-all 404.
    path(
        "api/v1/analyses/<str:namespace>/<str:name>/notifications/",
        notifications_view,
        name="analysis-notifications",
    ),
    path("api/v1/", include("analyses.api.urls")),
]
