"""Start the slow tests first, so that none of them is what the parallel run waits for at its end.

Registered for the whole suite by the root ``tests/conftest.py``; docs/testkit.md#parallel-runs
says why. A test marked ``slow`` (a minute or more alone on the quiet 2-core machine) is moved,
on every pytest-xdist worker alike, to where a worker takes it up first:

- ``--dist worksteal`` (``make test``) hands each worker one contiguous share of the collection
  and lets idle workers steal from the ends of the others' queues. A slow test near the end of
  a share starts only when its worker gets there, or when an idle worker steals it in the last
  minutes: the 3-minute soak then runs alone while the other workers have nothing left. So the
  slow tests are dealt out, a module's together and one module per share in turn, to the heads
  of the shares, computed as xdist computes them.
- Any other distribution (``load`` deals tests out in order) gets the slow tests at the front.

Without xdist (``-n 0``, one file run by hand) the order is left alone. The tests themselves do
not change: the order within the other tests is kept, and no test is added or dropped.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

# The key under which each worker learns the run's ``--dist`` (xdist sets its own to "no").
_DIST = "sentinel_dist"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each xdist worker how the controller distributes the tests (on the controller)."""
    node.workerinput[_DIST] = node.config.getoption("dist")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the slow ones first, at the head of each worker's share."""
    workerinput = getattr(config, "workerinput", {})
    workers = int(workerinput.get("workercount", 0))
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if workers < 2 or not slow:
        return
    chosen = {id(item) for item in slow}
    rest = [item for item in items if id(item) not in chosen]
    if workerinput.get(_DIST) != "worksteal":
        items[:] = [*slow, *rest]
        return
    # A module's slow tests stay together, so that its module-scoped servers start once.
    modules: dict[str, list[pytest.Item]] = {}
    for item in slow:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for index, group in enumerate(modules.values()):
        shares[index % workers].extend(group)
    remaining = iter(rest)
    for share, size in zip(shares, share_sizes(len(items), workers), strict=True):
        share.extend(itertools.islice(remaining, max(0, size - len(share))))
    # A share with more slow tests than room (only with more slow tests than tests per worker)
    # leaves a few of the rest over: they go last.
    items[:] = [item for share in shares for item in share] + list(remaining)


def share_sizes(total: int, workers: int) -> list[int]:
    """Return how many tests each worker first gets under worksteal, in order.

    xdist's ``WorkStealingScheduling.check_schedule`` gives each idle worker in turn
    ``len(pending) // workers_remaining`` of the pending tests, all of them idle at the start.
    """
    sizes = []
    pending = total
    for remaining in range(workers, 0, -1):
        size = pending // remaining
        sizes.append(size)
        pending -= size
    return sizes
