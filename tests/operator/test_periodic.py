"""The leader queues the resync and the pruning itself (sentinel_operator.periodic).

django-q2's scheduler is off, since its rows name any function to run; these are the periodic
jobs there are, queued by the leader at once when it leads and then every period, by nobody
else. The queue is a list here and the clock a counter: no broker, no patching.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from sentinel_operator import tasks
from sentinel_operator.periodic import JOBS, Periodic


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_leader_queues_each_job_at_once_then_every_period() -> None:
    queued: list[str] = []
    clock, leading = _Clock(), [True]
    periodic = Periodic(is_leader=lambda: leading[0], enqueue=queued.append, monotonic=clock)
    assert periodic.run_once() == [tasks.RESYNC_TASK, tasks.PRUNE_TASK]
    assert periodic.run_once() == []
    clock.now += tasks.RESYNC_MINUTES * 60
    assert periodic.run_once() == [tasks.RESYNC_TASK]
    clock.now += tasks.PRUNE_MINUTES * 60
    assert periodic.run_once() == [tasks.RESYNC_TASK, tasks.PRUNE_TASK]
    # A follower queues nothing; leading again, it starts afresh.
    leading[0] = False
    assert periodic.run_once() == []
    leading[0] = True
    assert periodic.run_once() == [tasks.RESYNC_TASK, tasks.PRUNE_TASK]
    assert len(queued) == 7


def test_a_job_the_broker_refused_is_queued_on_the_next_pass() -> None:
    answers = iter([ConnectionError("broker down"), None, None])

    def enqueue(task: str) -> None:
        answer = next(answers)
        if answer is not None:
            raise answer

    periodic = Periodic(is_leader=lambda: True, enqueue=enqueue, monotonic=_Clock())
    assert periodic.run_once() == [tasks.PRUNE_TASK]
    assert periodic.run_once() == [tasks.RESYNC_TASK]


@pytest.mark.parametrize(("task", "period"), JOBS)
def test_the_jobs_are_the_operators_own_functions(task: str, period: float) -> None:
    module, _, name = task.rpartition(".")
    assert module == tasks.__name__ and callable(getattr(tasks, name)) and period >= 300


def test_django_q2s_scheduler_is_off() -> None:
    assert settings.Q_CLUSTER["scheduler"] is False
    assert settings.Q_CLUSTER["save_limit"] == 0
