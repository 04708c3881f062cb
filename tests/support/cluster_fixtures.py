"""Pytest fixtures for the session's clusters: devcluster and the real control plane.

Registered for the whole suite by the root ``tests/conftest.py``; each is a thin wrapper over
``testkit``. The Kubernetes-facing suites take ``kube_cluster``, ONE fixture parametrized over
both launchers (ids ``dev`` and ``real``, docs/testkit.md): a test that asks for it, directly or
through ``kube_client``, ``namespace``, ``start_operator``, ... runs once on each cluster.

- ``devcluster`` and ``realcluster`` are one cluster of each kind per session, started lazily
  (the first test that needs one starts it), with the CRD applied by kubectl. Tests share them
  and isolate themselves by namespace and labels.
- A test that uses a devcluster-only fault hook (``api_faults``, or ``devcluster`` itself)
  runs on ``dev`` only: it is simply not parametrized over ``real``. ``@pytest.mark.clusters
  ("dev")`` restricts a test the same way where the reason is not visible in its fixtures.
- ``restartable_cluster`` is a cluster a test may stop and start again (the API server down
  and back): the session realcluster itself (it keeps its objects, keys and tokens in a data
  dir, and comes back on the same port), or a devcluster of the test's own with a data dir (the
  session devcluster is in memory, so stopping it would take every other test's objects with it).
- ``new_cluster`` starts an empty cluster of the parameter's kind for tests that need a fresh
  one (``kubectl apply`` printing ``created``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, NewCluster, apply_crd, running_with_crd, wait_crd_served
from testkit.clusters import kube_client as admin_kube_client
from testkit.devcluster import DevCluster
from testkit.namespaces import fresh_namespace
from testkit.realcluster import RealCluster

CLUSTER_KINDS = ("dev", "real")
# Fixtures that exist on devcluster only (fault hooks) or name it: a test using one is not
# parametrized over the real cluster.
DEV_ONLY_FIXTURES = frozenset({"devcluster", "api_faults"})
KIND_MARKERS = {"dev": pytest.mark.devcluster, "real": pytest.mark.realcluster}
# The Prometheus flavour of each kind's tests (the ``prometheus`` fixture's parameter).
PROMETHEUS_OF_KIND = {"dev": "debian", "real": "built"}
# The session realcluster's kwok nodes: as many as the largest pod story needs (a DaemonSet on
# four nodes, tests/realcluster/test_statefulset_daemonset.py), so that the stories share it
# (tests/support/pod_fixtures.py) instead of starting control planes of their own.
POD_NODES = 4


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that needs ``cluster_kind`` over the kinds it can run on."""
    if "cluster_kind" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("clusters")
    kinds = tuple(marker.args) if marker is not None else CLUSTER_KINDS
    if DEV_ONLY_FIXTURES & set(metafunc.fixturenames):
        if "dev" not in kinds:
            raise pytest.UsageError(f"{metafunc.definition.nodeid} needs devcluster's hooks")
        kinds = ("dev",)
    unknown = set(kinds) - set(CLUSTER_KINDS)
    if unknown:
        raise pytest.UsageError(f"unknown cluster kinds {sorted(unknown)}")
    # Each case carries its tier's marker (``devcluster`` / ``realcluster``, see
    # tests/support/tiers.py), so `-m realcluster` selects exactly the [real] cases. Session
    # scope: pytest groups the tests of one kind together, and each kind's cluster, client and
    # deploy/ state is made once.
    if "prometheus" in metafunc.fixturenames:
        # The [real] cases query the Prometheus 3.x the real tier is built with, the [dev]
        # cases Debian's 2.x (tests/support/fixtures.py): both majors answer the operator.
        flavoured = [
            pytest.param(kind, PROMETHEUS_OF_KIND[kind], id=kind, marks=KIND_MARKERS[kind])
            for kind in kinds
        ]
        metafunc.parametrize(
            ("cluster_kind", "prometheus"), flavoured, indirect=["prometheus"], scope="session"
        )
        return
    cases = [pytest.param(kind, id=kind, marks=KIND_MARKERS[kind]) for kind in kinds]
    metafunc.parametrize("cluster_kind", cases, scope="session")


