"""The suite's tiers: markers applied from what a test uses, and a guard that keeps them true.

Registered for the whole suite by the root ``tests/conftest.py``; the markers are declared in
``pyproject.toml`` and the tiers described in ``docs/testkit.md``.

- ``server``: the test starts or uses a server (a cluster, Prometheus, an operator, PostgreSQL,
  Redis, Django's live server, a browser, the product's image under podman...). Applied here to
  every test whose fixtures include one of ``SERVER_FIXTURES``, and to every test of a tier
  below; a module that starts servers by itself says ``pytestmark = pytest.mark.server``.
  ``make check`` runs ``-m "not server"``.
- ``devcluster`` / ``realcluster``: the ``[dev]`` / ``[real]`` case of a test parametrized over
  ``cluster_kind`` (``tests/support/cluster_fixtures.py`` attaches them to the parameter), or a
  test that names the cluster fixture itself; a test that starts its own real control plane is
  marked ``realcluster`` in its module.
- ``browser`` (Chromium through Playwright) and ``soak`` (the chaos soak) are set in the modules.

The guard makes a wrong marker fail loudly instead of rotting: while a test that is not marked
``server`` runs, starting any ``ChildProcess`` or ``PostgresServer`` raises
``testkit.processes.TierViolation``, and while a test not marked ``realcluster`` runs, starting
the real control plane does (through ``FORBID_ENV``, which the test's children inherit). So
``make check`` cannot start a server and ``pytest -m "not realcluster"`` cannot start a
realcluster; and a test that would, fails in ``make test`` too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from testkit.processes import FORBID_ENV, REALCLUSTER, SERVERS

# Fixtures that start (or hand out) a server: a test using any of them is marked ``server``.
# The guard catches a server fixture missing here the first time a test starts it unmarked.
SERVER_FIXTURES = frozenset(
    {
        # clusters (tests/support/cluster_fixtures.py and the package conftests)
        "cluster_kind",
        "devcluster",
        "realcluster",
        "kube_cluster",
        "kube_client",
        "new_cluster",
        "restartable_cluster",
        "api_faults",
        "cluster",
        "persistent_cluster",
        "admin_api",
        "ui_cluster",
        "api_cluster",
        "deployed",
        "dev",
        "short_history",
        "namespaced",
        "real_cluster",
        "real_operator",
        # tests/api's autouse fixture points the web app at the session devcluster.
        "_web_app_uses_cluster",
        # Prometheus, the app it scrapes, the operator and its migrated database
        "metrics_app",
        "prometheus",
        "isolated_prometheus",
        "fault_proxy",
        "own_fault_proxy",
        "gauge",
        "basic_prometheus",
        "mtls_prometheus",
        "victoria",
        "vmauth",
        "migrated_database",
        "postgres",
        "redis_server",
        "start_operator",
        "operator",
        "shared_operator",
        # Django's server in a thread, notification receivers
        "live_server",
        "webhook",
        "smtp",
        # The product's image, built (a minute of podman) and run as Pods whose web container
        # serves HTTP (tests/deploy/test_image*.py): no part of the inner loop.
        "image",
        "web_pod",
    }
)
# Fixtures that start a real control plane of their own: a test using one is marked
# ``realcluster`` (and so ``server``).
REALCLUSTER_FIXTURES = frozenset({"realcluster", "real", "real_cluster"})
# Markers that imply ``server``.
SERVER_TIERS = ("devcluster", "realcluster", "browser", "soak")


def _marked(item: pytest.Item, name: str) -> bool:
    return item.get_closest_marker(name) is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with the tiers its fixtures put it in (before ``-m`` selects)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & REALCLUSTER_FIXTURES and not _marked(item, "realcluster"):
            item.add_marker(pytest.mark.realcluster)
        if "devcluster" in names and not _marked(item, "devcluster"):
            item.add_marker(pytest.mark.devcluster)
        if not _marked(item, "server") and (
            names & SERVER_FIXTURES or any(_marked(item, tier) for tier in SERVER_TIERS)
        ):
            item.add_marker(pytest.mark.server)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Forbid, while ``item`` runs (setup to teardown), what its markers say it never starts."""
    forbids = []
    if not _marked(item, "server"):
        forbids.append(SERVERS)
    if not _marked(item, "realcluster"):
        forbids.append(REALCLUSTER)
    before = os.environ.get(FORBID_ENV)
    os.environ[FORBID_ENV] = f"{','.join(forbids)};{item.nodeid}"
    try:
        return (yield)
    finally:
        if before is None:
            os.environ.pop(FORBID_ENV, None)
        else:
            os.environ[FORBID_ENV] = before
