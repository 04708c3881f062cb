"""``manage.py runoperator`` as a process: start-up errors, clean shutdown, leader handover."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentinel_cluster import kube
from testkit.clusters import Cluster, kubectl_apply
from testkit.devcluster import DevCluster
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, gauge_metric
from testkit.observe import condition
from testkit.operator import StartOperator
from testkit.paths import MANAGE, REPO_ROOT
from testkit.waiting import wait_until


def _run(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(MANAGE), "runoperator", "--metrics-port", "0", *args],
        env={**os.environ, **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _one_clear_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_an_unloadable_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {
        "KUBECONFIG": str(tmp_path / "no-such-kubeconfig"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    line = _one_clear_line(_run(env))
    assert "cannot load Kubernetes configuration" in line


def test_a_malformed_setting_is_one_line_and_exit_2(tmp_path: Path, devcluster: DevCluster) -> None:
    env = {
        "KUBECONFIG": str(devcluster.kubeconfig),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "SENTINEL_PROMETHEUS_URL": "prometheus:9090",
    }
    line = _one_clear_line(_run(env))
    assert "SENTINEL_PROMETHEUS_URL" in line


def test_an_unmigrated_database_is_one_line_and_exit_2(
    tmp_path: Path, devcluster: DevCluster
) -> None:
    env = {
        "KUBECONFIG": str(devcluster.kubeconfig),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
    }
    line = _one_clear_line(_run(env))
    assert "manage.py migrate" in line


@pytest.mark.server
def test_an_unreachable_api_server_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cluster = DevCluster(tmp_path / "gone")
    cluster.start()
    cluster.stop()  # its kubeconfig now names a port nobody listens on
    env = {
        "KUBECONFIG": str(cluster.kubeconfig),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    line = _one_clear_line(_run(env))
    assert "cannot reach the Kubernetes API server" in line


def test_sigterm_releases_the_lease_and_the_other_replica_takes_over(
    start_operator: StartOperator,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    fault_proxy: FaultProxy,
    namespace: str,
    case: str,
) -> None:
    first = start_operator(
        prometheus_url=fault_proxy.url, namespaces=[namespace], lease_duration=30.0
    )
    wait_until(lambda: first.metric("sentinel_leader") == 1.0, timeout=10, what="first leads")
    second = start_operator(
        prometheus_url=fault_proxy.url,
        namespaces=[namespace],
        lease_name=first.lease_name,
        lease_duration=30.0,
        database=first.database,
    )
    time.sleep(1.5)
    assert second.metric("sentinel_leader") == 0.0

    assert first.stop(signal.SIGTERM) == 0
    lease = kube_client.request("GET", kube.lease_path("default", first.lease_name))
    # Released (or already taken by the follower), never left to the old holder.
    assert lease["spec"].get("holderIdentity") in (None, "", second.identity)
    # Released, not expired: the follower takes over well within the 30 s lease duration.
    started = time.monotonic()
    wait_until(lambda: second.metric("sentinel_leader") == 1.0, timeout=10, what="second leads")
    print(f"leader handover after SIGTERM: {time.monotonic() - started:.2f} s")

    # The new leader watches and dispatches: an analysis gets its status.
    kubectl_apply(
        kube_cluster, analysis_manifest("ra", namespace, metrics=[gauge_metric(case, 1.0)])
    )
    resource = wait_until(
        lambda: (
            (r := kube_client.request("GET", kube.analysis_path(namespace, "ra"))).get("status")
            and r
        ),
        timeout=10,
        what="status from the new leader",
    )
    assert condition(resource, "Ready")["reason"] == "TargetNotFound"
    assert second.stop() == 0


# About the operator's own processes, not the cluster: devcluster is enough.
@pytest.mark.clusters("dev")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_workers_do_not_outlive_the_operator(
    start_operator: StartOperator, fault_proxy: FaultProxy, namespace: str, sig: int
) -> None:
    process = start_operator(prometheus_url=fault_proxy.url, namespaces=[namespace])
    children = _children(process.pid)
    assert len(children) >= 1  # the django-q2 sentinel
    process.stop(sig)
    wait_until(lambda: not any(_alive(pid) for pid in children), timeout=15, what="workers exited")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        path = Path(f"/proc/{current}/task/{current}/children")
        kids = [int(x) for x in path.read_text().split()] if path.exists() else []
        found.extend(kids)
        pending.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
