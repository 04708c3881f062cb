"""URL configuration: admin, REST API, the health endpoint and /metrics."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from sentinel_site.limits import guarded_metrics


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", guarded_metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("analyses.api.urls")),
]
