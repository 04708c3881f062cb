"""Invariant 7's memory slope: a steady leak is a violation, a chart child seen once is not.

Pure, like ``test_invariants.py``. The case is the 12-minute soak of issue 39 (seed 4711): the
operator tree's RSS flat at 780 MB but for one sample of 1,044 MB, taken while two workers'
chart children (forked for a notification, gone a second later) were alive; least squares read
that as +7.8 MB/min. docs/reliability.md, invariant 7.
"""

from __future__ import annotations

from bench.soak_invariants import check_all
from bench.soak_processes import rss_slopes
from bench.soak_record import History, RssSample

T0 = 1_000_000.0
MINUTES = 12.0


def _history(rss_at: dict[float, float]) -> History:
    history = History("soak", started=T0, ended=T0 + MINUTES * 60)
    for at, mb in sorted(rss_at.items()):
        history.rss.append(
            RssSample(T0 + at, {"operator-0": mb}, {"operator-0": 200.0}, {"operator-0": 1})
        )
    return history


def _memory_violations(history: History) -> list[str]:
    (finding,) = [f for f in check_all(history) if f.number == 7]
    return [v for v in finding.violations if "RSS grows" in v]


def test_one_sample_with_short_lived_children_is_no_growth() -> None:
    samples = {float(at): 780.0 for at in range(0, 720, 10)}
    samples[670.0] = 1044.0
    history = _history(samples)
    assert abs(rss_slopes(history)["operator-0"]) < 0.5
    assert _memory_violations(history) == []


def test_a_steady_leak_is_a_violation() -> None:
    # 6 MB a minute, with the same short-lived spike on top.
    samples = {float(at): 780.0 + 6.0 * at / 60 for at in range(0, 720, 10)}
    samples[670.0] += 264.0
    history = _history(samples)
    assert 5.9 < rss_slopes(history)["operator-0"] < 6.1
    # "operators (all)" is the sum of the replicas: here operator-0 alone.
    assert _memory_violations(history) == [
        "operator-0: RSS grows 6.00 MB/min",
        "operators (all): RSS grows 6.00 MB/min",
    ]