@pytest.fixture(scope="session")
def cluster_kind(request: pytest.FixtureRequest) -> str:
    """The kind of cluster this test runs on: ``dev`` or ``real`` (set by parametrization)."""
    return str(request.param)


@pytest.fixture(scope="session")
def devcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """One in-memory devcluster for the session, with the CRD applied by kubectl."""
    with running_with_crd(DevCluster(tmp_path_factory.mktemp("devcluster"))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def realcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The session's real control plane (kube-apiserver, etcd, kube-controller-manager, and
    kube-scheduler with ``POD_NODES`` kwok nodes where the pod stories' pods run).

    It keeps its state in a data dir so that a test may stop and start it again (the API
    server down and back) without taking the other tests' namespaces or the CRD with it.
    """
    workdir = tmp_path_factory.mktemp("realcluster")
    cluster = RealCluster(workdir / "launcher", data_dir=workdir / "data", nodes=POD_NODES)
    with running_with_crd(cluster) as running:
        yield running


@pytest.fixture(scope="session")
def kube_cluster(cluster_kind: str, request: pytest.FixtureRequest) -> Cluster:
    """The session cluster of this test's kind; started on first use only."""
    cluster: Cluster = request.getfixturevalue(
        {"dev": "devcluster", "real": "realcluster"}[cluster_kind]
    )
    return cluster


@pytest.fixture(scope="session")
def kube_client(kube_cluster: Cluster) -> kube.KubeClient:
    """An admin ``KubeClient`` on the session cluster of this test's kind."""
    return admin_kube_client(kube_cluster)


@pytest.fixture
def namespace(kube_client: kube.KubeClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    with fresh_namespace(kube_client, "op") as name:
        yield name


@pytest.fixture
def own_namespace(kube_client: kube.KubeClient) -> Iterator[str]:
    """The same, for modules that override ``namespace`` (with the shared operator's pool)."""
    with fresh_namespace(kube_client, "op") as name:
        yield name


@pytest.fixture
def api_faults(devcluster: DevCluster) -> Iterator[DevCluster]:
    """The session devcluster, for ``inject_fault``; every fault is cleared after the test."""
    with devcluster.faults_cleared_after():
        yield devcluster


def _launcher(kind: str, workdir: Path, data_dir: Path | None) -> Cluster:
    if kind == "dev":
        return DevCluster(workdir, data_dir=data_dir)
    return RealCluster(workdir, data_dir=data_dir)


@pytest.fixture
def new_cluster(cluster_kind: str, tmp_path: Path) -> Iterator[NewCluster]:
    """Return ``make(name, crd=False)``: an empty running cluster of this kind, stopped after."""
    made: list[Cluster] = []

    def make(name: str, *, crd: bool = False) -> Cluster:
        cluster = _launcher(cluster_kind, tmp_path / name, None)
        made.append(cluster)
        cluster.start()
        if crd:
            apply_crd(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()


@pytest.fixture
def restartable_cluster(
    cluster_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    """A cluster with the CRD that this test may stop and start again, keeping its objects.

    On ``real`` it is the session's realcluster: the test restarts the real processes on the
    same port and data dir, and whatever state it leaves them in, they run again afterwards.
    """
    if cluster_kind == "dev":
        own = DevCluster(tmp_path / "cluster", data_dir=tmp_path / "cluster-data")
        with running_with_crd(own):
            yield own
        return
    # Looked up here, not as a parameter, so that dev runs never start the real cluster.
    cluster: RealCluster = request.getfixturevalue("realcluster")
    try:
        yield cluster
    finally:
        if cluster.pid is None:
            cluster.start()
        # Restarted, the server serves the CRD again before it republishes its OpenAPI; the
        # next test on this session cluster gets it as the session began: both answering.
        wait_crd_served(cluster)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Show what the command printed when a checked kubectl (or other) call fails."""
    report = yield
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, subprocess.CalledProcessError):
        report.sections.append(
            ("command output", f"stdout:\n{error.stdout}\nstderr:\n{error.stderr}")
        )
    return report
