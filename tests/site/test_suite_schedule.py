"""tests/support/schedule.py: slow tests head every xdist worker's share, as xdist deals it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler.worksteal import WorkStealingScheduling

from tests.support.schedule import pytest_collection_modifyitems, share_sizes


class _Item:
    def __init__(self, name: str, slow: bool = False, module: str | None = None) -> None:
        self.name, self.slow = name, slow
        self.nodeid = f"tests/{module or name}.py::{name}"

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "slow" and self.slow else None

    def __repr__(self) -> str:
        return self.name


class _Worker:
    """What WorkStealingScheduling needs of a worker: an id, and where the tests it sends go."""

    def __init__(self, index: int) -> None:
        self.gateway = SimpleNamespace(id=f"gw{index}")
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        """Called when there is nothing left to steal (fewer tests than workers)."""


def _first_shares(total: int, workers: int) -> list[list[int]]:
    """Return the test indices xdist's own worksteal scheduler hands each worker at the start."""
    options = {"tx": ["popen"] * workers, "numprocesses": workers, "maxschedchunk": None}
    config = SimpleNamespace(getvalue=options.get, option=SimpleNamespace(**options))
    scheduler = WorkStealingScheduling(config)  # type: ignore[arg-type]
    nodes = [_Worker(index) for index in range(workers)]
    collection = [f"t{index}" for index in range(total)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
    for node in nodes:
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return [node.sent for node in nodes]


@pytest.mark.parametrize(("total", "workers"), [(2491, 4), (2491, 6), (7, 2), (3, 4)])
def test_share_sizes_are_the_ones_xdist_deals(total: int, workers: int) -> None:
    assert share_sizes(total, workers) == [len(s) for s in _first_shares(total, workers)]


def _reordered(items: list[_Item], workers: int, dist: str) -> list[_Item]:
    config: Any = SimpleNamespace(workerinput={"workercount": workers, "sentinel_dist": dist})
    reordered = list(items)
    pytest_collection_modifyitems(config, reordered)  # type: ignore[arg-type]
    return reordered


def test_under_worksteal_each_share_starts_with_a_slow_test_and_nothing_is_lost() -> None:
    items = [_Item(f"t{index}", slow=index in (5, 17, 18, 19)) for index in range(20)]
    reordered = _reordered(items, 4, "worksteal")
    assert sorted(reordered, key=items.index) == items
    shares = _first_shares(len(items), 4)
    assert [reordered[share[0]].slow for share in shares] == [True] * 4
    # The others keep their order.
    assert [item for item in reordered if not item.slow] == [i for i in items if not i.slow]


def test_a_modules_slow_tests_stay_together_on_one_worker() -> None:
    modules = {2: "a", 3: "a", 7: "b", 11: "c", 12: "c"}
    items = [
        _Item(f"t{index}", slow=index in modules, module=modules.get(index)) for index in range(30)
    ]
    reordered = _reordered(items, 2, "worksteal")
    shares = [[reordered[i].name for i in share] for share in _first_shares(len(items), 2)]
    assert shares[0][:4] == ["t2", "t3", "t11", "t12"]
    assert shares[1][:1] == ["t7"]


def test_other_distributions_get_the_slow_tests_first() -> None:
    items = [_Item(f"t{index}", slow=index in (3, 9)) for index in range(10)]
    assert [item.name for item in _reordered(items, 2, "load")[:2]] == ["t3", "t9"]


def test_without_workers_the_order_is_left_alone() -> None:
    items = [_Item(f"t{index}", slow=index == 3) for index in range(5)]
    config: Any = SimpleNamespace()
    reordered = list(items)
    pytest_collection_modifyitems(config, reordered)  # type: ignore[arg-type]
    assert reordered == items
