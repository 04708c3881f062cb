"""Fixtures that point a test module at its one shared operator (``conftest.shared_operator``).

A module whose tests share an operator binds them under the names the tests ask for::

    namespace, operator, fault_proxy = shared.namespace, shared.operator, shared.fault_proxy

They override the suite's fixtures of those names for that module only (a conftest fixture
would override them for every operator test): ``namespace`` is one of the namespaces the shared
operator watches, ``operator`` its process and ``fault_proxy`` the proxy it asks. A test that
needs an operator of its own takes ``own_namespace`` and ``own_fault_proxy`` instead.
Used by ``test_sabotage_cluster``, ``test_sabotage_prometheus`` and ``test_sabotage_thresholds``.
"""

from __future__ import annotations

import pytest

from testkit.fault_proxy import FaultProxy
from testkit.operator import OperatorProcess, SharedOperator


@pytest.fixture(name="namespace")
def namespace(shared_namespace: str) -> str:
    return shared_namespace


@pytest.fixture(name="operator")
def operator(shared_operator: SharedOperator, shared_namespace: str) -> OperatorProcess:
    # shared_namespace too: the namespace is taken (and cleaned after) before the test runs.
    return shared_operator.process


@pytest.fixture(name="fault_proxy")
def fault_proxy(shared_operator: SharedOperator) -> FaultProxy:
    return shared_operator.proxy
