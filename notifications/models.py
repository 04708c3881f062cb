"""Delivery rows: one per message and channel, keyed so that a replay stores nothing new.

The reconciler (or the web side's resume) stores a ``Delivery`` before anything is sent; the
pump queues the due ones and ``tasks.deliver_task`` sends, recording each try as a
``DeliveryAttempt``. ``key`` is unique: the same transition decided twice (a 409, a restarted or
failed-over operator) finds its row already there.
"""

from __future__ import annotations

from django.db import models

from analyses.models import Analysis
from sentinel_core.notify import NotifyEvent


class State(models.TextChoices):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"


class Delivery(models.Model):
    """One message of one event to one channel."""

    # "<analysis uid>/<event>@<transition time>/<channel>" (sentinel_core.notify.Intent.key).
    key = models.CharField(max_length=255, unique=True)
    analysis = models.ForeignKey(
        Analysis, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    channel = models.CharField(max_length=63)
    event = models.CharField(max_length=32, choices=[(e.value, e.value) for e in NotifyEvent])
    message = models.TextField()
    # When the transition happened (the condition's lastTransitionTime).
    transition_at = models.DateTimeField()
    created_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # When the pump should queue it next; moved forward while a worker holds it (a claim).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # The last failure, without the channel's URL (channels.redact).
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["analysis", "-created_at", "-id"], name="delivery_newest"),
            models.Index(fields=["state", "next_attempt_at"], name="delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.namespace}/{self.name} → {self.channel}: {self.state}"


class DeliveryAttempt(models.Model):
    """One try at sending a delivery."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    started_at = models.DateTimeField()
    duration_seconds = models.FloatField(default=0.0)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["delivery", "started_at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} @ {self.started_at:%H:%M:%S}: {'ok' if self.ok else 'failed'}"
