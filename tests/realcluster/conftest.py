"""Fixtures for the tests whose pods run on realcluster's simulated nodes.

A module that uses them names its cluster and namespace with the fixtures ``pods_cluster`` and
``pods_namespace``; ``pods`` serves those pods' metrics at their IPs
(``testkit.pod_server.PodServer``) and ``pod_prometheus`` is the Prometheus 3.x built by
``make realcluster``, discovering them through the API server (docs/realcluster.md, "Pods on
simulated nodes").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.pod_server import Behaviour, PodServer
from testkit.prometheus import PrometheusServer, discovering_pods
from testkit.realcluster import RealCluster


@pytest.fixture
def pods(pods_cluster: RealCluster, pods_namespace: str) -> Iterator[PodServer]:
    """The pods' metrics endpoints; every pod healthy (0.1 s, no errors) unless told."""
    api = pods_cluster.api_client()
    try:
        with PodServer(api, pods_namespace, default=Behaviour(latency=0.1)) as server:
            yield server
    finally:
        api.close()


@pytest.fixture
def pod_prometheus(
    tmp_path: Path, pods_cluster: RealCluster, pods_namespace: str
) -> Iterator[PrometheusServer]:
    """The built Prometheus 3.x, discovering the pods of the test's namespace."""
    with discovering_pods(tmp_path / "prometheus", pods_cluster, [pods_namespace]) as server:
        yield server
