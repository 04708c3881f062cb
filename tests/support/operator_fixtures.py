"""Pytest fixtures for ``manage.py runoperator`` processes against the session's clusters.

Registered for the whole suite by the root ``tests/conftest.py``; thin wrappers over
``testkit.operator``. ``migrated_database`` migrates one SQLite file per session;
``start_operator`` starts operators on copies of it (several replicas, restarts, a
ServiceAccount kubeconfig through ``kubeconfig=``) against the test's ``kube_cluster`` and
stops them after the test; ``operator`` is one process watching the test's ``namespace``
through a fresh ``fault_proxy``; ``start_proxied`` starts such processes with the test's own
environment variables.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.clusters import Cluster
from testkit.fault_proxy import FaultProxy
from testkit.operator import (
    OperatorProcess,
    OperatorStarter,
    ProxiedStart,
    StartOperator,
    migrate_database,
)


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for every operator process (migrating once is enough)."""
    return migrate_database(tmp_path_factory.mktemp("operator-db") / "template.sqlite3")


@pytest.fixture
def start_operator(
    tmp_path: Path, kube_cluster: Cluster, migrated_database: Path
) -> Iterator[StartOperator]:
    """Return a factory starting ``runoperator`` processes; all are stopped after the test.

    Keyword arguments go to ``OperatorProcess`` (``prometheus_url`` is required);
    ``kubeconfig`` defaults to the admin of the test's session cluster, ``database`` to a fresh
    copy of the migrated template.
    """
    starter = OperatorStarter(tmp_path, migrated_database, kubeconfig=kube_cluster.kubeconfig)
    try:
        yield starter
    finally:
        starter.stop_all()


@pytest.fixture
def operator(
    start_operator: StartOperator, fault_proxy: FaultProxy, namespace: str
) -> OperatorProcess:
    """One ``runoperator`` watching ``namespace``, asking Prometheus through ``fault_proxy``."""
    return start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace])


@pytest.fixture
def start_proxied(
    start_operator: StartOperator, fault_proxy: FaultProxy, namespace: str
) -> ProxiedStart:
    """Start ``runoperator`` processes watching ``namespace`` through ``fault_proxy``."""
    return ProxiedStart(start_operator, fault_proxy, namespace)
