"""Due times keep their phase (docs/status.md#requeue-and-backoff): ``sentinel_core.requeue``.

Pure: no database. The burst over the real dispatcher and claims is
tests/operator/test_due_spread.py.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from sentinel_core import backoff, requeue

NOW = datetime(2026, 12, 6, 21, 0, 0, 123456, tzinfo=UTC)
UID = "0b9e3f4c-2d1a-4c67-9d0e-6f3b8a1c2e45"


def test_an_attempt_on_its_phase_is_due_one_interval_after_its_due_time() -> None:
    slot = requeue.next_slot(NOW, UID, 30.0)
    assert requeue.on_phase(slot, UID, 30.0)
    # However long it waited for a worker or took, within one interval.
    for waited, took in ((0.0, 0.1), (0.4, 0.2), (12.5, 3.0), (25.0, 5.0)):
        started = slot + timedelta(seconds=waited)
        now = started + timedelta(seconds=took)
        again = requeue.requeue_at(slot, started=started, now=now, interval=30.0, uid=UID)
        assert again == slot + timedelta(seconds=30)


@pytest.mark.parametrize("due_at", [None, NOW - timedelta(seconds=0.2)])
def test_an_attempt_on_time_keeps_its_due_time_on_the_phase_or_not(
    due_at: datetime | None,
) -> None:
    # NOW - 0.2 s stands for a creation, an edit or an "evaluate now": not on the phase.
    assert due_at is None or not requeue.on_phase(due_at, UID, 60.0)
    done = NOW + timedelta(seconds=0.3)
    again = requeue.requeue_at(due_at, started=NOW, now=done, interval=60.0, uid=UID)
    assert again == (due_at or NOW) + timedelta(seconds=60)
    assert not requeue.on_phase(again, UID, 60.0)


def test_an_attempt_off_its_phase_that_waited_for_a_backlog_goes_onto_its_phase() -> None:
    created = NOW
    assert not requeue.on_phase(created, UID, 60.0)
    # The 300th of a burst created at once, served at 77 a second.
    started = created + timedelta(seconds=3.9)
    now = started + timedelta(seconds=0.1)
    again = requeue.requeue_at(created, started=started, now=now, interval=60.0, uid=UID)
    assert requeue.on_phase(again, UID, 60.0)
    assert now + timedelta(seconds=60) <= again < now + timedelta(seconds=120)
    # ...and from then on it keeps it, even when it waits again.
    late = again + timedelta(seconds=20)
    after = requeue.requeue_at(
        again, started=late, now=late + timedelta(seconds=0.2), interval=60.0, uid=UID
    )
    assert after == again + timedelta(seconds=60)


def test_an_attempt_ending_later_than_an_interval_goes_back_to_its_phase_an_interval_on() -> None:
    slot = requeue.next_slot(NOW, UID, 30.0)
    started = slot + timedelta(seconds=0.5)
    now = slot + timedelta(seconds=30.001)  # a slow Prometheus
    again = requeue.requeue_at(slot, started=started, now=now, interval=30.0, uid=UID)
    assert requeue.on_phase(again, UID, 30.0)
    assert now + timedelta(seconds=30) <= again < now + timedelta(seconds=60)
    # The same off the phase: never due in the past.
    off = slot + timedelta(seconds=7)
    again = requeue.requeue_at(
        off, started=off, now=off + timedelta(seconds=31), interval=30.0, uid=UID
    )
    assert again >= off + timedelta(seconds=61)


def test_retries_bunched_by_an_outage_spread_out_when_they_meet_a_backlog() -> None:
    rng = random.Random(7)
    slot = requeue.next_slot(NOW, UID, 30.0)
    # An outage: three retries, each at a jittered delay after the attempt before.
    at = slot + timedelta(seconds=0.2)
    for attempt in (1, 2, 3):
        at += timedelta(seconds=backoff.next_delay(attempt, 30.0, rng))
        assert not requeue.on_phase(at, UID, 30.0)
    # The first answer after it, on time: the retry's due time is kept...
    done = at + timedelta(seconds=0.2)
    kept = requeue.requeue_at(at, started=at, now=done, interval=30.0, uid=UID)
    assert kept == at + timedelta(seconds=30)
    # ...and when it waited behind every other analysis's retry, back onto the phase.
    waited = at + timedelta(seconds=2)
    again = requeue.requeue_at(
        at, started=waited, now=waited + timedelta(seconds=0.2), interval=30.0, uid=UID
    )
    assert (again - slot) % timedelta(seconds=30) == timedelta(0)


def test_phases_are_the_same_everywhere_and_spread_over_the_interval() -> None:
    uids = [str(uuid.UUID(int=random.Random(n).getrandbits(128))) for n in range(2000)]
    offsets = [requeue.phase(uid, 10.0) / timedelta(seconds=10) for uid in uids]
    assert offsets == [requeue.phase(uid, 10.0) / timedelta(seconds=10) for uid in list(uids)]
    buckets = [0] * 10
    for offset in offsets:
        assert 0 <= offset < 1
        buckets[int(offset * 10)] += 1
    # 200 expected in each; 4 standard deviations either side.
    assert all(145 <= count <= 255 for count in buckets), buckets


def test_an_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        requeue.requeue_at(None, started=NOW, now=NOW, interval=0.0, uid=UID)
