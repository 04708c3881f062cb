"""URL configuration: admin, REST API, the health endpoint and /metrics."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from sentinel_operator.metrics import metrics_view


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("analyses.api.urls")),
]
