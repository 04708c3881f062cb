"""Count failures: consecutive, or M of the last N decisive verdicts (``spec.failureWindow``).

``_decide.decide`` calls ``count`` once per evaluation
(docs/status.md#how-the-verdict-and-the-count-are-made). Without ``spec.failureWindow`` a Fail
adds one, a Pass resets to 0, anything else leaves it. With it, ``status.window`` keeps the last
``failureWindow`` decisive verdicts (Pass or Fail; Inconclusive and errors are skipped) and
``failures`` is the number of Fails among them.
"""

from __future__ import annotations

from typing import NamedTuple

from sentinel_core.conditions import Verdict


class Count(NamedTuple):
    failures: int
    # None without failureWindow: status.window is then absent.
    window: tuple[Verdict, ...] | None


def count(
    failure_window: int | None,
    failures: int,
    window: tuple[Verdict, ...] | None,
    verdict: Verdict | None,
    *,
    reset: bool,
) -> Count:
    """Return the failures and window after ``verdict`` (None: an error, nothing counted).

    ``failures`` and ``window`` are the previous status's; ``reset`` (a spec edit or a resume)
    starts both afresh before this verdict is counted.
    """
    if failure_window is None:
        failures = 0 if reset else failures
        if verdict == Verdict.FAIL:
            failures += 1
        elif verdict == Verdict.PASS:
            failures = 0
        return Count(failures, None)
    kept = () if reset or window is None else window
    if verdict in (Verdict.PASS, Verdict.FAIL):
        kept = (*kept, verdict)
    kept = kept[-failure_window:]
    return Count(sum(1 for v in kept if v == Verdict.FAIL), kept)


def describe(failure_window: int | None, failures: int, failure_limit: int) -> str:
    """Return "2 of 3 consecutive failed evaluations" or its windowed form, for messages."""
    if failure_window is None:
        return f"{failures} of {failure_limit} consecutive failed evaluations"
    return (
        f"{failures} of {failure_limit} failed evaluations among the last {failure_window} "
        "decisive ones"
    )
