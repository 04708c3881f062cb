"""sentinel_core.backtest: a target's revisions as rollouts to replay, and rollbacks marked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sentinel_core.backtest import PastRevision, instants, past_rollouts

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_each_rollout_ends_where_the_next_begins_or_at_the_bound() -> None:
    revisions = [
        PastRevision("c", _at(200), (3,)),
        PastRevision("a", _at(0), (1,)),
        PastRevision("b", _at(20), (2,)),
    ]
    a, b, c = past_rollouts(revisions, now=_at(230), max_duration=3600)
    assert (a.key, a.started_at, a.ended_at) == ("a", _at(0), _at(20))
    # An hour at most, however long until the next.
    assert (b.key, b.ended_at, b.previous_key) == ("b", _at(80), "a")
    # The newest one is still going: it ends now.
    assert (c.ended_at, c.revision) == (_at(230), 3)
    assert not any(r.rolled_back for r in (a, b, c))
    assert [r.ended_by_next for r in (a, b, c)] == [True, False, False]
    # Every older revision, newest first: the old sides compare and sequential may find.
    assert [r.older_keys for r in (a, b, c)] == [(), ("a",), ("b", "a")]


def test_an_instant_in_the_next_revisions_creation_second_is_still_the_rollouts() -> None:
    # The API server keeps creation times to the second: the next revision created at
    # 10:20:00 may have been created at 10:20:00.9, after an evaluation at 10:20:00.
    (a, b) = past_rollouts(
        [PastRevision("a", _at(0), (1,)), PastRevision("b", _at(20), (2,))],
        now=_at(20) + timedelta(seconds=60),
    )
    assert instants(a, 600.0) == (_at(10), _at(20))
    # A bound's end (max duration, now) is exact: nothing at or after it.
    assert instants(b, 30.0) == (_at(20) + timedelta(seconds=30),)


def test_a_template_brought_back_marks_the_rollout_it_replaced() -> None:
    # a (1), b (2), then a person rolled back to a: a now holds 3, its history "1".
    revisions = [PastRevision("a", _at(0), (1, 3)), PastRevision("b", _at(20), (2,))]
    a, b = past_rollouts(revisions, now=_at(120))
    assert b.rolled_back and not a.rolled_back
    # The rollback is no rollout of its own: its moment is not recorded.
    assert [r.key for r in (a, b)] == ["a", "b"]


def test_the_newest_rollouts_up_to_the_limit() -> None:
    revisions = [PastRevision(f"r{i}", _at(10 * i), (i + 1,)) for i in range(8)]
    kept = past_rollouts(revisions, now=_at(100), limit=3)
    assert [r.key for r in kept] == ["r5", "r6", "r7"]
    assert past_rollouts(revisions, now=_at(100), limit=0) == ()
