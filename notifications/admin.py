"""The admin's view of notifications: every delivery, filterable, and the channels with a
"send test message" button each.

Deliveries are read-only (the operator writes them) and limited to the analyses the user may
see (``accounts.access.visible``). The channels page lists ``SENTINEL_NOTIFY_CONFIG``'s channels
by name, events and a redacted URL (never the URL: it holds tokens); sending a test message
needs the ``notifications.change_delivery`` permission and goes out at once, from the web
process, with the configured timeout.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from accounts import access
from analyses.models import Analysis
from analyses.numbers import number_html
from notifications import channels
from notifications.config import NotifyConfig
from notifications.models import Delivery, DeliveryAttempt


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fields = ["started_at", "duration", "ok", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "attempt"
    verbose_name_plural = "attempts"
    # The admin's tabular inline with a label on every cell (screen readers, issue 14).
    template = "admin/edit_inline/accessible_tabular.html"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="duration")
    def duration(self, attempt: DeliveryAttempt) -> str:
        # Readable, the exact seconds on hover (analyses.numbers).
        return format_html("{} s", number_html(attempt.duration_seconds))


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "namespace", "name", "channel", "state", "attempts"]
    list_filter = ["state", "event", "channel", "namespace"]
    search_fields = ["namespace", "name", "channel", "message"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "key",
        "analysis",
        "namespace",
        "name",
        "channel",
        "event",
        "message",
        "transition_at",
        "created_at",
        "state",
        "attempts",
        "next_attempt_at",
        "sent_at",
        "last_error",
    ]
    inlines = [AttemptInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Delivery]:
        seen = access.visible(request.user, Analysis.objects.all())
        return super().get_queryset(request).filter(analysis__in=seen)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "channels/",
                self.admin_site.admin_view(self.channels_view),
                name="notifications_channels",
            ),
            path(
                "channels/<str:channel>/test/",
                self.admin_site.admin_view(require_POST(self.test_view)),
                name="notifications_channel_test",
            ),
        ]
        return own + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        extra = {"channels_url": reverse("admin:notifications_channels"), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def channels_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        conf: NotifyConfig = settings.SENTINEL_NOTIFY
        context = {
            **self.admin_site.each_context(request),
            "title": "Notification channels",
            "config_path": conf.path,
            "channels": [
                {
                    "name": c.name,
                    "where": c.redacted,
                    "events": ", ".join(sorted(e.value for e in c.events)),
                    "default": c.default,
                }
                for c in conf.channels
            ],
            "can_test": request.user.has_perm("notifications.change_delivery"),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/notifications/channels.html", context)

    def test_view(self, request: HttpRequest, channel: str) -> HttpResponse:
        if not request.user.has_perm("notifications.change_delivery"):
            raise PermissionDenied
        conf: NotifyConfig = settings.SENTINEL_NOTIFY
        found = conf.channel(channel)
        back = HttpResponseRedirect(reverse("admin:notifications_channels"))
        if found is None:
            messages.error(request, f"No channel named {channel!r} is configured.")
            return back
        now = datetime.now(UTC)
        message = channels.Message(
            title="Rollout Sentinel: test message",
            body=(
                f"A test of channel {found.name}, sent by {request.user.get_username()} at "
                f"{now:%Y-%m-%d %H:%M:%S} UTC from {conf.public_url}."
            ),
            warning=False,
        )
        sent = channels.send(found, message, timeout=conf.timeout_seconds)
        if sent.ok:
            messages.success(request, f"Test message sent to {found.name}.")
        else:
            messages.error(request, f"Test message to {found.name} failed: {sent.error}")
        return back
