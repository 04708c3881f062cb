"""The django-q2 task that sends one delivery, and its retry schedule.

``pump.DeliveryPump`` queues ``deliver_task(pk)`` for each due ``Delivery``; the task tries once
and records the try. A failure is retried after ``retry_delay`` (exponential, capped, jittered)
by making the row due again; after ``max_attempts`` it is ``failed``, with the last error. So a
receiver that refuses, answers 500 or hangs costs one worker at most ``timeout`` per try, and
never touches a reconcile. Sending is at-least-once: a worker killed between the receiver's
answer and the row's update sends again when its claim runs out.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction

from notifications import channels
from notifications.config import NotifyConfig
from notifications.message import compose
from notifications.models import Delivery, DeliveryAttempt, State

log = logging.getLogger(__name__)

DELIVER_TASK = "notifications.tasks.deliver_task"
# Stop waiting for the database this long before the claim on the row runs out: after it,
# another task may take the row and send the message again.
_RECORD_MARGIN_SECONDS = 5.0


def retry_delay(attempts: int, conf: NotifyConfig, rng: random.Random) -> float:
    """Return the seconds before try ``attempts + 1``: doubling from the first, capped, ±10 %."""
    base = min(conf.first_retry_seconds * 2 ** max(0, attempts - 1), conf.max_retry_seconds)
    return base * rng.uniform(0.9, 1.1)


def deliver_task(pk: int, claim: str | None = None, rng: random.Random | None = None) -> str:
    """Try to send delivery ``pk`` once; return its state afterwards.

    ``claim`` is the ``next_attempt_at`` the pump set when it queued this task: the task takes
    the row only if it still holds it, so a duplicate task (queued again after its claim ran
    out) sends nothing.
    """
    conf: NotifyConfig = settings.SENTINEL_NOTIFY
    started = datetime.now(UTC)
    # Hold the row for as long as one try can take.
    hold = started + timedelta(seconds=2 * conf.timeout_seconds + 30)
    if claim is not None:
        taken = Delivery.objects.filter(
            pk=pk, state=State.PENDING, next_attempt_at=datetime.fromisoformat(claim)
        ).update(next_attempt_at=hold)
        if not taken:
            return "taken"
    delivery = Delivery.objects.select_related("analysis").filter(pk=pk).first()
    if delivery is None or delivery.state != State.PENDING:
        return "gone" if delivery is None else delivery.state
    channel = conf.channel(delivery.channel)
    mono = time.monotonic()
    if channel is None:
        result = channels.Sent(False, f"channel {delivery.channel!r} is no longer configured")
    else:
        message = compose(delivery, conf, now=started)
        result = channels.send(channel, message, timeout=conf.timeout_seconds)
    duration = time.monotonic() - mono
    attempts = delivery.attempts + 1
    done = datetime.now(UTC)
    update: dict[str, object] = {"attempts": attempts, "last_error": result.error}
    if result.ok:
        update.update(state=State.SENT, sent_at=done, next_attempt_at=None)
    elif attempts >= conf.max_attempts or channel is None:
        update.update(state=State.FAILED, next_attempt_at=None)
    else:
        delay = retry_delay(attempts, conf, rng or random.Random())
        update.update(next_attempt_at=done + timedelta(seconds=delay))

    def record() -> None:
        with transaction.atomic():
            DeliveryAttempt.objects.create(
                delivery=delivery,
                started_at=started,
                duration_seconds=duration,
                ok=result.ok,
                error=result.error,
            )
            Delivery.objects.filter(pk=pk, state=State.PENDING).update(**update)

    _record_within_claim(record, hold, f"delivery {pk}")
    state = str(update.get("state", State.PENDING))
    level = logging.INFO if result.ok else logging.WARNING
    log.log(
        level,
        "notification %s of %s/%s to %s: attempt %d %s%s",
        delivery.event,
        delivery.namespace,
        delivery.name,
        delivery.channel,
        attempts,
        "sent" if result.ok else "failed",
        "" if result.ok else f" ({result.error}); now {state}",
    )
    return state


def _record_within_claim(record: Callable[[], None], hold: datetime, what: str) -> None:
    """Run ``record``, waiting out a database restart for as long as the row is ours.

    A message the receiver took but whose try is not recorded is sent again by the next task
    once the claim runs out: the soak saw a PostgreSQL restart in the second after a send
    deliver a ``Resumed`` twice (docs/reliability.md). Only connection-level failures are
    retried; anything else raises at once.
    """
    delay = 0.5
    while True:
        try:
            record()
            return
        except (OperationalError, InterfaceError) as exc:
            left = (hold - datetime.now(UTC)).total_seconds() - _RECORD_MARGIN_SECONDS
            if left < delay:
                raise
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            log.warning(
                "notifications: database unavailable while recording %s (%s); retrying in %.1f s",
                what,
                reason,
                delay,
            )
            connection.close()  # a failed connection is unusable; the next try opens one
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
