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
    for late in (0.0, 0.4, 12.5, 30.0):
        now = slot + timedelta(seconds=late)
        assert requeue.requeue_at(slot, now=now, interval=30.0, uid=UID) == slot + timedelta(
            seconds=30
        )


def test_an_attempt_later_than_an_interval_goes_back_to_its_phase_an_interval_on() -> None:
    slot = requeue.next_slot(NOW, UID, 30.0)
    now = slot + timedelta(seconds=30.001)
    again = requeue.requeue_at(slot, now=now, interval=30.0, uid=UID)
    assert requeue.on_phase(again, UID, 30.0)
    assert now + timedelta(seconds=30) <= again < now + timedelta(seconds=60)


@pytest.mark.parametrize("due_at", [None, NOW - timedelta(seconds=0.2)])
def test_a_first_or_unknown_due_time_is_put_on_the_phase_between_one_and_two_intervals(
    due_at: datetime | None,
) -> None:
    # NOW - 0.2 s stands for a creation, an edit or an "evaluate now": not on the phase.
    assert due_at is None or not requeue.on_phase(due_at, UID, 60.0)
    again = requeue.requeue_at(due_at, now=NOW, interval=60.0, uid=UID)
    assert requeue.on_phase(again, UID, 60.0)
    assert NOW + timedelta(seconds=60) <= again < NOW + timedelta(seconds=120)
    # ...and from then on it keeps it.
    after = requeue.requeue_at(again, now=again + timedelta(seconds=0.3), interval=60.0, uid=UID)
    assert after == again + timedelta(seconds=60)


def test_the_phase_survives_backoff_and_its_jitter() -> None:
    rng = random.Random(7)
    slot = requeue.next_slot(NOW, UID, 30.0)
    # An outage: three retries, each at a jittered delay after the attempt before.
    at = slot + timedelta(seconds=0.2)
    for attempt in (1, 2, 3):
        at += timedelta(seconds=backoff.next_delay(attempt, 30.0, rng))
        assert not requeue.on_phase(at, UID, 30.0)
    # The first answer after it: the retry was due at ``at``, off the phase.
    again = requeue.requeue_at(at, now=at + timedelta(seconds=0.2), interval=30.0, uid=UID)
    assert requeue.on_phase(again, UID, 30.0)
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
        requeue.requeue_at(None, now=NOW, interval=0.0, uid=UID)
