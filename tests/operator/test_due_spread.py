"""A burst of new analyses spreads over the interval (docs/status.md#requeue-and-backoff).

3,500 analyses created at once (due at once, as the watch makes a new one) at 60 s, dispatched
by the real ``Dispatcher`` with its claims over the test database, on a simulated clock. The
workers are a queue served at 77 evaluations a second, the saturated rate of two operators on
two cores (docs/performance.md), so the first pass takes 45 s of the 60; each evaluation's
next due time is ``sentinel_core.requeue.requeue_at``'s, written by ``analyses.due.reschedule``,
as the reconciler's bookkeeping does. With a requeue at ``finished + interval`` the burst would
stay a 45 s clump at the saturated rate with a 15 s gap, minute after minute.
"""

from __future__ import annotations

import itertools
import uuid
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from analyses import due
from analyses.models import Analysis
from sentinel_core import requeue
from sentinel_operator.dispatcher import Dispatcher, Member

T0 = datetime(2026, 12, 6, 12, 0, 0, 250000, tzinfo=UTC)
ANALYSES = 3500
INTERVAL = 60.0
RATE = 77.0
POLL = timedelta(seconds=0.1)
SLACK = timedelta(seconds=2)


@pytest.mark.django_db
def test_a_burst_of_3500_new_analyses_spreads_over_the_interval_within_three() -> None:
    rows = []
    for index in range(ANALYSES):
        row = Analysis(
            namespace="burst",
            name=f"a{index}",
            uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"burst/a{index}")),
            created_at=T0,
            interval_seconds=INTERVAL,
            generation=1,
        )
        due.due_now(row, T0, revived=False)
        rows.append(row)
    Analysis.objects.bulk_create(rows)
    uids = {row.name: row.uid for row in rows}
    pks = dict(Analysis.objects.values_list("name", "pk"))

    clock = [T0]
    queued: deque[Member] = deque()

    def enqueue(members: Sequence[Member], claimed_until: datetime) -> None:
        queued.extend(members)

    dispatcher = Dispatcher(
        now=lambda: clock[0],
        is_leader=lambda: True,
        enqueue=enqueue,
        poll_interval=POLL.total_seconds(),
        ahead=0.5,
        workers=2,
        enqueue_in_transaction=False,
    )
    service = timedelta(seconds=1 / RATE)
    free = T0
    # (due time, start) of each evaluation, by analysis.
    runs: dict[str, list[tuple[datetime, datetime]]] = {name: [] for name in uids}
    # Three intervals, and long enough for the last due times of the third to be dispatched.
    third = T0 + timedelta(seconds=2 * INTERVAL)
    end = T0 + timedelta(seconds=3 * INTERVAL) + SLACK
    while clock[0] < end:
        while dispatcher.dispatch_due() >= dispatcher.batch:
            pass
        # The workers: in dispatch order, never before a member's due time, one at a time
        # at RATE, each finished before the clock moves past it.
        while queued:
            _, name, uid, due_at = queued[0]
            start = max(free, due_at)
            finished = start + service
            if finished > clock[0] + POLL:
                break
            queued.popleft()
            free = finished
            runs[name].append((due_at, start))
            again = requeue.requeue_at(
                due_at, started=start, now=finished, interval=INTERVAL, uid=uid
            )
            assert due.reschedule(pks[name], generation=1, due_at=again, backoff_attempt=0)
        clock[0] += POLL

    # In the third interval the due times are spread evenly over it: 350 expected in each 6 s;
    # a clump at 77/s would put 462 in some and none in others.
    buckets = [0] * 10
    lags = []
    for name, history in runs.items():
        in_third = [(due_at, start) for due_at, start in history if third <= due_at < end - SLACK]
        assert len(in_third) == 1, (name, history)
        due_at, start = in_third[0]
        buckets[int((due_at - third) / timedelta(seconds=INTERVAL / 10))] += 1
        lags.append((start - due_at).total_seconds())
    assert all(280 <= count <= 420 for count in buckets), buckets
    # ...each of its evaluations starting within 1 s of its due time...
    assert max(lags) <= 1.0, max(lags)
    # ...and after its second evaluation (the first on its phase) none was evaluated twice in
    # an interval nor skipped one, though most had waited for the 45 s first pass.
    for history in runs.values():
        assert len(history) >= 2, history
        gaps = [(b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(history[1:])]
        assert all(gap == INTERVAL for gap in gaps), history
