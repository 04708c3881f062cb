"""``testkit.waiting.wait_until``: what it returns, and what its failure says and when."""

from __future__ import annotations

import itertools

import pytest

from testkit.waiting import wait_until


def test_returns_the_first_truthy_value() -> None:
    values = iter([0, None, "", 7, 8])
    assert wait_until(lambda: next(values), timeout=5, interval=0) == 7


def test_a_callable_description_is_read_when_the_wait_gives_up_not_before() -> None:
    polls = itertools.count()
    described: list[int] = []

    def what() -> str:
        described.append(next(polls))
        return f"the log after {described[-1]} polls"

    def never() -> bool:
        next(polls)
        return False

    with pytest.raises(AssertionError, match=r"not within 0\.2 s: the log after \d+ polls"):
        wait_until(never, timeout=0.2, interval=0.01, what=what)
    # Called once, at the failure, after every poll: the log it reads is the final one.
    assert len(described) == 1
    assert described[0] >= 2


def test_a_plain_description_and_none_at_all() -> None:
    with pytest.raises(AssertionError, match="not within 0 s: the CRD is served"):
        wait_until(lambda: False, timeout=0, what="the CRD is served")
    with pytest.raises(AssertionError, match="not within 0 s: <function"):
        wait_until(lambda: False, timeout=0)
