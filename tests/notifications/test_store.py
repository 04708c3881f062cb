"""Delivery rows: stored once per intent and channel, routed by spec.notify and default, queued
once by the pump, taken once by the task; pruned with the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from analyses.models import Analysis, Evaluation
from notifications import store
from notifications.config import Channel, NotifyConfig
from notifications.models import Delivery, State
from notifications.pump import DeliveryPump
from notifications.tasks import deliver_task, retry_delay
from sentinel_core.conditions import ConditionStatus, ConditionType, ErrorReason, Reason
from sentinel_core.notify import Intent, NotifyEvent
from sentinel_core.status import AnalysisStatus, Condition
from testkit.webhook import refused_url
from tests.ui import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
PAUSED = Intent(NotifyEvent.PAUSED, "Paused@2026-12-02T10:00:00Z", "paused it", NOW)
FAILING = Intent(NotifyEvent.FAILING, "Failing@2026-12-02T09:59:00Z", "failing", NOW)


@pytest.fixture
def conf(settings: Any) -> NotifyConfig:
    settings.SENTINEL_NOTIFY = NotifyConfig(
        channels=(
            Channel("everyone", refused_url(), default=True),
            Channel("team", refused_url()),
            Channel("chatty", refused_url(), events=frozenset({NotifyEvent.FAILING})),
        ),
        path="notify.yaml",
        first_retry_seconds=10,
        max_retry_seconds=60,
    )
    return settings.SENTINEL_NOTIFY


def test_stored_once_per_intent_and_routed_channel(conf: NotifyConfig) -> None:
    row = factories.analysis("checkout")
    assert store.store(row, "uid-1", ["team"], [PAUSED, FAILING], now=NOW) == 1 + 1
    # The same decision again (a 409, a second replica, a restart): nothing new.
    assert store.store(row, "uid-1", ["team"], [PAUSED, FAILING], now=NOW) == 0
    keys = sorted(Delivery.objects.values_list("key", flat=True))
    assert keys == [
        "uid-1/Paused@2026-12-02T10:00:00Z/everyone",
        "uid-1/Paused@2026-12-02T10:00:00Z/team",
    ]
    # chatty takes Failing but is neither default nor named.
    assert store.store(row, "uid-1", ["chatty"], [FAILING], now=NOW) == 1
    assert Delivery.objects.filter(event="Failing").get().channel == "chatty"


def test_previous_attempt_is_looked_up_only_during_an_outage(conf: NotifyConfig) -> None:
    row = factories.analysis("checkout")
    factories.history(row, [0.1, 0.2])
    calm = AnalysisStatus()
    assert store.context_for(row.uid, calm).previous_attempt is None
    outage = AnalysisStatus(
        conditions=(
            Condition(
                ConditionType.READY, ConditionStatus.FALSE, Reason.METRICS_UNAVAILABLE, "", NOW
            ),
        )
    )
    newest = row.evaluations.order_by("-started_at").first()
    assert newest is not None
    context = store.context_for(row.uid, outage)
    assert context.previous_attempt == newest.started_at
    assert context.channels == {"everyone", "team", "chatty"}


def test_an_attempt_that_wrote_no_status_is_not_the_previous_attempt(conf: NotifyConfig) -> None:
    # Found by the soak (docs/reliability.md): an outage's attempt cut short by the API server
    # (KubernetesUnavailable: no status written, nothing stored) past the threshold made the
    # next attempt believe MetricsUnavailable had gone out: Recovered without it, or no
    # MetricsUnavailable at all.
    row = factories.analysis("checkout")
    factories.history(row, [0.1, 0.2])
    decided = row.evaluations.order_by("-started_at").first()
    assert decided is not None
    Evaluation.objects.create(
        analysis=row,
        started_at=decided.started_at + timedelta(seconds=30),
        finished_at=decided.started_at + timedelta(seconds=31),
        generation=decided.generation,
        outcome="Error",
        failures_after=decided.failures_after,
        error_reason=ErrorReason.KUBERNETES_UNAVAILABLE.value,
    )
    outage = AnalysisStatus(
        conditions=(
            Condition(
                ConditionType.READY, ConditionStatus.FALSE, Reason.METRICS_UNAVAILABLE, "", NOW
            ),
        )
    )
    assert store.context_for(row.uid, outage).previous_attempt == decided.started_at


def test_pump_queues_once_and_a_stale_task_sends_nothing(conf: NotifyConfig) -> None:
    row: Analysis = factories.analysis("checkout")
    store.store(row, "uid-1", [], [PAUSED], now=NOW)
    queued: list[tuple[int, datetime]] = []
    pump = DeliveryPump(
        now=lambda: NOW + timedelta(seconds=1),
        is_leader=lambda: True,
        enqueue=lambda pk, claim: queued.append((pk, claim)),
    )
    assert pump.pump_due() == 1
    assert pump.pump_due() == 0  # claimed: not queued again
    [(pk, claim)] = queued
    # A task holding an older claim (queued before a restart) does not take the row.
    assert deliver_task(pk, (claim - timedelta(seconds=5)).isoformat()) == "taken"
    # The current one does: refused, so it is pending again, due after the first backoff.
    assert deliver_task(pk, claim.isoformat()) == State.PENDING
    delivery = Delivery.objects.get(pk=pk)
    assert delivery.attempts == 1 and delivery.tries.count() == 1
    assert delivery.last_error and "json://" not in delivery.last_error
    assert delivery.next_attempt_at is not None
    wait = (delivery.next_attempt_at - datetime.now(UTC)).total_seconds()
    assert 8 < wait <= 11


def test_retry_delay_doubles_and_is_capped(conf: NotifyConfig) -> None:
    class Middle:
        def uniform(self, a: float, b: float) -> float:
            return (a + b) / 2

    delays = [retry_delay(n, conf, Middle()) for n in range(1, 7)]  # type: ignore[arg-type]
    assert delays == pytest.approx([10, 20, 40, 60, 60, 60])


def test_pruned_with_the_history(conf: NotifyConfig) -> None:
    row = factories.analysis("checkout")
    store.store(row, "uid-1", [], [PAUSED], now=NOW - timedelta(days=40))
    store.store(row, "uid-1", ["chatty"], [FAILING], now=NOW)
    assert store.prune(NOW - timedelta(days=30)) == 1
    assert list(Delivery.objects.values_list("event", flat=True)) == ["Failing"]
