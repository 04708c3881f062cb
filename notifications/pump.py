"""Queue the due deliveries on django-q2, as the dispatcher queues due analyses.

``sentinel_operator.runtime`` runs ``DeliveryPump.run`` in a thread on the leader. Every
``poll_interval`` it selects pending deliveries whose ``next_attempt_at`` has come, claims each
with a compare-and-set that moves ``next_attempt_at`` forward by ``CLAIM`` (so a second pass or
a second replica during a failover does not queue it twice, and a task lost with its worker or
its broker is queued again when the claim runs out; ``sentinel_db.claims``, shared with the
operator's dispatcher), and queues ``tasks.deliver_task`` with that claim, which the task must
still find on the row to send. Rows stored by an operator that was killed, or by the web app's
resume, are picked up the same way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from notifications.models import Delivery, State
from sentinel_db import claims

log = logging.getLogger(__name__)

# Enqueue(pk, claim): queue one try; ``claim`` is the next_attempt_at the pump set.
Enqueue = Callable[[int, datetime], None]
# How long a queued delivery waits for a worker before the pump queues it again. Short, because
# a restarted operator finds its predecessor's claims; a second task for the same row is
# harmless, since the task itself takes the row with a compare-and-set on the claim.
CLAIM = timedelta(seconds=15)
POLL_INTERVAL = 0.5
BATCH = 50


def enqueue_delivery(pk: int, claim: datetime) -> None:
    """Queue ``tasks.deliver_task`` on django-q2 (the default ``Enqueue``)."""
    from django_q.tasks import async_task

    from notifications.tasks import DELIVER_TASK

    async_task(
        DELIVER_TASK, pk, claim.isoformat(), task_name=f"notify {pk}", group="notify", save=False
    )


class DeliveryPump:
    """Poll for due deliveries, claim them and queue their task."""

    def __init__(
        self,
        *,
        now: Callable[[], datetime],
        is_leader: Callable[[], bool],
        enqueue: Enqueue = enqueue_delivery,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._now = now
        self._is_leader = is_leader
        self._enqueue = enqueue
        self.poll_interval = poll_interval
        self._due = claims.DueRead(
            lambda at: (
                Delivery.objects.filter(state=State.PENDING, next_attempt_at__lte=at)
                .order_by("next_attempt_at")
                .values_list("pk", "next_attempt_at")[:BATCH]
            )
        )

    def pump_due(self) -> int:
        """Claim and queue every delivery due now (one pass); return how many were queued."""
        now = self._now()
        due = self._due(now)
        if not due:
            return 0
        pending = Delivery.objects.filter(state=State.PENDING)
        return claims.queue_claimed(
            pending,
            "next_attempt_at",
            due,
            now + CLAIM,
            self._enqueue,
            log=log,
            refused="notifications: cannot queue delivery %s",
        )

    def _one_pass(self) -> bool:
        self.pump_due()
        # Never in a hurry: deliveries are few next to the poll interval.
        return False

    def run(self, stop: threading.Event) -> None:
        """Pump until ``stop`` is set, while this replica leads."""
        claims.poll(
            stop,
            is_leader=self._is_leader,
            one_pass=self._one_pass,
            interval=self.poll_interval,
            log=log,
            failed="notifications: pump pass failed",
        )
