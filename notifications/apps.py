"""The Django app of the notifications."""

from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A resume from the UI or the REST API announces itself through this signal, since
        # analyses may not import this app.
        from analyses.signals import resumed
        from notifications.store import on_resumed

        resumed.connect(on_resumed, dispatch_uid="notifications.resumed")
