"""Delay before the next attempt after a transient error (docs/operator.md, "requeue is not retry").

The reconciler calls ``next_delay`` when an attempt ends in a transient error; randomness is
passed in so tests need no patching.
"""

from __future__ import annotations

import random

# Jitter spreads the retries of many analyses hit by the same outage.
JITTER = 0.1
FIRST_DELAY_SECONDS = 5.0
MIN_CAP_SECONDS = 60.0


def next_delay(attempt: int, interval: float, rng: random.Random) -> float:
    """Return the seconds to wait before retry number ``attempt`` (1 for the first retry).

    The reconcile contract, as controller-runtime states it:

    - *Requeue after interval*: an evaluation that got answers from Prometheus (any verdict,
      also an invalid query) is looked at again ``interval`` seconds later. That is not a retry;
      it resets ``attempt`` to 0, so the next transient error starts from the first delay again.
    - *Transient error, then backoff*: Prometheus could not be asked (connection refused,
      timeout, HTTP 5xx, an unparseable body) or the Kubernetes API failed. Retry ``attempt``
      waits ``min(5 s, interval) * 2 ** (attempt - 1)``, capped at ``max(interval, 60 s)``, then
      moved by a random ±10% jitter that never goes above the cap.

    So during an outage the operator queries less often than at its healthy cadence once the
    delay exceeds ``interval`` (for intervals of 60 s and more, where the cap is the interval
    itself, about as often), yet notices the recovery within ``max(interval, 60 s)``.
    ``attempt`` below 1 counts as 1; ``interval`` must be positive.
    """
    if interval <= 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}.")
    first = min(FIRST_DELAY_SECONDS, interval)
    cap = max(interval, MIN_CAP_SECONDS)
    # Bound the exponent: beyond 2**64 the delay is far past any cap anyway.
    exponent = min(max(attempt, 1) - 1, 64)
    base = min(first * 2.0**exponent, cap)
    jittered = base * (1.0 + rng.uniform(-JITTER, JITTER))
    return min(jittered, cap)
