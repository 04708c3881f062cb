"""Pytest fixtures for the real metrics app, Prometheus and the fault proxy (``testkit``).

Registered for the whole suite by the root ``tests/conftest.py``. One Prometheus serves the
whole session, so tests share it safely by two rules:

- each test writes and queries only series labelled with its own ``case`` value;
- nobody stops the shared server: ``prometheus.stop()`` raises, and outage tests either put
  a ``fault_proxy`` in front of it or take an ``isolated_prometheus`` of their own.

Which Prometheus that is follows the test's tier: Debian's 2.x by default and for the
``[dev]`` cases, the 3.x built by ``make realcluster`` for the ``[real]`` cases
(``tests/support/cluster_fixtures.py`` sets the flavour with the cluster kind), so both
major versions answer the operator's queries (docs/realcluster.md). Each flavour is one server
per session, started on first use.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.prometheus import PROMETHEUS_BINARY, PrometheusServer
from testkit.prometheus import built_prometheus as built_prometheus_binary

# Scrapes run every second, but Prometheus only applies new targets on a 5 s tick.
FIRST_SCRAPE_TIMEOUT = 20.0

_case_numbers = itertools.count(1)


class SharedPrometheusServer(PrometheusServer):
    """The session's Prometheus: refuses stop() and restart() so no test takes it away."""

    def stop(self, timeout: float = 15.0) -> None:
        raise RuntimeError(
            "The session Prometheus is shared by every test; use the isolated_prometheus "
            "fixture to stop or restart one."
        )

    def restart(self, timeout: float = 30.0) -> None:
        self.stop()

    def shutdown(self) -> None:
        """Stop it for real at the end of the session."""
        self._terminate()


def start_scraping(
    workdir: Path,
    app: MetricsApp,
    server_class: type[PrometheusServer] = PrometheusServer,
    *,
    wait_for_scrape: bool = True,
    binary: str = PROMETHEUS_BINARY,
) -> PrometheusServer:
    """Start a Prometheus scraping ``app``; by default wait until its first scrape is visible.

    Prometheus applies new scrape targets on a 5 s tick, so the first scrape lands ~5-6 s
    after /-/ready: worth waiting for once per session, not in every isolated server.
    """
    server = server_class(workdir, [app.target], binary=binary)
    server.start()
    if wait_for_scrape:
        server.wait_for(
            f'up{{job="{server.job}"}}', lambda values: values == [1.0], FIRST_SCRAPE_TIMEOUT
        )
    return server


@pytest.fixture(scope="session")
def metrics_app() -> Iterator[MetricsApp]:
    """The session's metrics app, serving /metrics on a free port from a thread."""
    with MetricsApp() as app:
        yield app


# The session Prometheus of each flavour (see the module docstring).
PROMETHEUS_FLAVOURS = {"debian": "debian_prometheus", "built": "built_prometheus"}


@pytest.fixture(scope="session")
def prometheus(request: pytest.FixtureRequest) -> PrometheusServer:
    """The real Prometheus of this test's flavour, shared by the session, scraping
    ``metrics_app`` every second.

    The flavour is the fixture's parameter, which only the cluster kinds set
    (``tests/support/cluster_fixtures.py``); a parameter of its own, not a fixture it depends
    on, so that pytest sets it up again whenever the flavour changes between two tests.
    """
    flavour = getattr(request, "param", "debian")
    # Looked up by name: each flavour's server lives for the whole session, and a session of
    # plain and [dev] tests never starts the 3.x.
    server: PrometheusServer = request.getfixturevalue(PROMETHEUS_FLAVOURS[flavour])
    return server


def _shared_prometheus(
    tmp_path_factory: pytest.TempPathFactory, app: MetricsApp, binary: str
) -> Iterator[PrometheusServer]:
    server = start_scraping(
        tmp_path_factory.mktemp("prometheus"), app, SharedPrometheusServer, binary=binary
    )
    try:
        yield server
    finally:
        assert isinstance(server, SharedPrometheusServer)
        server.shutdown()


@pytest.fixture(scope="session")
def debian_prometheus(
    metrics_app: MetricsApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    """Debian's Prometheus 2.x for the session (``prometheus`` of plain and ``[dev]`` tests)."""
    yield from _shared_prometheus(tmp_path_factory, metrics_app, PROMETHEUS_BINARY)


@pytest.fixture(scope="session")
def built_prometheus(
    metrics_app: MetricsApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PrometheusServer]:
    """The Prometheus 3.x built by ``make realcluster`` (``prometheus`` of ``[real]`` tests)."""
    yield from _shared_prometheus(tmp_path_factory, metrics_app, built_prometheus_binary())


@pytest.fixture
def isolated_prometheus(metrics_app: MetricsApp, tmp_path: Path) -> Iterator[PrometheusServer]:
    """A Prometheus of this test's own, free to stop() and restart().

    It is ready to answer queries at once; scraped values appear ~5-6 s later, so a test
    that needs them calls ``wait_for``.
    """
    server = start_scraping(tmp_path / "prometheus", metrics_app, wait_for_scrape=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fault_proxy(prometheus: PrometheusServer) -> Iterator[FaultProxy]:
    """A fresh proxy in front of the session Prometheus, passing everything through."""
    with FaultProxy(prometheus.url) as proxy:
        yield proxy


@pytest.fixture
def case(request: pytest.FixtureRequest) -> str:
    """Return a label value unique to this test, safe inside a PromQL string literal."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name).strip("-")[:60]
    return f"{name}-{next(_case_numbers)}"


@pytest.fixture
def gauge(metrics_app: MetricsApp, prometheus: PrometheusServer, case: str) -> GaugeSetter:
    """Return a setter for this test's gauge (``gauge_metric(case, ...)`` queries it)."""
    return GaugeSetter(metrics_app, prometheus, case)
